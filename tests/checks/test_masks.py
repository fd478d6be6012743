"""check_causal_mask and check_zero_weights (helpers.checks.masks), lesson 05.

The causal mask is boolean, True = may attend, aligned lower-right when n != m.
Each wrong mask (a lambda, as a learner writes one) carries an id that says
what it does.
"""

import numpy as np
import pytest

from helpers import attention_np as anp
from helpers.checks import check_causal_mask, check_zero_weights
from tests.checks.catalogue import right, topic_tests, wrong
from tests.checks.staged import assert_staged

# --------------------------------------------------------------------------
# Right answers
# --------------------------------------------------------------------------


def simple_causal(n, m=None):
    m = n if m is None else m
    i = np.arange(n)[:, None]  # (n, 1) query positions
    j = np.arange(m)[None, :]  # (1, m) key positions
    return j <= i + (m - n)


def list_causal(n, m=None):
    """A mask as nested lists of bools is array-like too."""
    m = n if m is None else m
    return [[j <= i + (m - n) for j in range(m)] for i in range(n)]


ZERO_4 = [[0, 1, 1, 1], [0, 0, 1, 1], [0, 0, 0, 1], [0, 0, 0, 0]]


ZERO_2 = [[0, 1, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1]]


ZERO_0 = [[1, 1, 1, 1]] * 4


def zero_weights():
    return np.array([ZERO_4, ZERO_2, ZERO_0], dtype=bool)


# --------------------------------------------------------------------------
# Wrong answers
# --------------------------------------------------------------------------


def ones(n, m):
    return np.ones((n, m), dtype=bool)


def causal_without_diagonal(n, m):
    return np.arange(m)[None, :] < np.arange(n)[:, None] + (m - n)


def zero_uniform_empty_row():
    """Believes a fully masked row spreads its weight evenly: no zero there."""
    return np.array([ZERO_4, ZERO_2, [[0] * 4] * 4], dtype=bool)


def causal_no_default(n, m):
    return simple_causal(n, m)


def causal_default_ignored(n, m=None):
    """Reads m=None as 'no keys beyond the queries' the wrong way: m = n + 1."""
    m = n + 1 if m is None else m
    return simple_causal(n, m)


def zero_padded_queries_all_zero():
    """Believes a padded query attends nothing: rows 2 and 3 of length 2 all zero."""
    return np.array([ZERO_4, ZERO_2[:2] + [[1, 1, 1, 1]] * 2, ZERO_0], dtype=bool)


def zero_padding_missed_in_one():
    """Forgets the padding of sequence 1 only."""
    return np.array([ZERO_4, ZERO_4, ZERO_0], dtype=bool)


def zero_causal_only():
    return np.array([ZERO_4] * 3, dtype=bool)


def zero_flipped():
    return ~zero_weights()


def zero_transposed():
    return zero_weights().transpose(0, 2, 1)


RIGHT = [
    right(check_causal_mask, simple_causal, id="causal-simple"),
    right(check_causal_mask, list_causal, id="causal-lists"),
    right(
        check_zero_weights,
        zero_weights,
        prints="✓ check_zero_weights: every zero weight predicted, including the "
        "fully masked rows",
    ),
]

WRONG = [
    *wrong(
        check_causal_mask,
        [
            (
                lambda n, m: np.triu(ones(n, m), k=m - n + 1),
                "mask polarity is flipped",
                "triu_above",
            ),
            (lambda n, m: ~simple_causal(n, m), "mask polarity is flipped", "inverted"),
            (
                lambda n, m=None: anp.causal_mask(n, m),
                "you called anp.causal_mask, which this exercise asks you to do "
                "without",
                "calls_the_helper",
            ),
            (lambda n, m: np.triu(ones(n, m)), "upper triangle (np.triu)", "triu"),
            (lambda n, m: np.tril(ones(n, m)), "aligned lower-right", "tril"),
            (
                lambda n, m: np.arange(m)[None, :] <= np.arange(n)[:, None],
                "aligned lower-right",
                "upper_left",
            ),
            (
                lambda n, m: np.tril(ones(n, m), k=n - m),
                "shifted the diagonal the wrong way",
                "wrong_shift",
            ),
            (
                lambda n, m: np.tril(np.ones((n, m)), k=m - n),
                "must be boolean",
                "float",
            ),
            (lambda n, m: simple_causal(n, m).astype(int), "must be boolean", "int"),
            (lambda n, m: np.tril(ones(n, n)), "one column per key", "square"),
            (
                lambda n, m: simple_causal(m, n),
                "has shape (5, 3) = (m, n)",
                "transposed",
            ),
            (causal_without_diagonal, "leaves out the diagonal"),
            (causal_no_default, "accept the arguments of causal_mask(n, m=None)"),
            (causal_default_ignored, "m left out"),
        ],
    ),
    *wrong(
        check_zero_weights,
        [
            # lesson 05 exercise 3
            (zero_uniform_empty_row, "fully masked row gets all-zero"),
            (zero_causal_only, "causal zeros only"),
            (zero_flipped, "flipped"),
            (zero_transposed, "transposed"),
            (zero_padded_queries_all_zero, "padded queries (rows [2, 3])"),
            (zero_padding_missed_in_one, "sequence 1 (length 2): you predicted the"),
        ],
    ),
]

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


@pytest.mark.parametrize(
    ("fn", "says"),
    [
        (zero_padded_queries_all_zero, "padded queries"),
        (zero_padding_missed_in_one, "causal zeros only"),
    ],
)
def test_zero_weight_hints_come_in_steps(fn, says, capsys):
    assert_staged(check_zero_weights, (fn,), says, capsys)
