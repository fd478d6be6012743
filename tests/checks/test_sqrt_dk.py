"""helpers.checks.sqrt_dk, lesson 04: the predicted spread of q.k, a temperature on
the lesson's own draws, and the softmax backward pass built from a blank cell.

Each wrong answer is written as a learner would write it; the build exercise's
known mistakes are also run twice, for the staged hints (symptom, then why,
then the fix only from ``checks.hint``).
"""

import math

import numpy as np
import pytest

from helpers.checks import (
    CheckFailed,
    check_half_entropy_temperature,
    check_predict_score_std,
    check_softmax_backward,
)
from tests.checks.catalogue import right, topic_tests, wrong
from tests.checks.staged import assert_staged
from tests.checks.test_scale import find_temperature, temperature_returns_scale

# --------------------------------------------------------------------------
# Right answers
# --------------------------------------------------------------------------


def score_std(d_k, scaled):
    return 1.0 if scaled else math.sqrt(d_k)


def score_std_sampled(d_k, scaled):
    """A learner who measures instead of deriving: within 5 % is right too.

    4000 pairs, not the checker's 20 000, at a fifth of the cost (the checker's
    runs are what the test is about): these draws are within 2.1 % of the
    exact spread (the worst at d_k = 1, where q.k has heavy tails), inside the
    checker's 5 %."""
    rng = np.random.default_rng(d_k)
    s = (rng.standard_normal((4_000, d_k)) * rng.standard_normal((4_000, d_k))).sum(1)
    return float((s / math.sqrt(d_k) if scaled else s).std())


def softmax_backward(a, g):
    return a * (g - (a * g).sum(axis=-1, keepdims=True))  # (..., m)


def softmax_backward_loop(a, g):
    """Row by row through the Jacobian: slow, but right."""
    out = np.empty_like(a)
    for index in np.ndindex(a.shape[:-1]):
        row = a[index]
        out[index] = (np.diag(row) - np.outer(row, row)) @ g[index]
    return out


# --------------------------------------------------------------------------
# Wrong answers
# --------------------------------------------------------------------------


def std_is_variance(d_k, scaled):
    return 1.0 if scaled else d_k


def std_scaled_shrinks(d_k, scaled):
    return 1 / math.sqrt(d_k) if scaled else math.sqrt(d_k)


def std_swapped(d_k, scaled):
    return math.sqrt(d_k) if scaled else 1.0


def temperature_one_fixed_set(raw_scores, target_entropy, low=1e-2, high=1e3):
    """Right on fresh scores, but hard-wired to another set for 100 rows."""
    if len(raw_scores) == 100:
        return 8.0
    return find_temperature(raw_scores, target_entropy, low, high)


def backward_no_shared_z(a, g):
    return a * g


def backward_unweighted(a, g):
    return a * (g - g.sum(axis=-1, keepdims=True))


def backward_without_a(a, g):
    return g - (a * g).sum(axis=-1, keepdims=True)


def backward_sign(a, g):
    return a * ((a * g).sum(axis=-1, keepdims=True) - g)


def backward_first_axis(a, g):
    return a * (g - (a * g).sum(axis=0, keepdims=True))


def backward_diagonal(a, g):
    return a * (1 - a) * g


def backward_no_keepdims(a, g):
    return a * (g - (a * g).sum(axis=-1))


def backward_einsum_jacobian(a, g):
    """Right values, but forms J, (..., m, m), for every row."""
    J = np.eye(a.shape[-1]) * a[..., None, :] - a[..., :, None] * a[..., None, :]
    return np.einsum("...ts,...t->...s", J, g)


RIGHT = [
    right(check_predict_score_std, score_std),
    right(check_predict_score_std, score_std_sampled),
    right(
        check_half_entropy_temperature,
        find_temperature,
        prints=r"✓ check_half_entropy_temperature: 3 fresh cases passed; on this "
        r"lesson's draws T = 3\.03, .+",
    ),
    right(check_softmax_backward, softmax_backward),
]

BACKWARD_WRONG = [
    (backward_no_shared_z, "uses only its own a_j and g_j"),
    (backward_unweighted, "not weighted by the weights a"),
    (backward_without_a, "not multiplied by a_j"),
    (backward_sign, "opposite sign"),
    (backward_first_axis, "your rows mix"),
    (backward_diagonal, "the diagonal of J times g only"),
    (backward_no_keepdims, "no longer lines up with the rows"),
    (softmax_backward_loop, "forms the (m, m) Jacobian"),
    (backward_einsum_jacobian, "forms the (m, m) Jacobian"),
]

WRONG = [
    *wrong(
        check_predict_score_std,
        [
            (std_is_variance, "grows like d_k itself"),
            (std_scaled_shrinks, "scaled prediction shrinks"),
            (std_swapped, "swapped"),
        ],
    ),
    *wrong(
        check_half_entropy_temperature,
        [
            (temperature_returns_scale, "returned 1/T"),
            (temperature_one_fixed_set, "not the lesson's draws"),
        ],
    ),
    *wrong(check_softmax_backward, BACKWARD_WRONG),
]

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


def test_the_sampled_answer_is_within_2_percent_of_the_exact_spread():
    errors = {
        (d_k, scaled): score_std_sampled(d_k, scaled) / score_std(d_k, scaled) - 1
        for d_k in (100, 9, 400, 1)
        for scaled in (False, True)
    }
    assert max(map(abs, errors.values())) <= 0.021, errors


@pytest.mark.parametrize(
    ("fn", "says"), BACKWARD_WRONG, ids=lambda x: getattr(x, "__name__", str(x))[:30]
)
def test_backward_hints_come_in_steps(fn, says, capsys):
    assert_staged(check_softmax_backward, (fn,), says, capsys)


@pytest.mark.parametrize(
    ("fn", "says"),
    [(std_is_variance, "grows like d_k"), (std_scaled_shrinks, "shrinks")],
)
def test_score_std_hints_come_in_steps(fn, says, capsys):
    assert_staged(check_predict_score_std, (fn,), says, capsys)


def test_the_lesson_draws_are_the_lessons():
    """The checker redraws lesson 04's scores: seed s gives q, then K."""
    from helpers.checks.sqrt_dk import lesson_draws

    rng = np.random.default_rng(3)
    q = rng.standard_normal(64)
    K = rng.standard_normal((32, 64))
    np.testing.assert_array_equal(lesson_draws()[3], K @ q)


def test_backward_reference_is_autograd():
    """The reference J^T g equals torch autograd on a batch of rows."""
    torch = pytest.importorskip("torch")
    from helpers.checks.sqrt_dk import _vjp_reference

    rng = np.random.default_rng(1)
    s = torch.tensor(rng.standard_normal((3, 4, 6)), requires_grad=True)
    g = torch.tensor(rng.standard_normal((3, 4, 6)))
    (torch.softmax(s, dim=-1) * g).sum().backward()
    a = torch.softmax(s, dim=-1).detach().numpy()
    np.testing.assert_allclose(_vjp_reference(a, g.numpy()), s.grad.numpy())


def test_no_code_in_the_first_message_of_a_lost_axis():
    """The keepdims fix is on checks.hint only, not in the first message."""
    with pytest.raises(CheckFailed) as info:
        check_softmax_backward(backward_no_keepdims)
    assert "keepdims=True" not in str(info.value)
    assert info.value.where.endswith("return a * (g - (a * g).sum(axis=-1))")


def test_the_right_answer_needs_little_memory(capsys):
    assert check_softmax_backward(softmax_backward) is True
    assert "m = 4096 keys" in capsys.readouterr().out
