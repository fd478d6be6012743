"""Checkers for lesson 13, the KV-cache budget.

``check_sliding_window_mask`` (the windowed causal mask), ``check_sink_attention``
(a sink logit as one more term in Z), ``check_mla_absorption`` (folding MLA's
up-projections into the query and the output) and ``check_ring_buffer_step``
(one decoding step of a sliding-window cache kept in a ring buffer). Each runs
the learner's function on fresh seeded cases, compares it with
``helpers.attention_np`` or ``helpers.kv_cache`` and names the likely mistake as
a :class:`~helpers.checks._engine.Mistake`; see ``helpers.checks``.
"""

import math

import numpy as np

from helpers import attention_np as anp
from helpers import kv_cache
from helpers.checks import _engine as ck

__all__ = [
    "check_mla_absorption",
    "check_ring_buffer_step",
    "check_sink_attention",
    "check_sliding_window_mask",
]

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
# check_sink_attention (exercise 13.2)
# --------------------------------------------------------------------------

_SINK_IGNORED = ck.Mistake(
    symptom="your weights sum to exactly 1 in every row: the sink took no share",
    why="the sink is one more term in Z, exp(sink), with no value behind it, so "
    "the keys share only 1 - exp(sink) / Z",
    fix="Z = exp(scores - top).sum(axis=-1, keepdims=True) + exp(sink - top), "
    "with top the larger of the row max and the sink",
)
_SINK_NOT_EXPONENTIATED = ck.Mistake(
    symptom="your Z adds the sink logit itself",
    why="the sink is a logit like the scores: it enters Z as exp(sink), as every "
    "score enters as exp(score)",
    fix="add np.exp(sink - top) to Z, not sink",
)
_SINK_UNSCALED = ck.Mistake(
    symptom="your weights are those of unscaled scores Q K^T",
    why="the sink changes Z only; the scores keep their 1/sqrt(d_k)",
    fix="scores = Q @ K.swapaxes(-1, -2) / math.sqrt(d_k)",
)
_SINK_NO_MAX = ck.Mistake(
    symptom="with scores in the hundreds your weights are nan or inf",
    why="np.exp overflows above about 709; subtracting one number from every "
    "logit of a row, sink included, leaves the weights unchanged",
    fix="top = np.maximum(scores.max(axis=-1, keepdims=True), sink); exponentiate "
    "scores - top and sink - top",
)


def _sink_variant(Q, K, V, sink, *, ignored=False, raw=False, scale=True, stable=True):
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2)  # (..., n, m)
    if scale:
        scores = scores / math.sqrt(d_k)
    sink = np.asarray(sink, dtype=float)[..., None, None]  # (..., 1, 1)
    top = np.maximum(scores.max(axis=-1, keepdims=True), sink) if stable else 0.0
    top = scores.max(axis=-1, keepdims=True) if raw else top  # Z + sink, unshifted
    e = np.exp(scores - top)  # (..., n, m)
    extra = 0.0 if ignored else (sink if raw else np.exp(sink - top))
    weights = e / (e.sum(axis=-1, keepdims=True) + extra)
    return weights @ V, weights


def _sink_cases(rng):
    cases = []
    plan = [
        ((4, 6, 3, 5), 0.5, False, ""),
        ((1, 3, 4, 2), -1.0, False, "one query"),
        ((5, 5, 8, 3), 2.0, True, "scores in the hundreds"),
    ]
    for (n, m, d_k, d_v), sink, large, note in plan:
        scale = 40.0 if large else 1.0
        Q = rng.standard_normal((n, d_k)) * scale
        K = rng.standard_normal((m, d_k)) * scale
        V = rng.standard_normal((m, d_v))
        cases.append(
            ck.make_case(
                ("Q", "K", "V", "sink"),
                Q,
                K,
                V,
                float(sink),
                sizes={"n": n, "m": m, "d_k": d_k, "d_v": d_v},
                large=large,
                note=note,
            )
        )
    batch, heads, n, m, d_k, d_v = 2, 3, 4, 4, 6, 2
    Q = rng.standard_normal((batch, heads, n, d_k))
    K = rng.standard_normal((batch, heads, m, d_k))
    V = rng.standard_normal((batch, heads, m, d_v))
    sinks = np.array([-2.0, 0.5, 1.5])  # (num_heads,)
    cases.append(
        ck.make_case(
            ("Q", "K", "V", "sink"),
            Q,
            K,
            V,
            sinks,
            sizes={"batch": batch, "num_heads": heads, "d_k": d_k, "d_v": d_v},
            note="one sink per head",
        )
    )
    return cases


def check_sink_attention(fn, *, seed=0):
    """Check ``fn(Q, K, V, sink) -> (output, weights)`` against kv_cache.sink_attention.

    Cases: n != m, d_v != d_k, one query, large scores, batch and heads with one
    sink per head.
    """
    variants = [
        (_SINK_IGNORED, lambda *a: _sink_variant(*a, ignored=True)),
        (_SINK_NOT_EXPONENTIATED, lambda *a: _sink_variant(*a, raw=True)),
        (_SINK_UNSCALED, lambda *a: _sink_variant(*a, scale=False)),
        (_SINK_NO_MAX, lambda *a: _sink_variant(*a, stable=False)),
    ]
    return ck.run(
        "check_sink_attention",
        fn,
        _sink_cases(np.random.default_rng(seed)),
        kv_cache.sink_attention,
        (
            ck.Out("output", "(..., n, d_v)"),
            ck.Out(
                "weights",
                "(..., n, m)",
                "The sink gets no column of its own: drop it after the softmax.",
            ),
        ),
        variants,
        signature="my_sink_attention(Q, K, V, sink)",
        hint="scores are (..., n, m); a sink of shape (num_heads,) needs "
        "[..., None, None] to reach every query of its head",
    )


# --------------------------------------------------------------------------
# check_mla_absorption (exercise 13.3)
# --------------------------------------------------------------------------

_MLA_SWAPPED = ck.Mistake(
    symptom="your W_QK is built from W_UV and your W_VO from W_UK: each "
    "up-projection is folded on the wrong side",
    why="W_UK rebuilds the keys, which only meet the query (q . k = q W_UK_h^T . c); "
    "W_UV rebuilds the values, which only meet the output projection",
    fix="W_QK[h] = W_Q_h @ W_UK_h.T and W_VO[h] = W_UV_h @ W_O_h",
)
_MLA_QK_TRANSPOSED = ck.Mistake(
    symptom="your W_QK[h] is transposed: it maps the latent to d_model",
    why="W_QK[h] takes a token x (d_model) to a query over the latent c (d_c)",
    fix="W_QK[h] = W_Q_h @ W_UK_h.T, shape (d_model, d_c)",
)
_MLA_HEADS_MIXED = ck.Mistake(
    symptom="your W_QK is the same for every head: W_Q @ W_UK.T sums over the heads",
    why="head h's query meets only head h's key, so the fold is per head",
    fix="split W_Q and W_UK into heads first, (d_model, H, d_k) and (d_c, H, d_k), "
    "then W_QK[h] = W_Q_h @ W_UK_h.T",
)
_MLA_HEADS_INTERLEAVED = ck.Mistake(
    symptom="your {output} takes head h's columns as every H-th column",
    why="the course's heads are contiguous blocks: head h owns columns "
    "h d_k .. (h + 1) d_k - 1, as in split_heads",
    fix="reshape(d, H, d_k), not reshape(d, d_k, H)",
)
_MLA_VO_ROWS = ck.Mistake(
    symptom="your W_VO uses the wrong rows of W_O for head h",
    why="the heads' outputs are concatenated before W_O, so head h meets the rows "
    "h d_v .. (h + 1) d_v - 1 of W_O",
    fix="W_O.reshape(H, d_v, d_model)[h]",
)


def _mla_variant(
    W_Q,
    W_UK,
    W_UV,
    W_O,
    H,
    *,
    swap=False,
    mix=False,
    interleave=False,
    vo_rows=False,
    transpose=False,
):
    d_model, d_c = W_Q.shape[0], W_UK.shape[0]

    def split(W):  # (rows, H * d) -> (H, rows, d)
        if interleave:
            return W.reshape(W.shape[0], -1, H).transpose(2, 0, 1)
        return W.reshape(W.shape[0], H, -1).transpose(1, 0, 2)

    up_k, up_v = (W_UV, W_UK) if swap else (W_UK, W_UV)
    if mix:
        W_QK = np.broadcast_to(W_Q @ up_k.T, (H, d_model, d_c))
    else:
        W_QK = split(W_Q) @ np.swapaxes(split(up_k), -1, -2)
    if vo_rows or interleave:
        W_O_h = W_O.reshape(-1, H, W_O.shape[1]).transpose(1, 0, 2)
    else:
        W_O_h = W_O.reshape(H, -1, W_O.shape[1])
    W_VO = split(up_v) @ W_O_h
    if transpose:
        W_QK = np.swapaxes(W_QK, -1, -2)
    return W_QK, W_VO


def _mla_cases(rng):
    cases = []
    for d_model, H, d_k, d_v, d_c in [
        (6, 2, 3, 3, 6),
        (8, 2, 4, 3, 5),
        (10, 1, 4, 6, 3),
        (8, 4, 2, 2, 8),
    ]:
        W = kv_cache.mla_weights(
            d_model, H, d_k, d_v, d_c, seed=int(rng.integers(1000))
        )
        sizes = {"d_model": d_model, "num_heads": H, "d_c": d_c}
        cases.append(
            ck.make_case(
                ("W_Q", "W_UK", "W_UV", "W_O", "num_heads"),
                W["W_Q"],
                W["W_UK"],
                W["W_UV"],
                W["W_O"],
                H,
                sizes=sizes,
                facts={"output": "W_QK"},
            )
        )
    return cases


def check_mla_absorption(fn, *, seed=0):
    """Check ``fn(W_Q, W_UK, W_UV, W_O, num_heads) -> (W_QK, W_VO)``.

    W_QK (num_heads, d_model, d_c) and W_VO (num_heads, d_c, d_model), compared
    with ``kv_cache.absorb``; cases with d_k != d_v, one head, d_c == d_model.
    """

    def v(**options):
        return lambda *args: _mla_variant(*args, **options)

    variants = [
        (_MLA_SWAPPED, v(swap=True)),
        (_MLA_QK_TRANSPOSED, v(transpose=True)),
        (_MLA_HEADS_MIXED, v(mix=True)),
        (_MLA_HEADS_INTERLEAVED, v(interleave=True)),
        (_MLA_VO_ROWS, v(vo_rows=True)),
    ]
    return ck.run(
        "check_mla_absorption",
        fn,
        _mla_cases(np.random.default_rng(seed)),
        kv_cache.absorb,
        (
            ck.Out(
                "W_QK",
                "(num_heads, d_model, d_c)",
                "W_QK[h] maps a token to a query over the latent.",
            ),
            ck.Out(
                "W_VO",
                "(num_heads, d_c, d_model)",
                "W_VO[h] maps a weighted latent to the model's output.",
            ),
        ),
        variants,
        signature="absorb_mla(W_Q, W_UK, W_UV, W_O, num_heads)",
        hint="split each matrix into heads with reshape, as split_heads does",
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
