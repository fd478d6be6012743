"""Checkers for lesson 08's exercises: score memory and merging states.

``check_score_bytes`` checks a byte count and the learner's prediction for a
long context; ``check_merge_states`` the merge of two online-softmax states
computed over disjoint sets of keys (split-K decoding). Each known mistake is a
``ck.Mistake``; the references here are written independently of
``helpers.attention_np``. The lesson's build exercise, causal tiles, is checked
in ``helpers.checks.tiled_attention``, which takes ``_state`` from here.
"""

from functools import partial

import numpy as np

from helpers.checks import _engine as ck
from helpers.checks._refuse import within_memory
from helpers.i18n import N_, _

__all__ = ["check_score_bytes", "check_merge_states"]

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
