"""check_online_softmax (helpers.checks.online), lesson 08.

The learner writes FlashAttention-2's ``update(m, l, acc, scores_block,
V_block)`` and ``finish(m, l, acc)``; a wrong answer is a pair of them.
"""

import numpy as np
import pytest

from helpers import attention_np as anp
from helpers.checks import CheckFailed, check_online_softmax
from tests.checks.catalogue import right, topic_tests, wrong

# --------------------------------------------------------------------------
# Right answers
# --------------------------------------------------------------------------


def update(m, l, acc, scores_block, V_block):
    m_new = np.maximum(m, scores_block.max(axis=1, keepdims=True))
    P = np.exp(scores_block - m_new)
    c = np.exp(m - m_new)
    return m_new, c * l + P.sum(axis=1, keepdims=True), c * acc + P @ V_block


def finish(m, l, acc):
    return acc / l, m + np.log(l)


# --------------------------------------------------------------------------
# Wrong answers
# --------------------------------------------------------------------------


def update_fa1(m, l, acc, scores_block, V_block):
    """FlashAttention-1: acc is kept normalised, renormalised every step."""
    m_new = np.maximum(m, scores_block.max(axis=1, keepdims=True))
    P = np.exp(scores_block - m_new)
    c = np.exp(m - m_new)
    l_new = c * l + P.sum(axis=1, keepdims=True)
    return m_new, l_new, (c * l * acc + P @ V_block) / l_new


def finish_fa1(m, l, acc):
    return acc, m + np.log(l)


def update_no_rescale_l(m, l, acc, scores_block, V_block):
    m_new = np.maximum(m, scores_block.max(axis=1, keepdims=True))
    P = np.exp(scores_block - m_new)
    c = np.exp(m - m_new)
    return m_new, l + P.sum(axis=1, keepdims=True), c * acc + P @ V_block


def update_inverted(m, l, acc, scores_block, V_block):
    m_new = np.maximum(m, scores_block.max(axis=1, keepdims=True))
    P = np.exp(scores_block - m_new)
    c = np.exp(m_new - m)
    return m_new, c * l + P.sum(axis=1, keepdims=True), c * acc + P @ V_block


def update_no_rescale_acc(m, l, acc, scores_block, V_block):
    m_new = np.maximum(m, scores_block.max(axis=1, keepdims=True))
    P = np.exp(scores_block - m_new)
    c = np.exp(m - m_new)
    return m_new, c * l + P.sum(axis=1, keepdims=True), acc + P @ V_block


def update_old_max(m, l, acc, scores_block, V_block):
    m_new = np.maximum(m, scores_block.max(axis=1, keepdims=True))
    P = np.exp(scores_block - np.where(np.isfinite(m), m, 0))
    c = np.exp(m - m_new)
    return m_new, c * l + P.sum(axis=1, keepdims=True), c * acc + P @ V_block


def finish_no_divide(m, l, acc):
    return acc, m + np.log(l)


def finish_forgot_m(m, l, acc):
    return acc / l, np.log(l)


def finish_flat_lse(m, l, acc):
    return acc / l, (m + np.log(l))[:, 0]


RIGHT = [
    right(
        check_online_softmax,
        update,
        finish,
        prints=r"✓ check_online_softmax: the whole loop equals softmax\(scores\) @ V, "
        r"and m \+ log\(l\) equals the logsumexp, for \d+ sequences",
    )
]

WRONG = wrong(
    check_online_softmax,
    [
        ((update_fa1, finish_fa1), "FlashAttention-1"),
        ((update_no_rescale_l, finish), "l is not rescaled"),
        ((update_inverted, finish), "upside down"),
        ((update_no_rescale_acc, finish), "acc is not rescaled"),
        ((update_old_max, finish), "off by one factor per query"),
        ((update, finish_no_divide), "your out is acc itself"),
        ((update, finish_forgot_m), "your lse is log(l)"),
        ((update, finish_flat_lse), "should be (n, 1)"),
    ],
)

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


def test_the_fa1_learner_passes_the_whole_loop_but_is_told():
    """FA-1 is a right algorithm; the exercise asks for FA-2's state."""
    scores = np.random.default_rng(0).normal(size=(3, 8))
    V = np.random.default_rng(1).normal(size=(8, 2))
    state = (np.full((3, 1), -np.inf), np.zeros((3, 1)), np.zeros((3, 2)))
    for cut in (slice(0, 3), slice(3, 8)):
        state = update_fa1(*state, scores[:, cut], V[cut])
    np.testing.assert_allclose(finish_fa1(*state)[0], anp.softmax(scores) @ V)
    with pytest.raises(CheckFailed, match="already divided by l") as caught:
        check_online_softmax(update_fa1, finish_fa1)
    assert "divide by l once" in caught.value.mistake.fix  # told on request


def update_lists(m, l, acc, scores_block, V_block):
    """Right values, returned as Python lists: each step passes, finish cannot."""
    return tuple(x.tolist() for x in update(m, l, acc, scores_block, V_block))


def test_online_softmax_names_an_update_that_returns_lists():
    """The whole loop reports finish's TypeError and the list types, not 'state'."""
    with pytest.raises(CheckFailed) as caught:
        check_online_softmax(update_lists, finish)
    message = str(caught.value)
    assert "your finish raised TypeError" in message
    assert "returns (list, list, list)" in message
    assert "return NumPy arrays" in message
    assert "keep state" not in message
