"""check_softmax_jacobian and check_find_temperature (helpers.checks.scale), lesson 04.

Lesson 04's exercises 2 and 3: the Jacobian of the softmax, and a bisection
for the temperature that gives a target entropy.
"""

import math

import numpy as np
import pytest

from helpers.checks import (
    CheckFailed,
    check_find_temperature,
    check_softmax_jacobian,
)
from tests.checks.catalogue import right, simple_softmax, topic_tests, wrong
from tests.checks.staged import assert_staged

# --------------------------------------------------------------------------
# Right answers
# --------------------------------------------------------------------------


def jacobian(a, T):
    return (np.diag(a) - np.outer(a, a)) / T


def entropy(scores):
    log_a = np.log(simple_softmax(scores) + 1e-300)
    return -(simple_softmax(scores) * log_a).sum(-1)


def find_temperature(raw_scores, target_entropy, low=1e-2, high=1e3, steps=60):
    for _ in range(steps):
        mid = math.sqrt(low * high)
        if entropy(raw_scores / mid).mean() < target_entropy:
            low = mid
        else:
            high = mid
    return math.sqrt(low * high)


# --------------------------------------------------------------------------
# Wrong answers
# --------------------------------------------------------------------------


def jacobian_no_outer(a, T):
    return np.diag(a) / T


def jacobian_elementwise(a, T):
    return (np.diag(a) - a * a) / T


def jacobian_no_temperature(a, T):
    return np.diag(a) - np.outer(a, a)


def jacobian_times_temperature(a, T):
    return (np.diag(a) - np.outer(a, a)) * T


def temperature_wrong_end(raw_scores, target_entropy, low=1e-2, high=1e3, steps=60):
    for _ in range(steps):
        mid = math.sqrt(low * high)
        if entropy(raw_scores / mid).mean() < target_entropy:
            high = mid  # the wrong end
        else:
            low = mid
    return math.sqrt(low * high)


def jacobian_scalar(a, T):
    return (np.diag(a) - a @ a) / T


def jacobian_identity(a, T):
    return (np.eye(len(a)) - np.outer(a, a)) / T


def jacobian_rows_off(a, T):
    """Not a known mistake: its rows do not sum to 0."""
    return (np.diag(a) - np.outer(a, a) + 0.1 * np.eye(len(a))) / T


def temperature_multiplied(raw_scores, target_entropy, low=1e-2, high=1e3, steps=60):
    for _ in range(steps):
        mid = math.sqrt(low * high)
        if entropy(raw_scores * mid).mean() < target_entropy:
            low = mid
        else:
            high = mid
    return math.sqrt(low * high)


def temperature_summed(raw_scores, target_entropy, low=1e-2, high=1e3, steps=60):
    for _ in range(steps):
        mid = math.sqrt(low * high)
        if entropy(raw_scores / mid).sum() < target_entropy:
            low = mid
        else:
            high = mid
    return math.sqrt(low * high)


def temperature_five_steps(raw_scores, target_entropy, low=1e-2, high=1e3, steps=5):
    return find_temperature(raw_scores, target_entropy, low, high, steps)


def temperature_returns_scale(raw_scores, target_entropy, low=1e-2, high=1e3):
    return 1 / find_temperature(raw_scores, target_entropy, low, high)


RIGHT = [
    right(check_softmax_jacobian, jacobian),
    right(check_find_temperature, find_temperature),
]

WRONG = [
    *wrong(
        check_softmax_jacobian,
        [
            (jacobian_no_outer, "only diag(a)"),
            (jacobian_elementwise, "outer product"),
            (jacobian_scalar, "a @ a is the scalar"),
            (jacobian_identity, "you have the identity"),
            (jacobian_rows_off, "rows of your J do not sum to 0"),
            (jacobian_no_temperature, "the temperature is missing"),
            (jacobian_times_temperature, "multiplies where it should divide"),
        ],
    ),
    *wrong(
        check_find_temperature,
        [
            (temperature_wrong_end, "the comparison sends the bracket the wrong"),
            (temperature_returns_scale, "returned 1/T"),
            (temperature_multiplied, "you multiply the scores by the temperature"),
            (temperature_summed, "the entropy summed over the 40 rows"),
            (temperature_five_steps, "where the bisection stands after 5 steps"),
        ],
    ),
]

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


@pytest.mark.parametrize(
    ("checker", "fn", "says"),
    [
        (check_softmax_jacobian, jacobian_scalar, "a @ a"),
        (check_softmax_jacobian, jacobian_identity, "identity"),
        (check_softmax_jacobian, jacobian_rows_off, "do not sum to 0"),
        (check_softmax_jacobian, jacobian_no_temperature, "temperature is missing"),
        (check_find_temperature, temperature_wrong_end, "wrong way"),
        (check_find_temperature, temperature_multiplied, "multiply"),
        (check_find_temperature, temperature_summed, "summed"),
        (check_find_temperature, temperature_five_steps, "after 5 steps"),
    ],
    ids=lambda x: getattr(x, "__name__", "")[:30],
)
def test_hints_come_in_steps(checker, fn, says, capsys):
    assert_staged(checker, (fn,), says, capsys)


def test_the_rows_argument_goes_through_the_columns():
    """Columns sum to 0 because the weights sum to 1; rows, because J is symmetric."""
    from helpers.checks.scale import _JAC_ROWS

    assert "column" in _JAC_ROWS.why and "symmetric" in _JAC_ROWS.why


@pytest.mark.parametrize(
    ("fn", "code"),
    [
        (
            temperature_wrong_end,
            "if entropy(raw_scores / mid).mean() < target_entropy:",
        ),
        (
            temperature_multiplied,
            "if entropy(raw_scores * mid).mean() < target_entropy:",
        ),
        (temperature_summed, "if entropy(raw_scores / mid).sum() < target_entropy:"),
    ],
    ids=lambda x: getattr(x, "__name__", "")[:30],
)
def test_look_at_is_the_line_with_the_mistake(fn, code):
    with pytest.raises(CheckFailed) as info:
        check_find_temperature(fn)
    assert info.value.where.endswith(code), info.value.where


def test_a_why_only_for_the_mistake_it_explains():
    """A miss the checker cannot name gets no 'stopping early' why."""

    def off_by_a_bit(raw_scores, target_entropy, low=1e-2, high=1e3):
        return find_temperature(raw_scores, target_entropy, low, high) * 1.01

    for _ in range(2):
        with pytest.raises(CheckFailed) as info:
            check_find_temperature(off_by_a_bit)
        assert info.value.mistake is None
        assert "Why" not in str(info.value)
