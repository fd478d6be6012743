"""helpers.checks.layer, lesson 06: a whole self-attention layer
(projections, scale, causal mask, output projection) built from a blank cell.

Each wrong answer is written as a learner would write it; the build exercise's
known mistakes are also run twice, for the staged hints.
"""

import math

import numpy as np
import pytest

from helpers.checks import CheckFailed, check_self_attention_layer
from tests.checks.catalogue import right, simple_softmax, topic_tests, wrong
from tests.checks.staged import assert_staged

# --------------------------------------------------------------------------
# Right answers
# --------------------------------------------------------------------------


def layer(X, W_Q, W_K, W_V, W_O, causal=False):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # (..., n, d_k), ..., (..., n, d_v)
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(W_Q.shape[-1])  # (..., n, n)
    if causal:
        n = X.shape[-2]
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    weights = simple_softmax(scores)  # (..., n, n)
    return weights @ V @ W_O, weights


def layer_einsum(X, W_Q, W_K, W_V, W_O, causal=False):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    scores = np.einsum("...id,...jd->...ij", Q, K) / math.sqrt(Q.shape[-1])
    if causal:
        n = scores.shape[-1]
        scores = scores + np.triu(np.full((n, n), -np.inf), k=1)
    weights = simple_softmax(scores)
    return weights @ (V @ W_O), weights  # W_O first: the same product


# --------------------------------------------------------------------------
# Wrong answers
# --------------------------------------------------------------------------


def layer_no_w_o(X, W_Q, W_K, W_V, W_O, causal=False):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(W_Q.shape[-1])
    if causal:
        n = X.shape[-2]
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    weights = simple_softmax(scores)
    return weights @ V, weights


def layer_mask_ignored(X, W_Q, W_K, W_V, W_O, causal=False):
    return layer(X, W_Q, W_K, W_V, W_O)


def layer_triu(X, W_Q, W_K, W_V, W_O, causal=False):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(W_Q.shape[-1])
    if causal:
        n = X.shape[-2]
        scores = np.where(np.triu(np.ones((n, n), dtype=bool), k=1), scores, -np.inf)
    weights = np.nan_to_num(simple_softmax(scores))
    return weights @ V @ W_O, weights


def _masked_layer(X, W_Q, W_K, W_V, W_O, causal, allowed, blocked=-np.inf):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(W_Q.shape[-1])
    if causal:
        scores = np.where(allowed(X.shape[-2]), scores, blocked)
    weights = simple_softmax(scores)  # NaN on a row with no allowed key
    return weights @ V @ W_O, weights


def layer_not_tril(X, W_Q, W_K, W_V, W_O, causal=False):
    def allowed(n):
        return ~np.tril(np.ones((n, n), dtype=bool))

    return _masked_layer(X, W_Q, W_K, W_V, W_O, causal, allowed)


def layer_not_tril_1e9(X, W_Q, W_K, W_V, W_O, causal=False):
    def allowed(n):
        return ~np.tril(np.ones((n, n), dtype=bool))

    return _masked_layer(X, W_Q, W_K, W_V, W_O, causal, allowed, blocked=-1e9)


def layer_strict_tril(X, W_Q, W_K, W_V, W_O, causal=False):
    def allowed(n):
        return np.tril(np.ones((n, n), dtype=bool), k=-1)

    return _masked_layer(X, W_Q, W_K, W_V, W_O, causal, allowed)


def layer_k_dot_t(X, W_Q, W_K, W_V, W_O, causal=False):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    scores = Q @ K.T / math.sqrt(W_Q.shape[-1])
    if causal:
        n = X.shape[-2]
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    weights = simple_softmax(scores)
    return weights @ V @ W_O, weights


def layer_mask_after(X, W_Q, W_K, W_V, W_O, causal=False):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    weights = simple_softmax(Q @ np.swapaxes(K, -1, -2) / math.sqrt(W_Q.shape[-1]))
    if causal:
        weights = weights * np.tril(np.ones(weights.shape[-2:], dtype=bool))
    return weights @ V @ W_O, weights


def layer_d_model(X, W_Q, W_K, W_V, W_O, causal=False):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(X.shape[-1])
    if causal:
        n = X.shape[-2]
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    weights = simple_softmax(scores)
    return weights @ V @ W_O, weights


def layer_naive_exp(X, W_Q, W_K, W_V, W_O, causal=False):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(W_Q.shape[-1])
    if causal:
        n = X.shape[-2]
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    e = np.exp(scores)
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ V @ W_O, weights


RIGHT = [
    right(check_self_attention_layer, layer),
    right(check_self_attention_layer, layer_einsum),
]

LAYER_WRONG = [
    (layer_no_w_o, "the last step of the layer is missing"),
    (layer_mask_ignored, "the mask is not applied"),
    (layer_triu, "your weights sit on the future"),
    (layer_mask_after, "zeroed after the softmax"),
    (layer_d_model, "divided by sqrt(d_model)"),
    (layer_naive_exp, "e^score overflowed"),
    (layer_not_tril, "the mask's polarity is flipped"),
    (layer_not_tril_1e9, "the mask's polarity is flipped"),
    (layer_strict_tril, "no token attends itself"),
    (layer_k_dot_t, "`.T` reverses every axis of K"),
]

WRONG = wrong(check_self_attention_layer, LAYER_WRONG)

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


@pytest.mark.parametrize(
    ("fn", "says"), LAYER_WRONG, ids=lambda x: getattr(x, "__name__", str(x))[:30]
)
def test_layer_hints_come_in_steps(fn, says, capsys):
    assert_staged(check_self_attention_layer, (fn,), says, capsys)


def test_no_code_in_the_first_message_of_k_dot_t():
    """np.swapaxes is on checks.hint only; the first message says it in words."""
    with pytest.raises(CheckFailed) as info:
        check_self_attention_layer(layer_k_dot_t)
    assert "swapaxes" not in str(info.value)
    assert info.value.where.endswith("scores = Q @ K.T / math.sqrt(W_Q.shape[-1])")
