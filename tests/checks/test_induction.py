"""The checkers of lesson 11 (helpers.checks.induction) against wrong answers.

check_prefix_matching_score and check_previous_token_score must name each
wrong score and survive broken ones; check_prediction wants a bool. The model
and its scores are tested in tests/attention/test_induction.py.
"""

import numpy as np
import pytest
import torch

from helpers import induction
from helpers.checks import CheckFailed
from helpers.checks.induction import (
    check_prediction,
    check_prefix_matching_score,
    check_previous_token_score,
)
from tests.checks.catalogue import right, topic_tests, wrong

# --------------------------------------------------------------------------
# The prefix-matching score
# --------------------------------------------------------------------------


def right_prefix(weights, lengths):
    return induction.prefix_matching_score(weights, lengths)


def prefix_same_token(weights, lengths):
    w = np.asarray(weights)
    parts = [
        w[b][:, np.arange(p, 2 * p), np.arange(p, 2 * p) - p]
        for b, p in enumerate(lengths)
    ]
    return np.concatenate(parts, -1).mean(-1)


def prefix_per_sequence_mean(weights, lengths):
    w = np.asarray(weights)
    means = [
        w[b][:, np.arange(p, 2 * p), np.arange(p, 2 * p) - p + 1].mean(-1)
        for b, p in enumerate(lengths)
    ]
    return np.mean(means, axis=0)


def prefix_short_range(weights, lengths):
    w = np.asarray(weights)
    parts = [
        w[b][:, np.arange(p, 2 * p - 1), np.arange(p, 2 * p - 1) - p + 1]
        for b, p in enumerate(lengths)
    ]
    return np.concatenate(parts, -1).mean(-1)


def prefix_mean_over_heads(weights, lengths):
    return right_prefix(weights, lengths).mean()


# --------------------------------------------------------------------------
# The previous-token score
# --------------------------------------------------------------------------


def prev_diagonal(weights):
    return np.diagonal(weights, axis1=-2, axis2=-1).mean(axis=(0, 2))


def prev_above(weights):
    return np.diagonal(weights, offset=1, axis1=-2, axis2=-1).mean(axis=(0, 2))


def prev_divided_by_n(weights):
    below = np.diagonal(weights, offset=-1, axis1=-2, axis2=-1)
    return below.sum(-1).mean(0) / weights.shape[-1]


def prev_by_hand(weights):
    below = np.diagonal(weights, offset=-1, axis1=-2, axis2=-1)  # (batch, H, n - 1)
    return below.mean(axis=(0, 2))


def prev_by_helper(weights):
    return induction.previous_token_score(weights)


def prev_batch_kept(weights):
    return np.diagonal(weights, offset=-1, axis1=-2, axis2=-1).mean(axis=-1)


# Lesson 11's checkers name the learner's function in their success line.
RIGHT = [
    right(
        check_prefix_matching_score,
        right_prefix,
        prints="✓ my_prefix_matching_score matches helpers.induction on 3 random cases",
    ),
    right(
        check_previous_token_score,
        prev_by_hand,
        prints="✓ check_previous_token_score: 3 cases passed; your previous-token "
        "score per head is right",
    ),
]

WRONG = [
    *wrong(
        check_prefix_matching_score,
        [
            (prefix_same_token, "i - P, the earlier copy"),
            (prefix_per_sequence_mean, "averaged each sequence first"),
            (prefix_short_range, "last position of the second copy"),
            (prefix_mean_over_heads, "one score per head"),
        ],
    ),
    *wrong(
        check_previous_token_score,
        [
            (prev_diagonal, "the diagonal"),
            (prev_above, "above the diagonal"),
            (prev_divided_by_n, "divided by n"),
            (prev_by_helper, "you called induction.previous_token_score"),
            (prev_batch_kept, "You kept an axis of size 1 (the batch)"),
        ],
    ),
]

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


def raises(*args):
    raise IndexError("index 40 is out of bounds")


BROKEN = {
    "None": lambda *args: None,
    "raises": raises,
    "string": lambda *args: "0.5",
    "list of strings": lambda *args: ["a", "b"],
    "NaN": lambda *args: np.full(2, np.nan),
    "torch tensor": lambda w, *rest: torch.zeros(w.shape[1]),
    "scalar": lambda *args: 0.3,
    "wrong length": lambda w, *rest: np.zeros(w.shape[1] + 1),
    "complex": lambda w, *rest: np.zeros(w.shape[1], complex),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
@pytest.mark.parametrize(
    "checker",
    [
        check_prefix_matching_score,
        check_previous_token_score,
    ],
)
def test_checkers_never_crash(checker, name):
    with pytest.raises(AssertionError) as failure:
        checker(BROKEN[name])
    lines = failure.value._render_traceback_()
    # the diagnosis, the case and where to look
    assert 1 <= len(lines) <= 5, "a failed check shows a short message"


def test_checkers_accept_a_tensor_that_requires_grad():
    def as_tensor(weights, lengths):
        score = induction.prefix_matching_score(weights, lengths)
        return torch.tensor(score, requires_grad=True)

    assert check_prefix_matching_score(as_tensor)


@pytest.mark.parametrize(
    "answer, words",
    [(None, "a bool"), ("False", "a bool"), (1, "a bool")],
)
def test_check_prediction_wants_a_bool(answer, words):
    with pytest.raises(AssertionError, match=words):
        check_prediction(lambda: answer)


def test_check_prediction_names_an_unwritten_prediction():
    def stub():
        raise NotImplementedError("Exercise")

    with pytest.raises(AssertionError, match="not implemented yet"):
        check_prediction(stub)
    assert check_prediction(lambda: np.bool_(True)) is True


def test_the_refused_helper_is_shown_at_the_learners_line_and_comes_back():
    with pytest.raises(CheckFailed) as info:
        check_previous_token_score(prev_by_helper)
    assert "return induction.previous_token_score(weights)" in info.value.where
    assert "RuntimeError" not in str(info.value)
    weights = np.full((1, 1, 2, 2), 0.5)
    assert induction.previous_token_score(weights).shape == (1,)
