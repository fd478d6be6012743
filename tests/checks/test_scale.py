"""check_softmax_jacobian and check_find_temperature (helpers.checks.scale), lesson 04.

Lesson 04's exercises 2 and 3: the Jacobian of the softmax, and a bisection
for the temperature that gives a target entropy.
"""

import math

import numpy as np

from helpers.checks import check_find_temperature, check_softmax_jacobian
from tests.checks.catalogue import right, simple_softmax, topic_tests, wrong

# --------------------------------------------------------------------------
# Right answers
# --------------------------------------------------------------------------


def jacobian(a):
    return np.diag(a) - np.outer(a, a)


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


def jacobian_no_outer(a):
    return np.diag(a)


def jacobian_elementwise(a):
    return np.diag(a) - a * a


def temperature_wrong_end(raw_scores, target_entropy, low=1e-2, high=1e3, steps=60):
    for _ in range(steps):
        mid = math.sqrt(low * high)
        if entropy(raw_scores / mid).mean() < target_entropy:
            high = mid  # the wrong end
        else:
            low = mid
    return math.sqrt(low * high)


def temperature_returns_scale(raw_scores, target_entropy, low=1e-2, high=1e3):
    return 1 / find_temperature(raw_scores, target_entropy, low, high)


RIGHT = [
    right(check_softmax_jacobian, jacobian),
    right(check_find_temperature, find_temperature),
]

WRONG = [
    *wrong(
        check_softmax_jacobian,
        [(jacobian_no_outer, "only diag(a)"), (jacobian_elementwise, "outer product")],
    ),
    *wrong(
        check_find_temperature,
        [
            (temperature_wrong_end, "you moved the wrong end"),
            (temperature_returns_scale, "returned 1/T"),
        ],
    ),
]

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)
