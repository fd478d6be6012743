"""The checkers of lesson 08's exercises 8.1 and 8.2 (helpers.checks.tiles).

Each wrong answer is written as a learner would write it and must be rejected
with its diagnosis: the symptom names the mistake, and never holds the fix.
"""

import numpy as np
import pytest

from helpers import checks
from helpers.checks import CheckFailed
from helpers.checks.tiles import check_merge_states, check_score_bytes
from tests.checks.catalogue import right, topic_tests, wrong
from tests.checks.staged import assert_staged

# --------------------------------------------------------------------------
# Exercise 8.1: bytes of a score matrix, and the prediction
# --------------------------------------------------------------------------


def score_bytes(n, m, dtype):
    return n * m * np.dtype(dtype).itemsize


def predict_4():
    return 4.5  # float16 at n = m = 49152: 9 * 2^28 entries * 2 bytes / 2^30


def score_entries(n, m, dtype):
    return n * m


def score_bits(n, m, dtype):
    return n * m * np.dtype(dtype).itemsize * 8


def score_square(n, m, dtype):
    return n * n * np.dtype(dtype).itemsize


def predict_gb():
    return 4.832


def score_four(n, m, dtype):
    return 4 * n * m


def score_allocated(n, m, dtype):
    return np.zeros((n, m), dtype=dtype).nbytes


def predict_guess():
    return 16


# --------------------------------------------------------------------------
# Exercise 8.2: merging two online-softmax states
# --------------------------------------------------------------------------


def merge_states(m_a, l_a, acc_a, m_b, l_b, acc_b):
    m = np.maximum(m_a, m_b)
    shift = np.where(np.isfinite(m), m, 0.0)
    c_a, c_b = np.exp(m_a - shift), np.exp(m_b - shift)
    return m, c_a * l_a + c_b * l_b, c_a * acc_a + c_b * acc_b


def merge_add(m_a, l_a, acc_a, m_b, l_b, acc_b):
    return np.maximum(m_a, m_b), l_a + l_b, acc_a + acc_b


def merge_unguarded(m_a, l_a, acc_a, m_b, l_b, acc_b):
    m = np.maximum(m_a, m_b)
    c_a, c_b = np.exp(m_a - m), np.exp(m_b - m)
    return m, c_a * l_a + c_b * l_b, c_a * acc_a + c_b * acc_b


def merge_only_b(m_a, l_a, acc_a, m_b, l_b, acc_b):
    m = np.maximum(m_a, m_b)
    shift = np.where(np.isfinite(m), m, 0.0)
    c_b = np.exp(m_b - shift)
    return m, l_a + c_b * l_b, acc_a + c_b * acc_b


def merge_sign(m_a, l_a, acc_a, m_b, l_b, acc_b):
    m = np.maximum(m_a, m_b)
    shift = np.where(np.isfinite(m), m, 0.0)
    c_a, c_b = np.exp(shift - m_a), np.exp(shift - m_b)
    return m, c_a * l_a + c_b * l_b, c_a * acc_a + c_b * acc_b


def merge_divided(m_a, l_a, acc_a, m_b, l_b, acc_b):
    m = np.maximum(m_a, m_b)
    shift = np.where(np.isfinite(m), m, 0.0)
    c_a, c_b = np.exp(m_a - shift), np.exp(m_b - shift)
    l = c_a * l_a + c_b * l_b
    return m, l, (c_a * acc_a + c_b * acc_b) / l


def merge_output(m_a, l_a, acc_a, m_b, l_b, acc_b):
    m, l, acc = merge_states(m_a, l_a, acc_a, m_b, l_b, acc_b)
    return m, l, acc / np.where(l == 0, 1.0, l)


RIGHT = [
    right(check_score_bytes, score_bytes, predict_4, prints=r"✓ check_score_bytes: .+"),
    right(check_merge_states, merge_states),
]
WRONG = [
    *wrong(
        check_score_bytes,
        [
            ((score_entries, predict_4), "number of entries"),
            ((score_bits, predict_4), "bits, not bytes"),
            ((score_square, predict_4), "uses n twice"),
            ((score_bytes, predict_gb), "gigabytes"),
            ((score_bytes, predict_guess), "does not match what your own"),
            ((score_four, predict_4), "4 bytes per number, whatever `dtype` is"),
            ((score_allocated, predict_4), "it built the matrix to measure it"),
        ],
    ),
    *wrong(
        check_merge_states,
        [
            (merge_add, "add the two parts' sums as they are"),
            (merge_unguarded, "NaN in the rows where neither part saw a key"),
            (merge_only_b, "rescaled only one of the two parts"),
            (merge_output, "normalised output"),
            (merge_divided, "normalised output"),
            (merge_sign, "larger than 1"),
        ],
    ),
]
test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


@pytest.mark.parametrize(
    ("checker", "fns"),
    [
        (check_merge_states, (merge_add,)),
        (check_score_bytes, (score_entries, predict_4)),
    ],
)
def test_the_symptom_names_the_mistake_without_the_fix(checker, fns):
    with pytest.raises(CheckFailed) as info:
        checker(*fns)
    mistake = info.value.mistake
    assert mistake is not None and mistake.why and mistake.fix
    assert mistake.fix not in mistake.symptom


def test_unsolved_stubs_get_the_short_message():
    def stub(*args):
        raise NotImplementedError("Exercise: replace this line with your code")

    for checker, fns in [
        (check_score_bytes, (stub, predict_4)),
        (check_score_bytes, (score_bytes, stub)),
        (check_merge_states, (stub,)),
    ]:
        with pytest.raises(CheckFailed, match="not implemented yet"):
            checker(*fns)


def test_merge_and_prediction_hints_come_in_steps(capsys):
    assert_staged(checks.check_merge_states, (merge_add,), "as they are", capsys)
    assert_staged(checks.check_score_bytes, (score_bytes, predict_gb), "GiB", capsys)


@pytest.mark.parametrize(
    ("checker", "fns", "line"),
    [
        (check_merge_states, (merge_divided,), "return m, l, (c_a * acc_a"),
        (check_score_bytes, (score_allocated, predict_4), "np.zeros((n, m)"),
        (check_score_bytes, (score_four, predict_4), "return 4 * n * m"),
    ],
)
def test_look_at_quotes_the_learners_line(checker, fns, line):
    with pytest.raises(CheckFailed) as info:
        checker(*fns)
    assert line in info.value.where
    assert "Refused" not in str(info.value)
    assert "_Helper" not in str(info.value)
