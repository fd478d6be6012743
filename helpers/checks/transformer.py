"""Checkers for lesson 10's exercises: RoPE, grouped-query attention, a KV cache.

Each ``check_*`` runs the learner's NumPy function on seeded cases, compares it
with ``helpers.attention_np`` and names the likely mistake; see
``helpers.checks`` for the engine's conventions. NumPy only.
"""

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.i18n import _

__all__ = ["check_rope", "check_grouped_query_attention", "check_decode_step"]

# --------------------------------------------------------------------------
# check_rope (exercise 10.1)
# --------------------------------------------------------------------------


def _rope_variant(x, positions, *, halves=False, exponent=2.0, sign=1.0, base=10000.0):
    """RoPE with one of the usual slips: pairing, frequencies or direction."""
    n, d = x.shape
    freqs = base ** -(exponent * np.arange(d // 2) / d)  # (d/2,)
    angles = np.asarray(positions, dtype=np.float64)[:, None] * freqs  # (n, d/2)
    cos, sin = np.cos(angles), sign * np.sin(angles)
    if halves:
        a, b = x[:, : d // 2], x[:, d // 2 :]
        return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)
    a, b = x[:, 0::2], x[:, 1::2]
    out = np.empty_like(x)
    out[:, 0::2], out[:, 1::2] = a * cos - b * sin, a * sin + b * cos
    return out


_ROPE_MISTAKES = [
    (
        ck.Mistake(
            symptom="you paired coordinate i with i + d/2 (the GPT-NeoX / Hugging "
            "Face layout)",
            why="that is a valid RoPE too, but this exercise (and atn.rope) pairs "
            "neighbours: (x[0], x[1]), (x[2], x[3]), ...",
            fix="use x[:, 0::2] and x[:, 1::2]",
            line=r"d\s*//\s*2\s*[:\]]",
        ),
        lambda x, p: _rope_variant(x, p, halves=True),
    ),
    (
        ck.Mistake(
            symptom="your frequencies fall too slowly: you used the exponent i / d",
            why="pair i turns by position * base ** (-2i / d), with 2i / d running "
            "over 0, 2/d, 4/d, ...",
            fix="freqs = base ** (-2 * np.arange(d // 2) / d)",
            line=r"\*\*",
        ),
        lambda x, p: _rope_variant(x, p, exponent=1.0),
    ),
    (
        ck.Mistake(
            symptom="your frequencies grow with i",
            why="the exponent is negative, base ** (-2i / d), so the first pair "
            "turns fastest and the last one slowest",
            fix="freqs = base ** (-2 * np.arange(d // 2) / d)",
            line=r"\*\*",
        ),
        lambda x, p: _rope_variant(x, p, exponent=-2.0),
    ),
    (
        ck.Mistake(
            symptom="you rotate the wrong way: your signs of the sin terms are flipped",
            why="RoPE turns each pair counter-clockwise by its angle, as the "
            "rotation matrix [[cos, -sin], [sin, cos]] does",
            fix="a pair (a, b) becomes (a cos θ - b sin θ, a sin θ + b cos θ)",
            line=r"sin",
        ),
        lambda x, p: _rope_variant(x, p, sign=-1.0),
    ),
    (
        ck.Mistake(
            symptom="you ignored `positions` and rotated row r by the angle of "
            "position r",
            why="a cache or a shifted window gives rows whose positions are not "
            "0, 1, 2, ...",
            fix="use the positions you are given, e.g. positions[:, None] * freqs",
            line=r"arange\(\s*(n|len)",
        ),
        lambda x, p: _rope_variant(x, np.arange(len(x))),
    ),
    (
        ck.Mistake(
            symptom="your result equals the input: every position but 0 must turn",
            why="did you compute the rotation and then return x?",
            fix="return the rotated array, not x",
            line=r"return",
        ),
        lambda x, p: x,
    ),
]


def check_rope(fn, *, seed=0):
    """Check ``fn(x, positions) -> (n, d)``: x (n, d) rotated pairwise by RoPE."""
    rng = np.random.default_rng(seed)
    cases = [
        ck.make_case(("x", "positions"), rng.standard_normal((5, 8)), np.arange(5)),
        ck.make_case(
            ("x", "positions"),
            rng.standard_normal((3, 6)),
            np.array([0, 7, 2]),
            note="positions [0, 7, 2]",
        ),
        ck.make_case(
            ("x", "positions"),
            rng.standard_normal((4, 16)),
            np.arange(100, 104),
            note="positions 100-103",
        ),
    ]
    return ck.run(
        "check_rope",
        fn,
        cases,
        lambda x, positions: anp.rope(x, positions),
        (ck.Out("rotated", "(n, d)", "RoPE keeps the shape of x."),),
        _ROPE_MISTAKES,
        signature="my_rope(x, positions)",
        hint=ck.Mistake(
            symptom="x has shape (n, d): its even and its odd features are (n, d/2) "
            "each",
            fix="x[:, 0::2] and x[:, 1::2] are (n, d/2)",
        ),
        tol=(1e-5, 1e-6),  # angles in float32, as some reference code computes them
    )


# --------------------------------------------------------------------------
# check_grouped_query_attention (exercise 10.2)
# --------------------------------------------------------------------------


def _gqa(Q, K, V, *, tile=False):
    """Attention where query head h uses K/V head h // (H / G) (or h % G: tile)."""
    groups = Q.shape[1] // K.shape[1]
    if tile:
        K, V = np.tile(K, (1, groups, 1, 1)), np.tile(V, (1, groups, 1, 1))
    else:
        K, V = np.repeat(K, groups, axis=1), np.repeat(V, groups, axis=1)
    return anp.scaled_dot_product_attention(Q, K, V)[0]


_GQA_TILE = ck.Mistake(
    symptom="your query heads use the wrong K/V heads: head h uses head h % "
    "num_kv_heads (as np.tile gives)",
    why="query head h must use K/V head h // (num_heads // num_kv_heads): heads 0 "
    "and 1 share K/V head 0, heads 2 and 3 share head 1, ...",
    fix="np.repeat(K, groups, axis=1), which repeats each head in place",
    line=r"tile",
)


def check_grouped_query_attention(fn, *, seed=0):
    """Check ``fn(Q, K, V) -> output``: Q (batch, H, n, d_k), K/V with G heads."""
    rng = np.random.default_rng(seed)
    cases = []
    for batch, H, G, n, m, d_k, d_v in [
        (1, 4, 2, 3, 5, 4, 6),
        (2, 6, 3, 4, 4, 8, 3),
        (2, 4, 1, 2, 6, 4, 4),
        (1, 2, 2, 3, 3, 4, 5),
    ]:
        note = {1: "one K/V head (multi-query)", H: "as many K/V heads as query heads"}
        cases.append(
            ck.make_case(
                ("Q", "K", "V"),
                rng.standard_normal((batch, H, n, d_k)),
                rng.standard_normal((batch, G, m, d_k)),
                rng.standard_normal((batch, G, m, d_v)),
                sizes={"n": n, "m": m, "d_k": d_k, "d_v": d_v},
                note=note.get(G, ""),
            )
        )
    return ck.run(
        "check_grouped_query_attention",
        fn,
        cases,
        _gqa,
        (ck.Out("output", "(batch, num_heads, n, d_v)"),),
        [(_GQA_TILE, lambda Q, K, V: _gqa(Q, K, V, tile=True))],
        signature="my_grouped_query_attention(Q, K, V)",
        hint="repeat K and V along axis 1 until they have as many heads as Q",
    )


# --------------------------------------------------------------------------
# check_decode_step (exercise 10.3)
# --------------------------------------------------------------------------


def _cache_order(t, new, old, row):
    """None if ``new`` is ``old`` with ``row`` appended; else a Mistake or message."""
    new = np.asarray(new, dtype=np.float64)
    if new.shape != (t + 1, row.shape[0]):
        return None  # the row count is told apart; a wrong width fails the values
    if np.allclose(new[:t], old) and np.allclose(new[t], row):
        return None
    if np.allclose(new[1:], old) and np.allclose(new[0], row):
        return _PREPENDED.format(t=t)
    return _(
        "after step {t} your cache does not hold the earlier rows, "
        "in order, followed by the new token's row"
    ).format(t=t)


def _decode_all(step, Q, K, V):
    """Feed the rows of Q, K, V one at a time to ``step``; stack the outputs.

    Returns the stacked y (n, d_v), or what is wrong with a step's return value
    (a message or a Mistake): not three values, a cache with the wrong number of
    rows, or rows not in order (the new one last).
    """
    K_cache, V_cache = np.zeros((0, K.shape[1])), np.zeros((0, V.shape[1]))
    outputs = []
    for t in range(Q.shape[0]):
        result = step(Q[t], K[t], V[t], K_cache, V_cache)
        if not isinstance(result, tuple | list) or len(result) != 3:
            return _("must return the tuple (y, K_cache, V_cache)")
        y, K_new, V_new = result
        outputs.append(np.asarray(y, dtype=np.float64))
        if np.shape(K_new)[0] != t + 1:
            rows = np.shape(K_new)[0]
            return _(
                "after step {t} your K_cache holds {rows} rows, not {t_next}"
            ).format(t=t, rows=rows, t_next=t + 1)
        for new, old, row in ((K_new, K_cache, K[t]), (V_new, V_cache, V[t])):
            problem = _cache_order(t, new, old, row)
            if problem is not None:
                return problem
        K_cache, V_cache = K_new, V_new
    return np.stack(outputs)  # (n, d_v)


def _right_step(q, k, v, K_cache, V_cache):
    K_cache, V_cache = np.vstack([K_cache, k]), np.vstack([V_cache, v])
    y, _ = anp.scaled_dot_product_attention(q[None], K_cache, V_cache)
    return y[0], K_cache, V_cache


_BEFORE_APPEND = ck.Mistake(
    symptom="your new token does not see itself: it attends over the old cache "
    "only, before its own key and value are appended (at step 0 the cache is "
    "empty, so there is nothing to attend to)",
    why="the new token must see itself: causal attention lets token t attend to "
    "keys 0 .. t, its own included (the causal mask keeps the diagonal), so its "
    "key and value must be in the cache before it attends",
    fix="append first, K_cache = np.vstack([K_cache, k]) and the same for V, then "
    "attend q over the whole cache",
    line=r"attention|softmax|@",
)
_ONLY_NEW = ck.Mistake(
    symptom="your output is the new token's value alone",
    why="the cache is there so that the new token can attend to every earlier "
    "token too",
    fix="attend over every cached key and value, old and new",
    line=r"return",
)
_NO_SCALE = ck.Mistake(
    symptom="your scores were not divided by the square root of d_k = {d_k}: the "
    "weights are sharper than causal attention's",
    why="the scores of a decoding step are the same q . k as in attention over the "
    "whole sequence, and they are scaled the same way, by 1 / sqrt(d_k)",
    fix="scores = K_cache @ q / math.sqrt(d_k), with d_k = q.shape[0] (or "
    "anp.scaled_dot_product_attention, which scales them)",
    line=r"@|dot|scale",
)
_PREPENDED = ck.Mistake(
    symptom="your caches hold the new row first: after step {t} the new token's "
    "key is row 0 of K_cache, not its last row",
    why="the exercise returns the caches with the new row appended, so that row t "
    "holds token t: the order every later step, and a preallocated cache "
    "(exercise 10.4), relies on. Attention alone cannot tell, since it treats the "
    "keys as a set",
    fix="K_cache = np.vstack([K_cache, k]), old rows first, then the new one; the "
    "same for V_cache",
    line=r"vstack|concatenate|append|insert|stack",
)
_Y_A_ROW = ck.Mistake(
    symptom="each step returns y with shape (1, d_v), a row, instead of (d_v,): "
    "the stacked outputs are (n, 1, d_v)",
    why="q[None] makes a batch of one query, and attention keeps that axis",
    fix="return y[0] (or attend with q itself), a vector of d_v numbers",
    line=r"return",
)


def _step_before_append(q, k, v, K_cache, V_cache):
    if len(K_cache) == 0:
        y = np.zeros(V_cache.shape[1])
    else:
        y = anp.scaled_dot_product_attention(q[None], K_cache, V_cache)[0][0]
    return y, np.vstack([K_cache, k]), np.vstack([V_cache, v])


def _step_before_append_self(q, k, v, K_cache, V_cache):
    # step 0 special-cased as the token alone (y = v); later steps miss the new key
    if len(K_cache) == 0:
        return v, np.vstack([K_cache, k]), np.vstack([V_cache, v])
    return _step_before_append(q, k, v, K_cache, V_cache)


def _step_no_scale(q, k, v, K_cache, V_cache):
    K_cache, V_cache = np.vstack([K_cache, k]), np.vstack([V_cache, v])
    y, _ = anp.scaled_dot_product_attention(q[None], K_cache, V_cache, scale=1.0)
    return y[0], K_cache, V_cache


def _attends_old_cache_only(step, d_k, d_v):
    """True if ``step``, given a cache of two rows, attends over those rows only.

    Tells apart a step that failed on the empty cache of step 0 because it
    attends before appending (the probe starts with a non-empty cache).
    """
    rng = np.random.default_rng(1234)
    q, k, K_cache = (rng.standard_normal(s) for s in (d_k, d_k, (2, d_k)))
    v, V_cache = rng.standard_normal(d_v), rng.standard_normal((2, d_v))
    try:
        with np.errstate(all="ignore"):
            y = step(q, k, v, K_cache.copy(), V_cache.copy())[0]
        old_only = anp.scaled_dot_product_attention(q[None], K_cache, V_cache)[0][0]
        return ck.same(np.asarray(y, dtype=np.float64), old_only)
    except Exception:
        return False


def _step_only_new(q, k, v, K_cache, V_cache):
    return v, np.vstack([K_cache, k]), np.vstack([V_cache, v])


def check_decode_step(fn, *, seed=0):
    """Check ``fn(q, k, v, K_cache, V_cache) -> (y, K_cache, V_cache)``.

    The checker decodes whole sequences one token at a time from an empty cache
    and compares every output with causal attention over the whole sequence.
    """
    rng = np.random.default_rng(seed)
    cases = []
    for n, d_k, d_v in [(1, 4, 3), (5, 4, 6), (7, 8, 2)]:
        Q, K, V = (rng.standard_normal((n, d)) for d in (d_k, d_k, d_v))
        if n == 1:
            label = _(
                "1 token decoded one at a time from an empty cache: q and k "
                "({d_k},), v ({d_v},) at each step"
            ).format(d_k=d_k, d_v=d_v)
        else:
            label = _(
                "{n} tokens decoded one at a time from an empty cache: q and k "
                "({d_k},), v ({d_v},) at each step"
            ).format(n=n, d_k=d_k, d_v=d_v)
        sizes = {"n": n, "d_k": d_k, "d_v": d_v}
        cases.append(ck.Case(label, ("Q", "K", "V"), (Q, K, V), {}, sizes))

    class Decode:
        """Runs the learner's step over whole sequences; named and located as it.

        What is wrong with a step's return value (the caches' rows, their order)
        is kept in ``problem`` and told by ``inspect``, not raised as an error.
        """

        __name__ = getattr(fn, "__name__", "your function")
        __code__ = getattr(fn, "__code__", None)
        problem = None

        def __call__(self, Q, K, V):
            self.problem = None
            try:
                result = _decode_all(fn, Q, K, V)
            except NotImplementedError:
                raise
            except Exception:  # at step 0, attending over an empty cache?
                if not _attends_old_cache_only(fn, K.shape[1], V.shape[1]):
                    raise
                result = _BEFORE_APPEND
            if isinstance(result, np.ndarray):
                return result
            self.problem = (
                result
                if isinstance(result, ck.Mistake)
                else f"{self.__name__} {result}"
            )
            return np.zeros((Q.shape[0], V.shape[1]))  # told by inspect instead

    decode = Decode()
    mistakes = [
        (_BEFORE_APPEND, lambda Q, K, V: _decode_all(_step_before_append, Q, K, V)),
        (
            _BEFORE_APPEND,
            lambda Q, K, V: _decode_all(_step_before_append_self, Q, K, V),
        ),
        (_NO_SCALE, lambda Q, K, V: _decode_all(_step_no_scale, Q, K, V)),
        (_ONLY_NEW, lambda Q, K, V: _decode_all(_step_only_new, Q, K, V)),
        (_Y_A_ROW, lambda Q, K, V: _decode_all(_right_step, Q, K, V)[:, None, :]),
    ]
    return ck.run(
        "check_decode_step",
        decode,
        cases,
        lambda Q, K, V: anp.scaled_dot_product_attention(
            Q, K, V, mask=anp.causal_mask(len(Q))
        )[0],
        (
            ck.Out(
                "y, stacked over the steps",
                "(n, d_v)",
                "Each step's y has shape (d_v,).",
            ),
        ),
        mistakes,
        _diagnose_decode,
        inspect=lambda case, got: decode.problem,
        signature="my_decode_step(q, k, v, K_cache, V_cache)",
        hint="q, k and v are 1-D, (d,); the caches are 2-D, (t, d), with t = 0 at "
        "the first step",
    )


def _diagnose_decode(case, got, expected):
    """Where the learner's y first differs, told as a step and a coordinate."""
    y, want = got[0].astype(np.float64), expected[0]
    if y.shape != want.shape:
        return None
    wrong = ~np.isclose(y, want, rtol=ck.RTOL, atol=ck.ATOL, equal_nan=True)
    if not wrong.any():
        return None
    t, j = (int(i) for i in np.argwhere(wrong)[0])
    return (
        f"y at step {t} is wrong in coordinate {j}: you have {ck.num(y[t, j])}, "
        f"causal attention over tokens 0..{t} has {ck.num(want[t, j])}"
        + ("" if t else " (at step 0 the token attends to itself alone: y = v)")
    )
