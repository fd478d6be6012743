"""Checkers for lesson 13's sliding window: its mask and a ring-buffer cache.

``check_sliding_window_mask`` (exercise 13.1, the windowed causal mask) and
``check_ring_buffer_step`` (exercise 13.4, one decoding step of a sliding-window
cache kept in a ring buffer). Each runs the learner's function on fresh seeded
cases, compares it with ``helpers.attention_np`` and names the likely mistake as
a :class:`~helpers.checks._engine.Mistake`; see ``helpers.checks``. An answer
that is, wraps or calls the course's own ``causal_mask`` (13.1) or
``ring_buffer_decode`` (13.4) is refused: it would pass by construction.
"""

import functools

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck

__all__ = ["check_ring_buffer_step", "check_sliding_window_mask"]


def refuse_reference(name, fn, references, mistake):
    """Fail with ``mistake`` when ``fn`` is, wraps or calls one of ``references``.

    ``references`` are the names of the course's own functions that would pass
    by construction (``causal_mask``, ``sink_attention``, ...); a learner's
    function, lambda or ``functools.partial`` that is one of them, or whose code
    calls one of them by name, is refused.
    """
    inner = fn
    while isinstance(inner, functools.partial) or hasattr(inner, "__wrapped__"):
        partial = isinstance(inner, functools.partial)
        inner = inner.func if partial else inner.__wrapped__
    called = set(getattr(getattr(inner, "__code__", None), "co_names", ()))
    module = getattr(inner, "__module__", "") or ""
    own = module.startswith("helpers.") and getattr(inner, "__name__", "") in references
    if own or called & set(references):
        raise ck.CheckFailed(name, mistake, "", ck.defined_at(fn))


# --------------------------------------------------------------------------
# check_sliding_window_mask (exercise 13.1)
# --------------------------------------------------------------------------

_RULE = "query i sees key j when 0 <= (i + m - n) - j < window"

_WINDOW_PLUS_ONE = ck.Mistake(
    symptom="with window={window} each of your rows lets a query see {plus} keys, "
    "one more than the window",
    why="a window of w counts the query's own position: itself and the w - 1 keys "
    "before it",
    fix=f"keep offset < window, not offset <= window: {_RULE}",
)
_WINDOW_MINUS_ONE = ck.Mistake(
    symptom="with window={window} your full rows let a query see {minus} keys, one "
    "fewer than the window",
    why="the window includes the query's own key: offset 0 (itself) up to "
    "offset window - 1",
    fix=f"keep offset < window, not offset < window - 1: {_RULE}",
)
_WINDOW_UPPER_LEFT = ck.Mistake(
    symptom="with n={n} queries and m={m} keys your window is aligned upper-left: "
    "your last query does not see the last key",
    why="the queries are the last n positions (a KV cache holds the m - n earlier "
    "keys), so query i sits at position i + (m - n)",
    fix=f"measure the offset from i + (m - n): {_RULE}",
)
_WINDOW_BOTH_SIDES = ck.Mistake(
    symptom="your mask lets a query see keys after its own position (a band on "
    "both sides of the diagonal)",
    why="sliding-window attention is still causal: the window only looks back",
    fix=f"require offset >= 0 as well as offset < window: {_RULE}",
)
_WINDOW_FLIPPED = ck.Mistake(
    symptom="your mask is True exactly where the reference is False",
    why="the course's masks mean True = may attend",
    fix="negate it with ~, or build the allowed pairs directly: " + _RULE,
)
_WINDOW_IGNORED = ck.Mistake(
    symptom="your mask is the plain causal mask: window={window} changes nothing",
    why="with a window a query forgets the keys more than window - 1 positions back",
    fix=f"add the condition offset < window: {_RULE}",
)
_WINDOW_FIRST_KEYS = ck.Mistake(
    symptom="your mask keeps the first {window} keys of the sequence, not the last "
    "{window} before each query",
    why="the window slides with the query: it is measured back from the query's "
    "own position",
    fix=f"compare the offset (i + m - n) - j with the window: {_RULE}",
)


_WINDOW_REFERENCE = ck.Mistake(
    symptom="your function is, or calls, the course's own causal_mask: it would "
    "pass by construction, and the exercise is to build the window yourself",
    why="the check compares with causal_mask(n, m, window=window), so handing it "
    "back proves nothing about the rule 0 <= offset < window",
    fix="compute each pair's offset (i + m - n) - j with np.arange and compare it "
    "with 0 and with the window; no call to causal_mask",
)


def _offset(n, m):
    return np.arange(n)[:, None] + (m - n) - np.arange(m)[None, :]  # (n, m)


def check_sliding_window_mask(fn, *, seed=0):
    """Check ``fn(n, m, window) -> mask``, boolean (n, m), True = may attend.

    Cases: n == m, n < m (a KV cache), n > m, window 1, a window longer than
    the keys. ``seed`` picks the order of the cases.
    """
    sizes = [(6, 6, 2), (3, 8, 3), (4, 9, 1), (7, 4, 2), (4, 6, 10), (8, 8, 3)]
    order = np.random.default_rng(seed).permutation(len(sizes))
    cases = []
    for index in order:
        n, m, window = sizes[index]
        facts = {"n": n, "m": m, "window": window, "plus": window + 1}
        facts["minus"] = window - 1
        cases.append(
            ck.make_case(
                ("n", "m", "window"),
                n,
                m,
                window,
                sizes={"n": n, "m": m} if n != m else {},
                facts=facts,
            )
        )

    refuse_reference(
        "check_sliding_window_mask", fn, ("causal_mask",), _WINDOW_REFERENCE
    )

    def band(n, m, w, shift=0):  # 0 <= offset - shift < w
        offset = _offset(n, m) - shift  # (n, m)
        return (offset >= 0) & (offset < w)

    variants = [
        (_WINDOW_FLIPPED, lambda n, m, w: ~band(n, m, w)),
        (_WINDOW_IGNORED, lambda n, m, w: anp.causal_mask(n, m)),
        (_WINDOW_PLUS_ONE, lambda n, m, w: band(n, m, w + 1)),
        (_WINDOW_MINUS_ONE, lambda n, m, w: band(n, m, w - 1)),
        (_WINDOW_UPPER_LEFT, lambda n, m, w: band(n, m, w, shift=m - n)),
        (_WINDOW_BOTH_SIDES, lambda n, m, w: np.abs(_offset(n, m)) < w),
        (_WINDOW_FIRST_KEYS, lambda n, m, w: band(n, m, m) & (np.arange(m) < w)),
    ]
    return ck.run(
        "check_sliding_window_mask",
        fn,
        cases,
        lambda n, m, window: anp.causal_mask(n, m, window=window),
        (ck.Out("mask", "(n, m)", "One row per query, one column per key.", True),),
        variants,
        signature="my_sliding_window_mask(n, m, window)",
    )


# --------------------------------------------------------------------------
# check_ring_buffer_step (exercise 13.4)
# --------------------------------------------------------------------------

_RING_EMPTY_SLOTS = ck.Mistake(
    symptom="at token t={t} (window {window}) your output also attends over buffer "
    "rows that no token has filled yet (they hold zeros)",
    why="until the buffer is full only rows 0 .. t hold tokens",
    fix="attend over K_buf[:min(t + 1, window)] and V_buf[:min(t + 1, window)]",
)
_RING_MISSES_ITSELF = ck.Mistake(
    symptom="at token t={t} (window {window}) your output leaves out token t "
    "itself: it attends over the tokens before it only",
    why="a query attends to its own key too (offset 0 is inside the window)",
    fix="write k and v into row t % window first, then attend",
)
_RING_RANGE = ck.Mistake(
    symptom="at token t={t} (window {window}) your output is attention over keys "
    "{first}..{last} ({count} keys); sliding-window attention sees keys "
    "{want_first}..{t} ({want_count} keys)",
    why="token t sees itself and the window - 1 tokens before it, as "
    "causal_mask(n, window=window) says",
    fix="write k and v into row t % window first, then attend over the "
    "min(t + 1, window) filled rows",
)
_RING_SLOT = ck.Mistake(
    symptom="after token t={t} row {slot} of your K_buf (or V_buf) does not hold "
    "that token's k (or v)",
    why="a ring buffer of the window overwrites the oldest token: token t goes to "
    "row t % window, the row of token t - window",
    fix="K_buf[t % window] = k and V_buf[t % window] = v, in place",
)
_RING_NOT_SWA = ck.Mistake(
    symptom="at token t={t} (window {window}) your output is not attention over "
    "any run of the keys so far",
    why="with the buffer written first, the query attends over exactly the "
    "filled rows, scaled by 1/sqrt(d_k)",
    fix="y = softmax(K_buf[:f] @ q / sqrt(d_k)) @ V_buf[:f], f = min(t + 1, window)",
)


_RING_REFERENCE = ck.Mistake(
    symptom="your step is, or calls, the course's own ring_buffer_decode: it "
    "would pass by construction, and the exercise is to write the step yourself",
    why="the check compares your step with the reference decoder, so handing it "
    "back proves nothing about your buffer writes or what you attend over",
    fix="write k and v into the buffers yourself, then attend with "
    "anp.scaled_dot_product_attention over the rows that hold tokens",
)


def _which_range(y, q, K, V, t):
    """The run of keys first..last whose attention gives y, or None."""
    if t == 0 and ck.same(y, np.zeros_like(y)):
        return {"first": 0, "last": -1, "count": 0}  # nothing seen, not even itself
    for last in (t, t - 1):
        for first in range(last + 1):
            ref, _ = anp.scaled_dot_product_attention(
                q[None], K[first : last + 1], V[first : last + 1]
            )
            if ck.same(y, ref[0]):
                return {"first": first, "last": last, "count": last - first + 1}
    return None


class _Step:
    """The learner's step with the buffers bound; named and located as it."""

    def __init__(self, fn, K_buf, V_buf):
        self.fn, self.K_buf, self.V_buf = fn, K_buf, V_buf
        self.__name__ = getattr(fn, "__name__", "your function")
        self.__code__ = getattr(fn, "__code__", None)

    def __call__(self, q, k, v, t):
        return self.fn(q, k, v, self.K_buf, self.V_buf, t)


def _ring_problem(fn, Q, K, V, window):
    """Run fn over one sequence: a message (and its facts), or None when right."""
    (n, d_k), d_v = Q.shape, V.shape[1]
    K_buf, V_buf = np.zeros((window, d_k)), np.zeros((window, d_v))
    step, out = _Step(fn, K_buf, V_buf), (ck.Out("y", f"(d_v,) = ({d_v},)"),)
    for t in range(n):
        case = ck.make_case(("q", "k", "v", "t"), Q[t], K[t], V[t], t)
        signature = "my_ring_buffer_step(q, k, v, K_buf, V_buf, t)"
        hint = "the buffers hold `window` rows: token t goes to row t % window"
        got = ck.to_arrays(ck.call(NAME, step, case, signature, hint), out, fn)
        if isinstance(got, str):
            return got, {}
        if got[0].shape != (d_v,):
            return f"`y` has shape {got[0].shape}; it should be (d_v,) = ({d_v},)", {}
        first = max(0, t - window + 1)
        facts = {"t": t, "window": window, "slot": t % window, "want_first": first}
        facts["want_count"] = t - first + 1
        slot = t % window
        if not (
            np.array_equal(K_buf[slot], K[t]) and np.array_equal(V_buf[slot], V[t])
        ):
            return _RING_SLOT, facts
        want, _ = anp.scaled_dot_product_attention(
            Q[t : t + 1], K[first : t + 1], V[first : t + 1]
        )  # (1, d_v)
        if ck.same(got[0], want[0]):
            continue
        every_row, _ = anp.scaled_dot_product_attention(Q[t : t + 1], K_buf, V_buf)
        if t + 1 < window and ck.same(got[0], every_row[0]):
            return _RING_EMPTY_SLOTS, facts
        found = _which_range(got[0].astype(float), Q[t], K, V, t)
        if found is None:
            return _RING_NOT_SWA, facts
        if found["last"] == t - 1:
            return _RING_MISSES_ITSELF, facts
        return _RING_RANGE, facts | found
    return None


NAME = "check_ring_buffer_step"


def check_ring_buffer_step(fn, *, seed=0):
    """Check ``fn(q, k, v, K_buf, V_buf, t) -> y``: one step of a ring-buffer cache.

    Whole sequences are decoded from buffers of ``window`` rows of zeros;
    every output is compared with attention under ``causal_mask(n,
    window=window)``, and token t's k and v must sit in row t % window.
    """
    ck.require_function(NAME, fn)
    refuse_reference(NAME, fn, ("ring_buffer_decode",), _RING_REFERENCE)
    rng = np.random.default_rng(seed)
    plan = [(7, 3, 4, 2), (5, 1, 3, 3), (9, 4, 2, 5), (4, 6, 4, 3)]
    for number, (n, window, d_k, d_v) in enumerate(plan, 1):
        Q, K = rng.standard_normal((2, n, d_k))  # (n, d_k) each
        V = rng.standard_normal((n, d_v))  # (n, d_v)
        problem = _ring_problem(fn, Q, K, V, window)
        if problem is not None:
            label = f"case {number} of {len(plan)}: {n} tokens, window={window}"
            label += f", d_k={d_k}, d_v={d_v}"
            message = ck.fill(problem[0], problem[1])
            raise ck.CheckFailed(NAME, message, label, ck.defined_at(fn))
    print(f"✓ {NAME}: {len(plan)} sequences decoded token for token")
    return True
