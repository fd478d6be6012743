"""Checkers for lesson 08's exercises: score memory, merging states, causal tiles.

``check_score_bytes`` checks a byte count and the learner's prediction for a
long context; ``check_merge_states`` the merge of two online-softmax states
computed over disjoint sets of keys (split-K decoding); and
``check_causal_tiled_attention`` the ★★★ build: tiles of queries × tiles of
keys, a running max and Z per query tile, the key tiles that lie entirely above
the lower-right diagonal skipped. Each known mistake is a ``ck.Mistake``; the
references here are written independently of ``helpers.attention_np``.
"""

import math
from functools import partial

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.checks._refuse import refused, within_memory
from helpers.i18n import N_, _

__all__ = ["check_score_bytes", "check_merge_states", "check_causal_tiled_attention"]

GIB = 2**30

# --------------------------------------------------------------------------
# check_score_bytes
# --------------------------------------------------------------------------

_BYTES_ENTRIES = ck.Mistake(
    symptom="your count for ({n}, {m}) {dtype} is the number of entries, n * m, "
    "not of bytes",
    why="each entry takes as many bytes as one number of the dtype: 2 for float16, "
    "4 for float32, 8 for float64",
    fix="n * m * np.dtype(dtype).itemsize",
    line=r"return|\bn\s*\*\s*m\b",
)
_BYTES_BITS = ck.Mistake(
    symptom="your count for ({n}, {m}) {dtype} is 8 times too large: bits, not bytes",
    why="itemsize is already in bytes; multiplying by 8 gives bits",
    fix="n * m * np.dtype(dtype).itemsize, with no factor 8",
    line=r"\b8\b|bits",
)
_BYTES_FIXED = ck.Mistake(
    symptom="your count for ({n}, {m}) {dtype} uses the size of another dtype "
    "(8 bytes, float64's, whatever `dtype` is)",
    why="the size of one number depends on the dtype passed in",
    fix="np.dtype(dtype).itemsize",
    line=r"\b8\b|return",
)
_BYTES_FOUR = ck.Mistake(
    symptom="your count for ({n}, {m}) {dtype} takes 4 bytes per number, "
    "whatever `dtype` is",
    why="4 bytes is float32's size; float16 takes 2 and float64 8, and the dtype "
    "is an argument so that one function answers for all of them",
    fix="n * m * np.dtype(dtype).itemsize",
    line=r"\b4\b|return",
)
_BYTES_ALLOCATED = ck.Mistake(
    symptom="your function allocated {peak_mib} MiB to count the bytes of a "
    "(4096, 4096) float32 matrix: it built the matrix to measure it",
    why="the point of counting is to know the size before allocating: at long "
    "contexts the matrix does not fit in memory at all",
    fix="n * m * np.dtype(dtype).itemsize",
    line=r"np\.(zeros|empty|ones|full)|nbytes",
)
_BYTES_SQUARE = ck.Mistake(
    symptom="your count for ({n}, {m}) {dtype} uses n twice: here n != m",
    why="the score matrix has one row per query (n) and one column per key (m)",
    fix="n * m * np.dtype(dtype).itemsize",
    line=r"n\s*\*\s*n|n\s*\*\*\s*2",
)

_PREDICTION_N = 49152  # 3 * 2^14: the prediction is float16 at n = m = 49152


def _bytes_cases(rng):
    cases = []
    for dtype in (np.float16, np.float32, np.float64, np.float32):
        n, m = (int(x) for x in rng.choice(np.arange(2, 400), size=2, replace=False))
        facts = {"dtype": np.dtype(dtype).name}
        cases.append(
            ck.make_case(
                ("n", "m", "dtype"), n, m, dtype, sizes={"n": n, "m": m}, facts=facts
            )
        )
    facts = {"dtype": "float32"}
    sizes = {"n": 4096, "m": 4096}
    cases.append(
        ck.make_case(
            ("n", "m", "dtype"), 4096, 4096, np.float32, sizes=sizes, facts=facts
        )
    )
    return cases


def _prediction_problem(predicted, gib):
    """A Mistake for a predicted size (GiB) of the 49152 x 49152 float16 scores."""
    if not isinstance(predicted, (int, float, np.integer, np.floating)) or isinstance(
        predicted, (bool, np.bool_)
    ):
        return _(
            "my_prediction() must return a number of GiB, e.g. 0.5; got "
            "{predicted!r} ({kind})"
        ).format(predicted=predicted, kind=type(predicted).__name__)
    predicted = float(predicted)
    if abs(predicted - gib) <= 0.02 * gib:
        return None
    readings = [
        (gib * GIB / 1e9, N_("gigabytes (10^9 bytes), not GiB (2^30 bytes)")),
        (gib / 4, N_("entries (in units of 2^30), not bytes")),
        (gib * 8, N_("bits, not bytes")),
        (gib * 2, N_("float32's 4 bytes per number, not float16's 2")),
        (gib * 4, N_("float64's 8 bytes per number, not float16's 2")),
    ]
    for value, what in readings:
        if abs(predicted - value) <= 0.02 * value:
            return ck.Mistake(
                symptom="your prediction {predicted:g} counts {what}",
                why="one (n, m) matrix takes n * m * itemsize bytes, and a GiB is "
                "2^30 bytes",
                fix="49152 = 3 * 2^14, so 49152^2 = 9 * 2^28 entries, times 2 bytes "
                "for float16, divided by 2^30: 4.5",
                key=f"your prediction {predicted:g} counts {what}",
            ).format(predicted=predicted, what=_(what))
    return ck.Mistake(
        symptom="your prediction {predicted:g} GiB does not match what your own "
        "score_bytes(49152, 49152, np.float16) returns, in GiB",
        why="49152 is 3 times a power of two, so n * m is 9 times one: the count in "
        "GiB is a number you can work out by hand",
        fix="49152 = 3 * 2^14, so 49152^2 = 9 * 2^28 entries, times 2 bytes for "
        "float16, divided by 2^30 bytes per GiB: 4.5",
        key=f"your prediction {predicted:g} GiB does not match what your own "
        "score_bytes(49152, 49152, np.float16) returns, in GiB",
    ).format(predicted=predicted)


def check_score_bytes(score_bytes, my_prediction, *, seed=0):
    """Check ``score_bytes(n, m, dtype)`` on fresh sizes, then ``my_prediction()``.

    Steps: print score_bytes(3, 5, d) for d = np.float16, np.float32 and
    np.float64 beside np.empty((3, 5), d).nbytes, which allocates the small
    matrix it measures (fine at this size, not at 49152).

    ``my_prediction()`` returns the predicted GiB of one float16 score matrix at
    n = m = 49152; it is compared with the value the checker computes, and the
    value is printed only once both are right. A (4096, 4096) case is watched:
    allocating the matrix to measure it (64 MiB) is refused.
    """
    variants = [
        (_BYTES_ENTRIES, lambda n, m, dtype: n * m),
        (_BYTES_BITS, lambda n, m, dtype: 8 * n * m * np.dtype(dtype).itemsize),
        (_BYTES_FIXED, lambda n, m, dtype: 8 * n * m),
        (_BYTES_SQUARE, lambda n, m, dtype: n * n * np.dtype(dtype).itemsize),
        (_BYTES_FOUR, lambda n, m, dtype: 4 * n * m),
    ]
    ck.run(
        "check_score_bytes",
        within_memory(score_bytes, 2**20, _BYTES_ALLOCATED),
        _bytes_cases(np.random.default_rng(seed)),
        lambda n, m, dtype: n * m * np.dtype(dtype).itemsize,
        (ck.Out("bytes", "()", "Return one whole number of bytes."),),
        variants,
        signature="score_bytes(n, m, dtype)",
        announce=False,
    )
    ck.require_function("check_score_bytes", my_prediction)
    case = ck.make_case((), note="my_prediction()")
    predicted = ck.call("check_score_bytes", my_prediction, case, "my_prediction()", "")
    size = _PREDICTION_N
    gib = np.dtype(np.float16).itemsize * size * size / GIB
    problem = _prediction_problem(predicted, gib)
    if problem is not None:
        raise ck.CheckFailed(
            "check_score_bytes",
            problem,
            f"n = m = {size}, float16",
            ck.look_at(my_prediction, ck.Mistake("", line=r"return")),
        )
    print(
        _(
            "✓ check_score_bytes: 5 cases passed; one float16 score "
            "matrix at n = m = {size} takes {gib:g} GiB, as you predicted"
        ).format(size=size, gib=gib)
    )
    return True


# --------------------------------------------------------------------------
# check_merge_states
# --------------------------------------------------------------------------

_MERGE_NO_RESCALE = ck.Mistake(
    symptom="your l and acc add the two parts' sums as they are, in the rows where "
    "the two parts have different maxima",
    why="each part's l and acc are sums of e^(s - m_part), taken relative to its "
    "own max; they can only be added once both are relative to the same max",
    fix="m = max(m_a, m_b); multiply part a's l and acc by e^(m_a - m) and part "
    "b's by e^(m_b - m), then add",
    line=r"l_a\s*\+\s*l_b|acc_a\s*\+\s*acc_b|\+",
)
_MERGE_ONE_SIDE = ck.Mistake(
    symptom="you rescaled only one of the two parts: rows whose larger max is in "
    "the other part are wrong",
    why="either part may hold a row's larger max; both are brought to the new max",
    fix="multiply each part by e^(its max - the new max); the factor is 1 for the "
    "part that holds the max",
    line=r"l_a\s*\+|\+\s*l_b|\+",
)
_MERGE_SIGN = ck.Mistake(
    symptom="your rescaling factors are larger than 1: e^(m_new - m_part) instead "
    "of e^(m_part - m_new)",
    why="moving a sum from its own max to a larger one shrinks it: every term "
    "e^(s - m_part) becomes e^(s - m_new), i.e. times e^(m_part - m_new) <= 1",
    fix="factor = np.exp(m_part - m_new)",
    line=r"exp",
)
_MERGE_NORMALISED = ck.Mistake(
    symptom="your acc is divided by l: you returned the normalised output instead "
    "of the unnormalised accumulator",
    why="a merged state must stay mergeable: the division by l happens once, after "
    "the last merge",
    fix="keep acc = c_a * acc_a + c_b * acc_b, unnormalised",
    line=r"/",
)
_MERGE_NAN = ck.Mistake(
    symptom="NaN in the rows where neither part saw a key (m_a = m_b = -inf)",
    why="the new max is -inf there, and -inf - (-inf) is NaN",
    fix="shift by 0 where the new max is -inf, as section 4's masked loop does: "
    "np.where(np.isfinite(m_new), m_new, 0.0)",
    line=r"exp",
)


def _state(scores, V):
    """(m, l, acc) of rows of scores (..., n, b), -inf = blocked; empty rows 0."""
    m = scores.max(axis=-1, keepdims=True)  # (..., n, 1)
    shift = np.where(np.isfinite(m), m, 0.0)
    P = np.exp(scores - shift)  # (..., n, b)
    return m, P.sum(axis=-1, keepdims=True), P @ V


def _merge_variant(m_a, l_a, acc_a, m_b, l_b, acc_b, *, mistake=None):
    m = np.maximum(m_a, m_b)  # (..., n, 1)
    shift = m if mistake == "nan" else np.where(np.isfinite(m), m, 0.0)
    c_a, c_b = np.exp(m_a - shift), np.exp(m_b - shift)
    if mistake == "sign":
        c_a, c_b = np.exp(shift - m_a), np.exp(shift - m_b)
    elif mistake == "none":
        c_a = c_b = 1.0
    elif mistake == "one_side":
        c_a = 1.0
    l = c_a * l_a + c_b * l_b  # (..., n, 1)
    acc = c_a * acc_a + c_b * acc_b  # (..., n, d_v)
    if mistake == "normalised":
        acc = acc / np.where(l == 0, 1.0, l)
    if mistake == "divided":  # plain division: 0 / 0 = NaN where no key was seen
        acc = acc / l
    return m, l, acc


def _merge_cases(rng):
    cases = []
    shapes = [((6,), 5, 4, 3, 1.0), ((2, 5), 9, 8, 2, 1.0), ((7,), 4, 6, 5, 30.0)]
    for lead, m_a, m_b, d_v, size in shapes:
        n = lead[-1]
        batch = lead[:-1]
        S = rng.normal(scale=size, size=(*batch, n, m_a + m_b))
        V = rng.normal(size=(*batch, m_a + m_b, d_v))
        allowed = rng.random(S.shape) < 0.7
        allowed[..., 0, :] = False  # query 0 sees no key at all
        allowed[..., 1, m_a:] = False  # query 1 sees no key of part b
        allowed[..., 2, :m_a] = False  # query 2 sees no key of part a
        S = np.where(allowed, S, -np.inf)
        a = _state(S[..., :m_a], V[..., :m_a, :])
        b = _state(S[..., m_a:], V[..., m_a:, :])
        sizes = {"n": n, "d_v": d_v}
        note = N_("scores up to ~100") if size > 1 else ""
        cases.append(
            ck.make_case(
                ("m_a", "l_a", "acc_a", "m_b", "l_b", "acc_b"),
                *a,
                *b,
                sizes=sizes,
                facts={"S": S, "V": V},
                note=note,
            )
        )
    return cases


def check_merge_states(fn, *, seed=0):
    """Check ``fn(m_a, l_a, acc_a, m_b, l_b, acc_b) -> (m, l, acc)``.

    Steps: split one row of scores in two, run section 4's loop on each half and
    on the whole row, and print your merge of the halves' states beside the whole
    row's state; try a row whose larger max is in the second half, and a half of
    only -inf.

    Each part is the online-softmax state of one set of keys: m and l (..., n, 1),
    acc (..., n, d_v) unnormalised. The merge must equal the state over both sets
    at once; some rows saw no key in one part, or in both.
    """
    cases = _merge_cases(np.random.default_rng(seed))
    # the state over both sets of keys at once, keyed by the case's first input
    full = {id(c.args[0]): _state(c.facts.pop("S"), c.facts.pop("V")) for c in cases}

    def reference(m_a, *rest):
        return full[id(m_a)]

    variants = [
        (_MERGE_NAN, partial(_merge_variant, mistake="nan")),
        (_MERGE_NO_RESCALE, partial(_merge_variant, mistake="none")),
        (_MERGE_ONE_SIDE, partial(_merge_variant, mistake="one_side")),
        (_MERGE_SIGN, partial(_merge_variant, mistake="sign")),
        (_MERGE_NORMALISED, partial(_merge_variant, mistake="normalised")),
        (_MERGE_NORMALISED, partial(_merge_variant, mistake="divided")),
    ]
    outputs = (
        ck.Out("m", "(..., n, 1)"),
        ck.Out("l", "(..., n, 1)"),
        ck.Out("acc", "(..., n, d_v)", "acc keeps one row of d_v numbers per query."),
    )
    return ck.run(
        "check_merge_states",
        fn,
        cases,
        reference,
        outputs,
        variants,
        signature="merge_states(m_a, l_a, acc_a, m_b, l_b, acc_b)",
    )


# --------------------------------------------------------------------------
# check_causal_tiled_attention
# --------------------------------------------------------------------------

_TILE_FIRST_QUERY = ck.Mistake(
    symptom="you skipped key tiles that the later queries of a query tile still "
    "see: your skip test looks at the tile's first query",
    why="a key tile is empty only when even the tile's last query, which sees the "
    "most keys, cannot reach its first key",
    fix="skip when k0 > (q1 - 1) + (m - n), q1 - 1 being the tile's last query",
    line=r"\bif\b.*k0|break|continue",
)
_TILE_LATE = ck.Mistake(
    symptom="your output is right but tiles_computed is too high: you computed "
    "one key tile too many after the diagonal in some query tiles",
    why="the first key tile that starts beyond the last query's reach is already "
    "entirely blocked",
    fix="stop as soon as k0 > (q1 - 1) + (m - n)",
    line=r"\bif\b.*k0|break|continue",
)
_TILE_SKIP_EQUAL = ck.Mistake(
    symptom="you skipped key tiles whose first key the tile's last query can still "
    "see: a key tile that starts exactly at the last query's reach is needed",
    why="query i sees key j when j <= i + (m - n), so a key tile is empty only "
    "when its first key lies strictly beyond the reach of the tile's last query",
    fix="skip when k0 > (q1 - 1) + (m - n), not when k0 >= ...",
    line=r">=|\bif\b.*k0",
)
_TILE_NO_SKIP = ck.Mistake(
    symptom="your output is right but tiles_computed counts every tile: nothing "
    "was skipped",
    why="with a causal mask, the key tiles entirely above the diagonal hold no "
    "allowed pair; computing them is the wasted work this exercise removes",
    fix="before computing a key tile, test whether its first key k0 is beyond the "
    "reach (q1 - 1) + (m - n) of the query tile's last query",
    line=r"\+=\s*1|for .*k0",
)
_TILE_DIAGONAL = ck.Mistake(
    symptom="you skipped the diagonal tiles too, the ones that are only partly blocked",
    why="a tile must be computed when at least one (query, key) pair in it is "
    "allowed; the mask inside it blocks the rest",
    fix="skip only when every pair is blocked: k0 > (q1 - 1) + (m - n)",
    line=r"\bif\b.*k0|\bif\b.*k1|break|continue",
)
_TILE_NO_MASK = ck.Mistake(
    symptom="inside the tiles you compute, the blocked pairs are not masked: the "
    "diagonal tiles let queries see later keys",
    why="skipping removes only the tiles that are entirely blocked; a diagonal "
    "tile holds allowed and blocked pairs, and the blocked ones need -inf",
    fix="in each computed tile, set the score of query i and key j to -inf where "
    "j > i + (m - n), with i and j the global positions",
    line=r"@\s*K|\.T\b",
)
_TILE_UPPER_LEFT = ck.Mistake(
    symptom="your mask and skip are aligned upper-left (query i sees keys j <= i); "
    "this case has n = {n}, m = {m}",
    why="the course's causal mask is aligned lower-right: the last query sees the "
    "last key, so query i sees keys j <= i + (m - n)",
    fix="use the offset m - n in both the skip test and the tile's mask",
    line=r"<=|\bif\b.*k0",
)
_TILE_NO_RESCALE = ck.Mistake(
    symptom="rows whose running max grows in a later key tile are wrong: the "
    "earlier tiles' sums are not rescaled",
    why="l and acc hold sums of e^(s - old max); when the max grows they must be "
    "multiplied by e^(old max - new max) before the new tile is added",
    fix="correction = exp(running_max - shift); l = correction * l + P.sum(...); "
    "acc = correction * acc + P @ V_tile",
    line=r"\+=\s*P|=\s*\w+\s*\+\s*P\b|\b\w*(z|sum|acc)\w*\s*\+=|\bl\s*\+=",
)
_TILE_HALF_RESCALE = ck.Mistake(
    symptom="rows whose running max grows in a later key tile are wrong: you "
    "rescaled one of the running sum and the accumulator, not both",
    why="l and acc are both sums of e^(s - old max); when the max grows, both "
    "must be multiplied by e^(old max - new max), or the output's numerator and "
    "denominator no longer match",
    fix="l = correction * l + P.sum(...) and acc = correction * acc + P @ V_tile",
    line=r"\+=\s*P|=\s*\w+\s*\+\s*P\b|\b\w*(z|sum|acc)\w*\s*\+=|\bl\s*\+=",
)
_TILE_WHOLE_MATRIX = ck.Mistake(
    symptom="on n = m = 2048 (tiles of 128) your function allocated {peak_mib} MiB "
    "at once: a whole (n, m) score or mask matrix, 32 MiB, where one tile's "
    "scores take 128 KiB",
    why="the point of tiling is that memory grows with the tile, not with n * m; "
    "a whole (n, m) matrix, even one used only to count or mask, is what tiles "
    "remove",
    fix="build each tile's scores as Q[q0:q1] @ K[k0:k1].T and its mask from "
    "np.arange(q0, q1)[:, None] and np.arange(k0, k1)[None, :]",
    line=r"Q\s*@\s*K|np\.(tril|triu|ones|zeros|full)\(|arange\(\s*[nm]\s*\)",
)
_TILE_NAN = ck.Mistake(
    symptom="NaN in rows that have seen no key yet (or none at all: here n > m, so "
    "the first n - m queries see nothing)",
    why="a row whose running max is still -inf gives -inf - (-inf) = NaN, and a "
    "row that saw nothing ends with l = 0",
    fix="shift by 0 where the max is -inf, and divide by 1 where l == 0 (section 4)",
    line=r"exp|/",
)


def _tiled(Q, K, V, block_q, block_k, **mistake):
    """Causal tiled attention, with one of the known mistakes switched on."""
    n, d_k = Q.shape
    m = K.shape[0]
    offset = 0 if mistake.get("upper_left") else m - n
    out = np.zeros((n, V.shape[1]))  # (n, d_v)
    computed = 0
    for q0 in range(0, n, block_q):
        q1 = min(q0 + block_q, n)
        rows = np.arange(q0, q1)[:, None]  # (b_q, 1) global query positions
        reach = (q0 if mistake.get("first_query") else q1 - 1) + offset
        mx = np.full((q1 - q0, 1), -np.inf)
        z = np.zeros((q1 - q0, 1))
        acc = np.zeros((q1 - q0, V.shape[1]))
        for k0 in range(0, m, block_k):
            k1 = min(k0 + block_k, m)
            late = block_k if mistake.get("late") else 0
            if not mistake.get("no_skip") and k0 > reach + late:
                continue
            if mistake.get("skip_equal") and k0 >= reach:
                continue
            if mistake.get("diagonal") and k1 - 1 > q0 + offset:
                continue
            computed += 1
            S = Q[q0:q1] @ K[k0:k1].T / math.sqrt(d_k)  # (b_q, b_k)
            if not mistake.get("no_mask"):
                S = np.where(np.arange(k0, k1)[None, :] <= rows + offset, S, -np.inf)
            new = np.maximum(mx, S.max(axis=1, keepdims=True))
            shift = new if mistake.get("nan") else np.where(np.isfinite(new), new, 0)
            P = np.exp(S - shift)
            c = 1.0 if mistake.get("no_rescale") else np.exp(mx - shift)
            z = (1.0 if mistake.get("acc_only") else c) * z + P.sum(
                axis=1, keepdims=True
            )
            acc = (1.0 if mistake.get("l_only") else c) * acc + P @ V[k0:k1]
            mx = new
        out[q0:q1] = acc / (z if mistake.get("nan") else np.where(z == 0, 1.0, z))
    return out, computed


def _causal_reference(Q, K, V, block_q, block_k):
    """The matrix form with a lower-right mask, and the tiles holding a pair."""
    n, m = Q.shape[0], K.shape[0]
    allowed = np.arange(m)[None, :] <= np.arange(n)[:, None] + (m - n)  # (n, m)
    scores = np.where(allowed, Q @ K.T / math.sqrt(Q.shape[1]), -np.inf)
    mx, z, acc = _state(scores, V)
    needed = sum(
        bool(allowed[q0 : q0 + block_q, k0 : k0 + block_k].any())
        for q0 in range(0, n, block_q)
        for k0 in range(0, m, block_k)
    )
    return acc / np.where(z == 0, 1.0, z), needed


def _tile_cases(rng):
    cases = []
    for n, m, block_q, block_k, size, note in [
        (8, 8, 2, 2, 1.0, ""),
        (13, 13, 4, 3, 1.0, N_("tiles of unequal sizes")),
        (5, 12, 2, 4, 1.0, N_("n < m: new tokens after a cache")),
        (9, 4, 3, 2, 1.0, N_("n > m: the first queries see nothing")),
        (16, 16, 4, 4, 20.0, N_("large scores")),
        (7, 20, 7, 6, 20.0, N_("one query tile, large scores")),
        (2048, 2048, 128, 128, 1.0, N_("long: memory watched")),
    ]:
        Q = rng.normal(scale=math.sqrt(size), size=(n, 6))  # (n, d_k)
        K = rng.normal(scale=math.sqrt(size), size=(m, 6))  # (m, d_k)
        V = rng.normal(size=(m, 3))  # (m, d_v)
        sizes = {"n": n, "m": m, "d_k": 6, "d_v": 3}
        cases.append(
            ck.make_case(
                ("Q", "K", "V", "block_q", "block_k"),
                Q,
                K,
                V,
                block_q,
                block_k,
                sizes=sizes,
                note=note,
            )
        )
    return cases


_MEMORY_LIMIT = 4 * 2**20  # bytes: a tile of 128 x 128 float64 is 128 KiB


def check_causal_tiled_attention(fn, *, seed=0):
    """Check ``fn(Q, K, V, block_q, block_k) -> (output, tiles_computed)``.

    Steps: on n = 9, m = 4 with tiles of 3 x 2, print for each (query tile, key
    tile) whether you computed it, beside the grid of allowed pairs drawn by
    hand; then compare the output with the matrix form (one head, lower-right
    causal mask).

    One head, lower-right causal mask; queries cut into tiles of ``block_q``,
    keys into tiles of ``block_k``; ``tiles_computed`` counts the (query tile,
    key tile) pairs whose scores were computed, which must be exactly those that
    hold at least one allowed pair. While it runs, the helpers that would answer
    it (or build the whole (n, m) mask) refuse to be called, and on a long case
    (n = m = 2048) an allocation of more than 4 MiB is refused.
    """
    v = partial(partial, _tiled)
    variants = [
        (_TILE_NAN, v(nan=True)),
        (_TILE_UPPER_LEFT, v(upper_left=True)),
        (_TILE_NO_SKIP, v(no_skip=True)),
        (_TILE_LATE, v(late=True)),
        (_TILE_FIRST_QUERY, v(first_query=True)),
        (_TILE_DIAGONAL, v(diagonal=True)),
        (_TILE_NO_MASK, v(no_mask=True)),
        (_TILE_NO_RESCALE, v(no_rescale=True)),
        (_TILE_HALF_RESCALE, v(acc_only=True)),
        (_TILE_HALF_RESCALE, v(l_only=True)),
        (_TILE_SKIP_EQUAL, v(skip_equal=True)),
    ]
    outputs = (
        ck.Out("output", "(n, d_v)", "One row per query, d_v = V.shape[1] columns."),
        ck.Out("tiles_computed", "()", "Return the count as one whole number."),
    )
    reason = N_(
        "this exercise builds causal attention tile by tile, without the whole "
        "(n, m) mask or score matrix; build each tile's mask from the positions "
        "of its queries and keys"
    )
    names = ("causal_mask", "scaled_dot_product_attention", "online_attention")
    with refused(anp, names, reason, scope=getattr(fn, "__globals__", None)):
        return ck.run(
            "check_causal_tiled_attention",
            within_memory(fn, _MEMORY_LIMIT, _TILE_WHOLE_MATRIX),
            _tile_cases(np.random.default_rng(seed)),
            _causal_reference,
            outputs,
            variants,
            signature="causal_tiled_attention(Q, K, V, block_q, block_k)",
        )
