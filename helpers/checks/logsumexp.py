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

_LSE_NAIVE = (
    "your logsumexp is inf or -inf for scores far from 0: np.exp(1000) overflows "
    "to inf and np.exp(-1000) underflows to 0, whose log is -inf. Use "
    "log sum_j e^x_j = M + log sum_j e^(x_j - M) with M = max(x)"
)
_LSE_FORGOT_M = (
    "you forgot to add the max back: log sum_j e^(x_j - M) is logsumexp(x) - M. "
    "Return M + np.log(np.exp(x - M).sum())"
)
_LSE_NO_LOG = (
    "you returned M + sum_j e^(x_j - M): the sum needs its log, "
    "M + np.log(np.exp(x - M).sum())"
)
_LSE_MIN = (
    "you shifted by the min of x, not the max: the largest exponent is then "
    "e^(max - min), which overflows when the scores are far apart. Shift by M = max(x)"
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

_MERGE_NO_RESCALE = (
    "you did not rescale both sums: each l_i is a sum of e^(x - m_i), relative to "
    "its own max, so bring both to the merged max m first: "
    "l = l1 * exp(m1 - m) + l2 * exp(m2 - m) (the factor is 1 for the block that "
    "holds the max and < 1 for the other)"
)
_MERGE_ONE_SIDE = (
    "you rescaled only one of the two sums: both are relative to their own max, "
    "so both need the factor exp(m_i - m), which is 1 for the block that holds "
    "the max and < 1 for the other"
)
_MERGE_INVERTED = (
    "your rescaling factor is upside down: exp(m - m_i) >= 1 grows the sums (and "
    "overflows). A sum relative to m_i becomes relative to the larger m through "
    "exp(m_i - m) <= 1"
)
_MERGE_UNSHIFTED = (
    "you converted back to plain sums, l_i * exp(m_i), which overflow for large "
    "scores (exp(1000) is inf). Stay relative to the merged max: "
    "l = l1 * exp(m1 - m) + l2 * exp(m2 - m)"
)
_MERGE_MAX = "the merged max must be max(m1, m2), the max of both blocks"
_MERGE_TWO_EMPTY = (
    "two empty blocks, (-inf, 0) and (-inf, 0), give l = nan: the merged max m is "
    "-inf, and exp(m_i - m) = exp(-inf - (-inf)) = exp(nan) is nan. When m is "
    "-inf both blocks are empty: return (m, 0.0) before rescaling"
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
            cases.append(ck.make_case(("m1", "l1", "m2", "l2"), *stats(a), *stats(b)))
    for pair in (((-math.inf, 0.0), stats(x)), (stats(x), (-math.inf, 0.0))):
        cases.append(
            ck.make_case(
                ("m1", "l1", "m2", "l2"), *pair[0], *pair[1], note="an empty block"
            )
        )
    empty = (-math.inf, 0.0)
    cases.append(
        ck.make_case(("m1", "l1", "m2", "l2"), *empty, *empty, note="two empty blocks")
    )
    return cases


def check_merge_stats(fn, *, seed=0):
    """Check ``fn(m1, l1, m2, l2) -> (m, l)``: merge two blocks' (max, sum) pairs.

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
            ck.Out("m", "()", "The merged max, one number."),
            ck.Out("l", "()", "One number."),
        ),
        variants,
        diagnose,
        signature="merge_stats(m1, l1, m2, l2)",
        tol=(1e-10, 1e-12),
    )
