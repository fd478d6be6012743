"""Lesson 00's checkers (helpers.checks.conventions) against wrong answers.

Each wrong answer is written the way a learner would write it; the checker must
reject it with its diagnosis (a keyword of the symptom) and accept the right
answers. The staged-hint test runs one wrong answer twice and asks for the fix.
"""

import numpy as np
import pytest

from helpers import checks
from helpers.tensors import make_tensor
from tests.checks.catalogue import right, topic_tests, wrong
from tests.checks.staged import assert_staged, failure

# --------------------------------------------------------------------------
# 0.1: make_my_queries
# --------------------------------------------------------------------------


def queries_right():
    return make_tensor([2, 3, 4], mode="randn", seed=7, backend="numpy")


def queries_float64():
    return make_tensor([2, 3, 4], mode="randn", seed=7, backend="numpy").astype(float)


def queries_uniform():
    return make_tensor([2, 3, 4], seed=7, backend="numpy")


def queries_seed_0():
    return make_tensor([2, 3, 4], mode="randn", seed=0, backend="numpy")


def queries_torch():
    return make_tensor([2, 3, 4], mode="randn", seed=7)


def queries_axes_swapped():
    return make_tensor([3, 2, 4], mode="randn", seed=7, backend="numpy")


def queries_numpy_rng():
    return np.random.default_rng(7).standard_normal((2, 3, 4))  # make_tensor's draw


def queries_legacy_rng():
    np.random.seed(7)  # noqa: NPY002 (the legacy global generator, on purpose)
    return np.random.randn(2, 3, 4)  # noqa: NPY002


def queries_no_return():
    make_tensor([2, 3, 4], mode="randn", seed=7, backend="numpy")


# --------------------------------------------------------------------------
# 0.2: shape_names
# --------------------------------------------------------------------------


def names_right(Q, K, V):
    return Q.shape[-2], K.shape[-2], Q.shape[-1], V.shape[-1]


def names_from_the_front(Q, K, V):
    return Q.shape[0], K.shape[0], Q.shape[1], V.shape[1]


def names_m_from_q(Q, K, V):
    return Q.shape[-2], Q.shape[-2], Q.shape[-1], V.shape[-1]


def names_d_v_from_k(Q, K, V):
    return Q.shape[-2], K.shape[-2], Q.shape[-1], K.shape[-1]


def names_swapped(Q, K, V):
    return K.shape[-2], Q.shape[-2], Q.shape[-1], V.shape[-1]


# --------------------------------------------------------------------------
# 0.3: course_mask
# --------------------------------------------------------------------------


def mask_right(seed_mask):
    return seed_mask == 0


def mask_negated(seed_mask):
    return ~seed_mask.astype(bool)


def mask_as_bool(seed_mask):
    return seed_mask.astype(bool)


def mask_one_minus(seed_mask):
    return 1 - seed_mask


def mask_additive(seed_mask):
    return seed_mask * -1e9


RIGHT = [
    right(checks.check_make_queries, queries_right, prints=r"✓ check_make_queries: .+"),
    right(
        checks.check_make_queries, queries_float64, prints=r"✓ check_make_queries: .+"
    ),
    right(
        checks.check_make_queries, queries_numpy_rng, prints=r"✓ check_make_queries: .+"
    ),
    right(checks.check_shape_names, names_right),
    right(checks.check_course_mask, mask_right),
    right(checks.check_course_mask, mask_negated),
]
WRONG = [
    *wrong(
        checks.check_make_queries,
        [
            (queries_uniform, "a uniform draw"),
            (queries_seed_0, "with seed=0"),
            (queries_torch, "torch.Tensor"),
            (queries_axes_swapped, "(batch, n, d_k)"),
            (queries_legacy_rng, "not make_tensor's draw"),
            (queries_no_return, "returned None"),
        ],
    ),
    *wrong(
        checks.check_shape_names,
        [
            (names_from_the_front, "counted the axes from the front"),
            (names_m_from_q, "the number of queries"),
            (names_d_v_from_k, "the width of a key"),
            (names_swapped, "swapped"),
        ],
    ),
    *wrong(
        checks.check_course_mask,
        [
            (mask_as_bool, "True exactly where seed 003's mask blocks"),
            (mask_one_minus, "the course's masks are boolean"),
            (mask_additive, "additive offset"),
        ],
    ),
]
test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


@pytest.mark.parametrize(
    ("checker", "fn", "says"),
    [
        (checks.check_make_queries, queries_uniform, "uniform"),
        (checks.check_shape_names, names_from_the_front, "from the front"),
        (checks.check_course_mask, mask_as_bool, "blocks a key"),
    ],
)
def test_hints_come_in_steps(checker, fn, says, capsys):
    assert_staged(checker, (fn,), says, capsys)


def test_a_stub_ends_in_not_implemented_yet():
    def make_my_queries():
        raise NotImplementedError("write your code here")

    assert "not implemented yet" in str(
        failure(checks.check_make_queries, make_my_queries)
    )
