"""check_logsumexp and check_merge_stats (helpers.checks.logsumexp), lesson 03.

Lesson 03's exercises 2 and 3: the wrong answers are the ways a learner
overflows, forgets the max, or rescales one block's sum and not the other's.
"""

import math

import numpy as np

from helpers.checks import check_logsumexp, check_merge_stats
from tests.checks.catalogue import right, topic_tests, wrong

# --------------------------------------------------------------------------
# Right answers
# --------------------------------------------------------------------------


def logsumexp(x):
    top = x.max()
    return float(top + np.log(np.exp(x - top).sum()))


def merge_stats(m1, l1, m2, l2):
    m = max(m1, m2)
    if m == -math.inf:  # two empty blocks
        return m, 0.0
    return m, l1 * math.exp(m1 - m) + l2 * math.exp(m2 - m)


# --------------------------------------------------------------------------
# Wrong answers
# --------------------------------------------------------------------------


def lse_naive(x):
    return float(np.log(np.exp(x).sum()))


def lse_forgot_m(x):
    return float(np.log(np.exp(x - x.max()).sum()))


def lse_no_log(x):
    return float(x.max() + np.exp(x - x.max()).sum())


def lse_times_max(x):
    top = x.max()
    return float(top * np.log(np.exp(x - top).sum()))


def lse_min_shift(x):
    low = x.min()
    return float(low + np.log(np.exp(x - low).sum()))


def merge_unguarded(m1, l1, m2, l2):
    """Right for every pair but two empty blocks: exp(-inf - (-inf)) is nan."""
    m = max(m1, m2)
    return m, l1 * math.exp(m1 - m) + l2 * math.exp(m2 - m)


def merge_one_side(m1, l1, m2, l2):
    m = max(m1, m2)
    return m, l1 + l2 * math.exp(m2 - m)


def merge_plain_sums(m1, l1, m2, l2):
    return max(m1, m2), l1 * math.exp(m1) + l2 * math.exp(m2)


def merge_no_rescale(m1, l1, m2, l2):
    return max(m1, m2), l1 + l2


def merge_inverted(m1, l1, m2, l2):
    m = max(m1, m2)
    return m, l1 * math.exp(m - m1) + l2 * math.exp(m - m2)


RIGHT = [right(check_logsumexp, logsumexp), right(check_merge_stats, merge_stats)]

WRONG = [
    *wrong(
        check_logsumexp,
        [
            (lse_naive, "overflows"),
            (lse_forgot_m, "add the max back"),
            (lse_no_log, "needs its log"),
            (lse_min_shift, "min of x"),
            (lse_times_max, "multiplied the max by the log"),
        ],
    ),
    *wrong(
        check_merge_stats,
        [
            (merge_unguarded, "two empty blocks"),
            (merge_no_rescale, "did not rescale both sums"),
            (merge_one_side, "both"),
            (merge_plain_sums, "overflow"),
            (merge_inverted, "upside down"),
        ],
    ),
]

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


def test_merge_of_two_empty_blocks_is_empty(capsys):
    """The reference merge keeps (-inf, 0) for two empty blocks, never nan."""
    assert merge_stats(-math.inf, 0.0, -math.inf, 0.0) == (-math.inf, 0.0)
    assert check_merge_stats(merge_stats) is True
    assert "11 cases passed" in capsys.readouterr().out
