"""Checkers for lesson 03's exercises on the normaliser Z in log space.

``check_logsumexp`` (exercise 2): log Z of one row without overflow, the max
taken out first. ``check_merge_stats`` (exercise 3): two blocks' (max, sum)
pairs merged into one, the step that lesson 08's online softmax repeats. Each
``check_*`` runs the learner's function on seeded cases, compares it with a
reference and names the likely mistake; see ``helpers.checks``.
"""

import math

import numpy as np

from helpers.checks import _engine as ck

__all__ = ["check_logsumexp", "check_merge_stats"]

# --------------------------------------------------------------------------
# check_logsumexp (lesson 03, exercise 2)
# --------------------------------------------------------------------------

_LSE_NAIVE = ck.Mistake(
    symptom="your logsumexp is inf or -inf for scores far from 0: np.exp "
    "overflows (or underflows to 0)",
    why="np.exp(1000) overflows to inf and np.exp(-1000) underflows to 0, whose "
    "log is -inf",
    fix="log sum_j e^x_j = M + log sum_j e^(x_j - M) with M = max(x)",
    line=r"exp",
)
_LSE_FORGOT_M = ck.Mistake(
    symptom="you forgot to add the max back: your value is logsumexp(x) - M",
    why="log sum_j e^(x_j - M) = logsumexp(x) - M: the shift comes out of the log "
    "as -M",
    fix="return M + np.log(np.exp(x - M).sum())",
    line=r"log",
)
_LSE_NO_LOG = ck.Mistake(
    symptom="you returned M + sum_j e^(x_j - M): the sum needs its log",
    why="logsumexp is the log of the sum; the shift M only comes out of a log",
    fix="M + np.log(np.exp(x - M).sum())",
    line=r"sum",
)
_LSE_TIMES_M = ck.Mistake(
    symptom="you multiplied the max by the log, M * log(...), instead of adding it",
    why="e^M comes out of the sum as a factor, and the log turns that factor into "
    "a sum: log(e^M * S) = M + log S",
    fix="return M + np.log(np.exp(x - M).sum())",
    line=r"\*\s*np\.log|\*\s*math\.log|log\(.*\)\s*\*",
)
_LSE_MIN = ck.Mistake(
    symptom="you shifted by the min of x, not the max",
    why="the largest exponent is then e^(max - min), which overflows when the "
    "scores are far apart",
    fix="shift by M = max(x)",
    line=r"min",
)


def _logsumexp(x):
    top = x.max()
    return top + np.log(np.exp(x - top).sum())


def _lse_cases(rng):
    cases = [
        ck.make_case(("x",), rng.normal(scale=5.0, size=12) + shift, large=shift != 0)
        for shift in (0.0, 500.0, -500.0, 1e4)
    ]
    for x, note in [
        ([1000.0, 1000.0], "1000 + log 2"),
        ([-1000.0, -1000.0], "-1000 + log 2"),
        ([3.0], "one entry"),
        ([-400.0, 0.0, 400.0], "scores 800 apart"),
    ]:
        cases.append(ck.make_case(("x",), np.array(x), large=True, note=note))
    return cases


def check_logsumexp(fn, *, seed=0):
    """Check ``fn(x) -> float``: log(sum(exp(x))) of a 1-D array, never overflowing.

    Cases: scores near 0, ±500 and 1e4, [1000, 1000], [-1000, -1000], one entry,
    and scores 800 apart.
    """
    variants = [
        (_LSE_NAIVE, lambda x: np.log(np.exp(x).sum())),
        (_LSE_FORGOT_M, lambda x: np.log(np.exp(x - x.max()).sum())),
        (_LSE_NO_LOG, lambda x: x.max() + np.exp(x - x.max()).sum()),
        (_LSE_TIMES_M, lambda x: x.max() * np.log(np.exp(x - x.max()).sum())),
        (_LSE_MIN, lambda x: x.min() + np.log(np.exp(x - x.min()).sum())),
    ]

    def diagnose(case, got, expected):
        return None if np.isfinite(got[0]).all() else _LSE_NAIVE

    return ck.run(
        "check_logsumexp",
        fn,
        _lse_cases(np.random.default_rng(seed)),
        _logsumexp,
        (ck.Out("logsumexp", "()", "Return one number, e.g. float(...)."),),
        variants,
        diagnose,
        signature="logsumexp(x)",
        tol=(1e-10, 1e-10),
    )


# --------------------------------------------------------------------------
# check_merge_stats (lesson 03, exercise 3)
# --------------------------------------------------------------------------

_MERGE_NO_RESCALE = ck.Mistake(
    symptom="you did not rescale both sums: your l is l1 + l2",
    why="each l_i is a sum of e^(x - M_i), relative to its own max, so both must "
    "be brought to the merged max M before adding",
    fix="l = l1 * exp(M1 - M) + l2 * exp(M2 - M) (the factor is 1 for the block "
    "that holds the max and < 1 for the other)",
    line=r"\+",
)
_MERGE_ONE_SIDE = ck.Mistake(
    symptom="you rescaled only one of the two sums",
    why="both are relative to their own max M_i, and the merged max M may be "
    "either block's",
    fix="give both the factor exp(M_i - M), which is 1 for the block that holds "
    "the max and < 1 for the other",
    line=r"exp",
)
_MERGE_INVERTED = ck.Mistake(
    symptom="your rescaling factor is upside down: exp(M - M_i) >= 1 grows the "
    "sums (and overflows)",
    why="a sum relative to M_i becomes relative to the larger M by shrinking",
    fix="multiply by exp(M_i - M) <= 1",
    line=r"exp",
)
_MERGE_UNSHIFTED = ck.Mistake(
    symptom="you converted back to plain sums, l_i * exp(M_i), which overflow for "
    "large scores",
    why="exp(1000) is inf: the pairs stay relative to a max precisely to avoid it",
    fix="stay relative to the merged max: l = l1 * exp(M1 - M) + l2 * exp(M2 - M)",
    line=r"exp",
)
_MERGE_MAX = ck.Mistake(
    symptom="your merged max M is wrong",
    why="the merged block holds every score of both blocks",
    fix="M = max(M1, M2), the max of both blocks",
)
_MERGE_TWO_EMPTY = ck.Mistake(
    symptom="two empty blocks, (-inf, 0) and (-inf, 0), give l = nan",
    why="the merged max M is -inf, and exp(M_i - M) = exp(-inf - (-inf)) = "
    "exp(nan) is nan",
    fix="when M is -inf both blocks are empty: return (M, 0.0) before rescaling",
)


def _merge_unguarded(m1, l1, m2, l2):
    m = max(m1, m2)
    return m, l1 * math.exp(m1 - m) + l2 * math.exp(m2 - m)


def _merge(m1, l1, m2, l2):
    m = max(m1, m2)
    if m == -math.inf:  # both blocks empty: -inf - (-inf) would be nan
        return m, 0.0
    return m, l1 * math.exp(m1 - m) + l2 * math.exp(m2 - m)


def _merge_cases(rng):
    def stats(x):
        return float(x.max()), float(np.exp(x - x.max()).sum())

    cases = []
    for shift in (0.0, 5.0, -5.0, 1000.0):  # the second block may be far larger
        x = rng.normal(scale=3.0, size=30)
        x[17:] += shift
        for a, b in ((x[:17], x[17:]), (x[17:], x[:17])):
            cases.append(ck.make_case(("M1", "l1", "M2", "l2"), *stats(a), *stats(b)))
    for pair in (((-math.inf, 0.0), stats(x)), (stats(x), (-math.inf, 0.0))):
        cases.append(
            ck.make_case(
                ("M1", "l1", "M2", "l2"), *pair[0], *pair[1], note="an empty block"
            )
        )
    empty = (-math.inf, 0.0)
    cases.append(
        ck.make_case(("M1", "l1", "M2", "l2"), *empty, *empty, note="two empty blocks")
    )
    return cases


def check_merge_stats(fn, *, seed=0):
    """Check ``fn(max1, l1, max2, l2) -> (M, l)``: merge two blocks' (max, sum) pairs.

    The names follow lesson 03: block i is (M_i, l_i), the merged pair (M, l).

    Each pair is a block's max and sum of exp(x - max); an empty block is
    (-inf, 0.0). Cases: blocks of similar and very different maxima, both orders,
    an empty block on either side, and two empty blocks.
    """

    def unshifted(m1, l1, m2, l2):
        return max(m1, m2), l1 * math.exp(m1) + l2 * math.exp(m2)

    variants = [
        # first: only the two-empty case tells it from the right answer, and there
        # the one-sided rescaling below gives the same nan
        (_MERGE_TWO_EMPTY, _merge_unguarded),
        (_MERGE_NO_RESCALE, lambda m1, l1, m2, l2: (max(m1, m2), l1 + l2)),
        (
            _MERGE_ONE_SIDE,
            lambda m1, l1, m2, l2: (max(m1, m2), l1 + l2 * math.exp(m2 - max(m1, m2))),
        ),
        (
            _MERGE_ONE_SIDE,
            lambda m1, l1, m2, l2: (max(m1, m2), l1 * math.exp(m1 - max(m1, m2)) + l2),
        ),
        (
            _MERGE_INVERTED,
            lambda m1, l1, m2, l2: (
                max(m1, m2),
                l1 * math.exp(max(m1, m2) - m1) + l2 * math.exp(max(m1, m2) - m2),
            ),
        ),
        (_MERGE_UNSHIFTED, unshifted),
    ]

    def diagnose(case, got, expected):
        return _MERGE_MAX if not ck.same(got[0], expected[0]) else None

    return ck.run(
        "check_merge_stats",
        fn,
        _merge_cases(np.random.default_rng(seed)),
        _merge,
        (
            ck.Out("M", "()", "The merged max, one number."),
            ck.Out("l", "()", "One number."),
        ),
        variants,
        diagnose,
        signature="merge_stats(m1, l1, m2, l2)",
        tol=(1e-10, 1e-12),
    )
