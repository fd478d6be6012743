"""Checkers for lesson 13's sliding window: its mask and a ring-buffer cache.

``check_sliding_window_mask`` (exercise 13.1, the windowed causal mask with
StreamingLLM's sink keys) and
``check_ring_buffer_step`` (exercise 13.4, one decoding step of a sliding-window
cache kept in a ring buffer). Each runs the learner's function on fresh seeded
cases, compares it with ``helpers.attention_np`` and names the likely mistake as
a :class:`~helpers.checks._engine.Mistake`; see ``helpers.checks``. An answer
that is, wraps or calls the course's own ``causal_mask`` (13.1) or
``ring_buffer_decode`` (13.4) is refused: it would pass by construction.
"""

import functools
import math
import warnings

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.i18n import _

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
_SINKS = "and also when j < num_sinks and j <= i + m - n"

_WINDOW_PLUS_ONE = ck.Mistake(
    symptom="with window={window} your window lets a query see {plus} recent keys, "
    "one more than the window",
    why="a window of w counts the query's own position: itself and the w - 1 keys "
    "before it",
    fix=f"keep offset < window, not offset <= window: {_RULE}",
)
_WINDOW_MINUS_ONE = ck.Mistake(
    symptom="with window={window} your window lets a query see {minus} recent keys, "
    "one fewer than the window",
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
_SINKS_DROPPED = ck.Mistake(
    symptom="with num_sinks={num_sinks} your mask is the plain sliding window: no "
    "query keeps the first {num_sinks} keys once they leave its window",
    why="StreamingLLM keeps the first tokens of the sequence beside the window, "
    "for every query, because trained models park their spare weight there",
    fix=f"{_RULE}, {_SINKS}",
)
_SINKS_FUTURE = ck.Mistake(
    symptom="with num_sinks={num_sinks} your mask lets query {future_query} "
    "({future_where}) see key {future_key}, a sink in its future",
    why="keeping the first tokens does not lift causality: a sink is a key like "
    "any other, and no query sees a key from its future",
    fix=f"{_RULE}, {_SINKS} (the sink is not in the query's future)",
)
_SINKS_PLUS_ONE = ck.Mistake(
    symptom="with num_sinks={num_sinks} your mask keeps the first {plus_sinks} keys "
    "as sinks, one more than num_sinks",
    why="keys are numbered from 0: the first num_sinks keys are 0 .. num_sinks - 1",
    fix=f"keep j < num_sinks, not j <= num_sinks: {_RULE}, {_SINKS}",
)
_SINKS_AND = ck.Mistake(
    symptom="with num_sinks={num_sinks} your mask keeps only the keys that are both "
    "in the window and among the first {num_sinks}: the sinks filter the window "
    "instead of joining it",
    why="a query sees its window and, beside it, the sinks: the two sets of keys "
    "are joined (or), not intersected (and)",
    fix=f"combine the two conditions with |, not &: {_RULE}, {_SINKS}",
)


_WINDOW_REFERENCE = ck.Mistake(
    symptom="your function is, or calls, the course's own causal_mask: it would "
    "pass the window part by construction, and the exercise is to build the "
    "window yourself",
    why="the window's rule, 0 <= offset < window, is half of what the check "
    "tests; handing causal_mask back proves nothing about it",
    fix="compute each pair's offset (i + m - n) - j with np.arange and compare it "
    "with 0 and with the window; no call to causal_mask",
)


def _offset(n, m):
    return np.arange(n)[:, None] + (m - n) - np.arange(m)[None, :]  # (n, m)


def _band(n, m, w, shift=0):
    """0 <= offset - shift < w: the window, measured ``shift`` positions off."""
    offset = _offset(n, m) - shift  # (n, m)
    return (offset >= 0) & (offset < w)


def _sinks(n, m, s, shift=0, causal=True, last=None):
    """The first ``s`` keys (``last``: up to key ``last``), never a future one."""
    key = np.arange(m)[None, :]  # (1, m)
    kept = key <= last if last is not None else key < s
    if not causal:
        return np.broadcast_to(kept, (n, m))
    return kept & (_offset(n, m) - shift >= 0)


def _streaming_mask(n, m, window, num_sinks):
    """The window of causal_mask(n, m, window) plus the first num_sinks keys.

    Boolean (n, m), True = may attend; a sink key is kept for every query
    that may see it causally. The checker's reference for exercise 13.1.
    """
    first = np.arange(m) < num_sinks  # (m,)
    return anp.causal_mask(n, m, window=window) | (anp.causal_mask(n, m) & first)


def _future_sink(n, m, s):
    """The first query that a sink kept for every query would show its future."""
    seen = (np.arange(m)[None, :] < s) & (_offset(n, m) < 0)  # (n, m)
    if not seen.any():
        return {"future_query": "?", "future_key": "?", "future_where": "?"}
    i, j = (int(x[0]) for x in np.nonzero(seen))
    if i + m - n < 0:
        where = _(
            "at position {position}, before the first key: there are {more} more "
            "queries than keys"
        ).format(position=i + m - n, more=n - m)
    else:
        where = _("at position {position}").format(position=i + m - n)
    return {"future_query": i, "future_key": j, "future_where": where}


def check_sliding_window_mask(fn, *, seed=0):
    """Check ``fn(n, m, window, num_sinks) -> mask``, boolean (n, m), True = may attend.

    The sliding window of ``causal_mask(n, m, window=window)`` plus the first
    ``num_sinks`` keys (StreamingLLM's sinks), still causal. Cases: n == m,
    n < m (a KV cache), n > m, window 1, a window longer than the keys, no
    sinks, one sink, more sinks than the window. ``seed`` picks their order.
    """
    sizes = [
        (6, 6, 2, 1),
        (3, 8, 3, 0),
        (4, 9, 1, 2),
        (7, 4, 2, 1),
        (4, 6, 10, 0),
        (10, 10, 2, 3),
        (5, 9, 2, 3),
    ]
    order = np.random.default_rng(seed).permutation(len(sizes))
    cases = []
    for index in order:
        n, m, window, num_sinks = sizes[index]
        facts = {"n": n, "m": m, "window": window, "plus": window + 1}
        facts |= {"minus": window - 1, "num_sinks": num_sinks}
        facts |= {"plus_sinks": num_sinks + 1} | _future_sink(n, m, num_sinks)
        cases.append(
            ck.make_case(
                ("n", "m", "window", "num_sinks"),
                n,
                m,
                window,
                num_sinks,
                sizes={"n": n, "m": m} if n != m else {},
                facts=facts,
            )
        )

    refuse_reference(
        "check_sliding_window_mask",
        fn,
        ("causal_mask",),
        _WINDOW_REFERENCE,
    )

    def windowed(window_part, shift=0):  # a wrong window, the right sinks
        return lambda n, m, w, s: window_part(n, m, w) | _sinks(n, m, s, shift)

    variants = [
        (_WINDOW_FLIPPED, lambda n, m, w, s: ~_streaming_mask(n, m, w, s)),
        (_WINDOW_IGNORED, lambda n, m, w, s: anp.causal_mask(n, m)),
        (_WINDOW_PLUS_ONE, windowed(lambda n, m, w: _band(n, m, w + 1))),
        (_WINDOW_MINUS_ONE, windowed(lambda n, m, w: _band(n, m, w - 1))),
        (
            _WINDOW_UPPER_LEFT,
            lambda n, m, w, s: _band(n, m, w, m - n) | _sinks(n, m, s, m - n),
        ),
        (_WINDOW_UPPER_LEFT, windowed(lambda n, m, w: _band(n, m, w, shift=m - n))),
        (_WINDOW_BOTH_SIDES, windowed(lambda n, m, w: np.abs(_offset(n, m)) < w)),
        (
            _WINDOW_FIRST_KEYS,
            windowed(lambda n, m, w: _band(n, m, m) & (np.arange(m) < w)),
        ),
        (_SINKS_DROPPED, lambda n, m, w, s: _band(n, m, w)),
        (
            _SINKS_FUTURE,
            lambda n, m, w, s: _band(n, m, w) | _sinks(n, m, s, causal=False),
        ),
        (_SINKS_PLUS_ONE, lambda n, m, w, s: _band(n, m, w) | _sinks(n, m, s, last=s)),
        (_SINKS_AND, lambda n, m, w, s: _band(n, m, w) & _sinks(n, m, s)),
    ]
    return ck.run(
        "check_sliding_window_mask",
        fn,
        cases,
        _streaming_mask,
        (ck.Out("mask", "(n, m)", "One row per query, one column per key.", True),),
        variants,
        signature="my_sliding_window_mask(n, m, window, num_sinks)",
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
_RING_BEFORE_WRITE = ck.Mistake(
    symptom="at token t={t} (window {window}) your output leaves out token t "
    "itself: your query attends over the buffer as it was before token t's k "
    "and v went in (once the buffer is full it still sees token t - {window}, "
    "the one token t overwrites)",
    why="a query attends to its own key too (offset 0 is inside the window), so "
    "the new token has to be in the buffer when its query attends",
    fix="write k and v into row t % window first, then attend",
)
_RING_SLICE_SHORT = ck.Mistake(
    symptom="at token t={t} (window {window}) your step writes token t's k and v "
    "into the buffer, but the rows you attend over stop before the row it "
    "went into: the query does not see itself{crash}",
    why="until the buffer has wrapped around, tokens 0 .. t sit in rows 0 .. t, "
    "which is t + 1 rows with the new token's own; once it is full, every row "
    "holds a token of the window",
    fix="attend over K_buf[:min(t + 1, window)] and V_buf[:min(t + 1, window)]",
    line=r"[KV]_buf\[\s*:",
)
_RING_MISSES_ITSELF = ck.Mistake(
    symptom="at token t={t} (window {window}) your output leaves out token t "
    "itself: it attends over the tokens before it only",
    why="a query attends to its own key too (offset 0 is inside the window)",
    fix="write k and v into row t % window first, then attend over the "
    "min(t + 1, window) rows that hold tokens",
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
_RING_NO_WRAP = ck.Mistake(
    symptom="at token t={t} your step writes to row {t} of buffers that have "
    "{window} rows, one past the last: the buffer never goes round to reuse a row",
    why="the buffers hold only the window: once tokens 0 .. window - 1 have filled "
    "them, each new token takes the row of the token that has just left the "
    "window, token t - window",
    fix="K_buf[t % window] = k and V_buf[t % window] = v",
    line=r"[KV]_buf\[\s*t\s*\]",
)
_RING_NOT_IN_PLACE = ck.Mistake(
    symptom="after token t={t} the caller's K_buf and V_buf are exactly as they were "
    "before your step: nothing was written into the buffers the caller passed",
    why="np.roll, np.concatenate or any K_buf = ... builds a new array and rebinds "
    "your local name only; the caller keeps the old buffers and hands them to "
    "the next step, so what your step wrote is lost",
    fix="write into the buffers themselves, by index: K_buf[t % window] = k and "
    "V_buf[t % window] = v",
    line=r"\b[KV]_buf\s*=[^=]",
)
_RING_SLOT = ck.Mistake(
    symptom="after token t={t} row {slot} of your K_buf (or V_buf) does not hold "
    "that token's k (or v)",
    why="a ring buffer of the window overwrites the oldest token: token t goes to "
    "row t % window, the row of token t - window",
    fix="K_buf[t % window] = k and V_buf[t % window] = v, in place",
)
_RING_UNSCALED = ck.Mistake(
    symptom="at token t={t} (window {window}) your output attends over the right "
    "keys, but its weights are those of unscaled scores q · k",
    why="the window changes which keys a query sees, not how they are scored: the "
    "scores keep their 1/sqrt(d_k), as in attention under causal_mask(n, "
    "window=window)",
    fix="divide the scores by math.sqrt(d_k): softmax(K_buf[:f] @ q / "
    "math.sqrt(d_k)) @ V_buf[:f], f = min(t + 1, window)",
    line=r"@|\bdot\(|einsum",
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


def _attention(q, K, V, scale=True):
    """One query over the keys K: (d_v,), scaled by 1/sqrt(d_k) unless not."""
    q = q if scale else q * math.sqrt(q.shape[-1])  # unscaled: q . k itself
    return anp.scaled_dot_product_attention(q[None], K, V)[0][0]


def _which_range(y, q, K, V, t):
    """The run of keys first..last whose attention gives y, or None."""
    if t == 0 and ck.same(y, np.zeros_like(y)):
        return {"first": 0, "last": -1, "count": 0}  # nothing seen, not even itself
    for last in (t, t - 1):
        for first in range(last + 1):
            if ck.same(y, _attention(q, K[first : last + 1], V[first : last + 1])):
                return {"first": first, "last": last, "count": last - first + 1}
    return None


def _left_out_how(fn, window, d_k, d_v):
    """Why a step leaves token t out: it attends before writing, or slices short.

    Decodes window + 1 fresh tokens with ``fn`` (a crash at one step does not
    stop the next) and reads the last output, when the buffer is full: a step
    that writes first and slices short is right there, one that attends before
    writing still sees token 0. None when it is neither.
    """
    rng = np.random.default_rng(1313)
    Q, K = rng.standard_normal((2, window + 1, d_k))  # (window + 1, d_k) each
    V = rng.standard_normal((window + 1, d_v))  # (window + 1, d_v)
    K_buf, V_buf = np.zeros((window, d_k)), np.zeros((window, d_v))
    y = None
    for t in range(window + 1):
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                y = np.asarray(fn(Q[t], K[t], V[t], K_buf, V_buf, t), dtype=float)
        except Exception:  # e.g. attention over no rows at t = 0
            y = None
    if y is None or y.shape != (d_v,):
        return None
    t = window
    if ck.same(y, _attention(Q[t], K[1 : t + 1], V[1 : t + 1])):
        return _RING_SLICE_SHORT
    if ck.same(y, _attention(Q[t], K[:t], V[:t])):
        return _RING_BEFORE_WRITE
    return None


class _Step:
    """The learner's step with the buffers bound; named and located as it."""

    def __init__(self, fn, K_buf, V_buf):
        self.fn, self.K_buf, self.V_buf = fn, K_buf, V_buf
        self.__name__ = getattr(fn, "__name__", "your function")
        self.__code__ = getattr(fn, "__code__", None)

    def __call__(self, q, k, v, t):
        return self.fn(q, k, v, self.K_buf, self.V_buf, t)


def _crashed(failed, fn, t, window, d_k, d_v):
    """A known mistake behind the learner's step raising at token t, or None."""
    err = failed.__cause__
    if err is None:  # a stub, or a message the engine wrote without a crash
        return None
    if isinstance(err, IndexError) and t >= window and f"index {t} " in str(err):
        return _RING_NO_WRAP, {}, ck.raised_at(err)
    if t < window:  # e.g. attention over an empty slice of the buffer at t = 0
        mistake = _left_out_how(fn, window, d_k, d_v)
        if mistake is _RING_SLICE_SHORT:
            crash = _(
                " (at t={t} that leaves no row at all, and attention raised)"
            ).format(t=t)
            return mistake, {"crash": crash}, ck.raised_at(err)
        if mistake is not None:
            return mistake, {}, ck.raised_at(err)
    return None


def _ring_problem(fn, Q, K, V, window):
    """Run fn over one sequence: (message, facts, where), or None when right."""
    (n, d_k), d_v = Q.shape, V.shape[1]
    K_buf, V_buf = np.zeros((window, d_k)), np.zeros((window, d_v))
    step, out = _Step(fn, K_buf, V_buf), (ck.Out("y", f"(d_v,) = ({d_v},)"),)
    signature = "my_ring_buffer_step(q, k, v, K_buf, V_buf, t)"
    hint = "K_buf and V_buf hold `window` rows each; q and k are (d_k,), v (d_v,)"
    for t in range(n):
        first = max(0, t - window + 1)
        facts = {"t": t, "window": window, "slot": t % window, "want_first": first}
        facts |= {"want_count": t - first + 1, "crash": ""}
        before = K_buf.copy(), V_buf.copy()
        case = ck.make_case(("q", "k", "v", "t"), Q[t], K[t], V[t], t)
        try:
            result = ck.call(NAME, step, case, signature, hint)
        except ck.CheckFailed as failed:
            known = _crashed(failed, fn, t, window, d_k, d_v)
            if known is None:
                raise
            mistake, more, where = known
            return mistake, facts | more, where
        got = ck.to_arrays(result, out, fn)
        if isinstance(got, str):
            return got, {}, None
        y = got[0]
        if y.shape != (d_v,):
            return f"`y` has shape {y.shape}; it should be (d_v,) = ({d_v},)", {}, None
        slot = t % window
        if not (
            np.array_equal(K_buf[slot], K[t]) and np.array_equal(V_buf[slot], V[t])
        ):
            untouched = np.array_equal(K_buf, before[0])
            if untouched and np.array_equal(V_buf, before[1]):
                return _RING_NOT_IN_PLACE, facts, None
            return _RING_SLOT, facts, None
        if ck.same(y, _attention(Q[t], K[first : t + 1], V[first : t + 1])):
            continue
        y = y.astype(float)
        if t + 1 < window and ck.same(y, _attention(Q[t], K_buf, V_buf)):
            return _RING_EMPTY_SLOTS, facts, None
        unscaled = _attention(Q[t], K[first : t + 1], V[first : t + 1], scale=False)
        if ck.same(y, unscaled):
            return _RING_UNSCALED, facts, None
        found = _which_range(y, Q[t], K, V, t)
        if found is None:
            return _RING_NOT_SWA, facts, None
        if found["last"] == t - 1:
            how = _left_out_how(fn, window, d_k, d_v) or _RING_MISSES_ITSELF
            return how, facts, None
        return _RING_RANGE, facts | found, None
    return None


NAME = "check_ring_buffer_step"


def check_ring_buffer_step(fn, *, seed=0):
    """Check ``fn(q, k, v, K_buf, V_buf, t) -> y``: one step of a ring-buffer cache.

    Whole sequences are decoded from buffers of ``window`` rows of zeros;
    every output is compared with attention under ``causal_mask(n,
    window=window)``, and token t's k and v must sit in row t % window of the
    caller's buffers.
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
            message, facts, where = problem
            tokens = _("{n} tokens, window={window}").format(n=n, window=window)
            label = _("case {number} of {count}: {label}").format(
                number=number, count=len(plan), label=tokens
            )
            label += f", d_k={d_k}, d_v={d_v}"
            message = ck.fill(message, facts)
            where = where or ck.look_at(fn, message)
            raise ck.CheckFailed(NAME, message, label, where)
    print(
        _("✓ {name}: {count} sequences decoded token for token").format(
            name=NAME, count=len(plan)
        )
    )
    return True
