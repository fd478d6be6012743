"""The predict-then-observe checkers (helpers.checks.predicted) against wrong answers.

Lesson 01's key winners and lesson 02's shapes: the checker computes the answer
itself; each wrong prediction is named (which one, where to look) without the
answer.
"""

import numpy as np
import pytest

from helpers import checks
from tests.checks.catalogue import right, topic_tests, wrong
from tests.checks.staged import assert_staged, failure

K_LESSON = np.array(
    [
        [1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 1.0, 0.0],
        [2.0, 0.0, 0.0, 1.0],
        [0.0, 0.0, 1.0, -1.0],
        [0.0, -1.0, 0.0, 0.0],
    ]
)  # (m, d_k), lesson 01's keys


def winners_right():
    return (2, 2, 3)


def winners_from_one():
    return (3, 3, 4)  # the right keys, counted from 1


def winners_own_key():
    return (2, 0, 3)  # (b): the key the query was built from


def winners_not_negated():
    return (2, 2, 2)  # (c): as if the sign did not matter


def winners_smallest():
    return (2, 2, 4)  # (c): another key


def winners_two():
    return (2, 2)  # the exercise had two predictions once


def winners_names():
    return ("k_2", "k_2", "k_3")


def shapes_right(n, m, d_k, d_v):
    return {"scores": (n, m), "weights": (n, m), "output": (n, d_v)}


def shapes_lists(n, m, d_k, d_v):
    return {"scores": [n, m], "weights": [n, m], "output": [n, d_v]}


def shapes_output_d_k(n, m, d_k, d_v):
    return {"scores": (n, m), "weights": (n, m), "output": (n, d_k)}


def shapes_scores_transposed(n, m, d_k, d_v):
    return {"scores": (m, n), "weights": (n, m), "output": (n, d_v)}


def shapes_output_like_v(n, m, d_k, d_v):
    return {"scores": (n, m), "weights": (n, m), "output": (m, d_v)}


def shapes_scores_like_q(n, m, d_k, d_v):
    return {"scores": (n, d_k), "weights": (n, m), "output": (n, d_v)}


def shapes_tuple(n, m, d_k, d_v):
    return (n, m), (n, m), (n, d_v)


WINNERS = r"✓ check_key_winners: all 3 predictions right\. Takeaway: .+"
RIGHT = [
    right(checks.check_key_winners, winners_right, prints=WINNERS),
    right(
        checks.check_key_winners, winners_right, K_LESSON, id="given-K", prints=WINNERS
    ),
    right(checks.check_predicted_shapes, shapes_right, prints=r"✓ .+ predicted right"),
    right(checks.check_predicted_shapes, shapes_lists, prints=r"✓ .+ predicted right"),
]
WRONG = [
    *wrong(
        checks.check_key_winners,
        [
            (
                winners_own_key,
                "(b) q = 2 k_0: you said k_0, the key the query is built",
            ),
            (winners_not_negated, "(c) q = -2 k_2: you said k_2"),
            (winners_smallest, "(c) q = -2 k_2: you said k_4"),
            (winners_two, "must return 3 key numbers"),
            (winners_names, "answer with a key number"),
            (winners_from_one, "did you count the keys from 1?"),
        ],
    ),
    *wrong(
        checks.check_predicted_shapes,
        [
            (shapes_output_d_k, "the width of a key"),
            (shapes_scores_transposed, "scores are transposed"),
            (shapes_output_like_v, "one row per key, the shape of V"),
            (shapes_scores_like_q, "the shape of Q"),
            (shapes_tuple, "return a dict"),
        ],
    ),
]
test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


@pytest.mark.parametrize(
    ("checker", "fn", "says"),
    [
        (checks.check_key_winners, winners_own_key, "the key the query is built from"),
        (checks.check_predicted_shapes, shapes_output_d_k, "width of a key"),
    ],
)
def test_hints_come_in_steps(checker, fn, says, capsys):
    assert_staged(checker, (fn,), says, capsys)


def test_no_message_gives_a_winner_away():
    """The symptom names the wrong prediction, never the right key."""
    for fn in (winners_own_key, winners_not_negated, winners_smallest):
        text = failure(checks.check_key_winners, fn).diagnosis
        assert "k_3" not in text and "is k_2" not in text, text
