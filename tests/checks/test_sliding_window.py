"""check_sliding_window_mask (helpers.checks.sliding_window).

Lesson 13's exercise 13.1. Each wrong answer is written the way a learner would
write it; the checker must reject it with its diagnosis (a keyword of the
symptom). Handing back the course's own causal_mask, as an object, a partial or
a lambda that calls it, is refused too.
"""

import functools

import numpy as np

from helpers import attention_np as anp
from helpers.checks import check_sliding_window_mask
from tests.checks.catalogue import right, topic_tests, wrong

# --------------------------------------------------------------------------
# 13.1: the sliding-window mask
# --------------------------------------------------------------------------


def mask_right(n, m, window, num_sinks):
    i = np.arange(n)[:, None] + (m - n)  # absolute position of each query
    j = np.arange(m)[None, :]
    sinks = (j < num_sinks) & (j <= i)
    return ((i - j >= 0) & (i - j < window)) | sinks


def mask_tril_triu(n, m, window, num_sinks):
    ones = np.ones((n, m), dtype=bool)
    causal = np.tril(ones, k=m - n)
    band = causal & np.triu(ones, k=m - n - window + 1)
    band[:, :num_sinks] |= causal[:, :num_sinks]
    return band


def mask_loops(n, m, window, num_sinks):
    mask = np.zeros((n, m), dtype=bool)
    for i in range(n):
        for j in range(m):
            back = (i + m - n) - j
            mask[i, j] = 0 <= back < window or (j < num_sinks and back >= 0)
    return mask


def mask_plus_one(n, m, window, num_sinks):
    i, j = np.arange(n)[:, None] + (m - n), np.arange(m)[None, :]
    return ((i - j >= 0) & (i - j <= window)) | ((j < num_sinks) & (j <= i))


def mask_minus_one(n, m, window, num_sinks):
    i, j = np.arange(n)[:, None] + (m - n), np.arange(m)[None, :]
    return ((j <= i) & (j > i - window + 1)) | ((j < num_sinks) & (j <= i))


def mask_upper_left(n, m, window, num_sinks):
    i, j = np.arange(n)[:, None], np.arange(m)[None, :]
    return ((i - j >= 0) & (i - j < window)) | ((j < num_sinks) & (j <= i))


def mask_both_sides(n, m, window, num_sinks):
    i, j = np.arange(n)[:, None] + (m - n), np.arange(m)[None, :]
    return (np.abs(i - j) < window) | ((j < num_sinks) & (j <= i))


def mask_flipped(n, m, window, num_sinks):
    return ~mask_right(n, m, window, num_sinks)


def mask_no_window(n, m, window, num_sinks):
    return np.tril(np.ones((n, m), dtype=bool), k=m - n)


def mask_ints(n, m, window, num_sinks):
    return mask_right(n, m, window, num_sinks).astype(int)


def mask_no_sinks(n, m, window, num_sinks):
    i, j = np.arange(n)[:, None] + (m - n), np.arange(m)[None, :]
    return (i - j >= 0) & (i - j < window)


def mask_future_sinks(n, m, window, num_sinks):
    """Keeps the first columns for every query, as lesson 13's keep_bos does."""
    mask = mask_no_sinks(n, m, window, num_sinks)
    mask[:, :num_sinks] = True
    return mask


def mask_sinks_plus_one(n, m, window, num_sinks):
    i, j = np.arange(n)[:, None] + (m - n), np.arange(m)[None, :]
    return ((i - j >= 0) & (i - j < window)) | ((j <= num_sinks) & (j <= i))


def mask_sinks_and(n, m, window, num_sinks):
    i, j = np.arange(n)[:, None] + (m - n), np.arange(m)[None, :]
    return (i - j >= 0) & (i - j < window) & (j < num_sinks)


def mask_by_reference(n, m, window, num_sinks):
    mask = anp.causal_mask(n, m, window=window)
    mask[:, :num_sinks] |= anp.causal_mask(n, m)[:, :num_sinks]
    return mask


RIGHT = [
    right(check_sliding_window_mask, mask_right),
    right(check_sliding_window_mask, mask_tril_triu),
    right(check_sliding_window_mask, mask_loops),
]

REFERENCE = "the course's own"

WRONG = [
    *wrong(
        check_sliding_window_mask,
        [
            (mask_plus_one, "one more"),
            (mask_minus_one, "one fewer"),
            (mask_upper_left, "upper-left"),
            (mask_both_sides, "after its own"),
            (mask_flipped, "exactly where"),
            (mask_no_window, "changes nothing"),
            (mask_ints, "must be boolean"),
            (mask_no_sinks, "plain sliding window"),
            (mask_future_sinks, "a sink in its future"),
            (mask_sinks_plus_one, "one more than num_sinks"),
            (mask_sinks_and, "filter the window"),
            (anp.causal_mask, REFERENCE, "anp.causal_mask"),
            (functools.partial(anp.causal_mask), REFERENCE, "partial_causal_mask"),
            (mask_by_reference, REFERENCE),
        ],
    ),
]

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)
