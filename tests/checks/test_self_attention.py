"""check_self_attention (helpers.checks.self_attention), lesson 06.

Q, K and V are projections of the same X; the scale is sqrt(d_k), the columns
of W_Q, whatever d_v and d_model are.
"""

import math

import numpy as np
import pytest

from helpers import checks
from helpers.checks import CheckFailed, check_self_attention
from tests.checks.catalogue import right, simple_softmax, topic_tests, wrong


def self_attention(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    w = simple_softmax(Q @ K.T / math.sqrt(W_Q.shape[1]))
    return w @ V, w


def self_attention_sqrt_d_v(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    w = simple_softmax(Q @ K.T / math.sqrt(W_V.shape[1]))
    return w @ V, w


def self_attention_sqrt_d_model(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    w = simple_softmax(Q @ K.T / math.sqrt(X.shape[1]))
    return w @ V, w


def self_attention_naive(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    e = np.exp(Q @ K.T / math.sqrt(Q.shape[1]))
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, w


def self_attention_query_from_W_K(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_K, X @ W_K, X @ W_V
    w = simple_softmax(Q @ K.T / math.sqrt(W_Q.shape[1]))
    return w @ V, w


RIGHT = [right(check_self_attention, self_attention)]

WRONG = wrong(
    check_self_attention,
    [
        # lesson 06 exercise 2
        (self_attention_sqrt_d_v, "sqrt(d_v)"),
        (self_attention_sqrt_d_model, "sqrt(d_model)"),
        (self_attention_naive, "overflows"),
        # a slip inside the formula
        (self_attention_query_from_W_K, "wrong matrix"),
    ],
)

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


def self_attention_columns(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    w = simple_softmax(Q @ K.T / math.sqrt(W_Q.shape[-1]), axis=0)
    return w @ V, w


def test_the_axis_fix_uses_no_forbidden_helper(capsys):
    """6.2 forbids the course helpers: the fix is a sum, not softmax(...)."""
    for _ in range(2):
        with pytest.raises(CheckFailed):
            check_self_attention(self_attention_columns)
    capsys.readouterr()
    checks.hint("self_attention")
    out = capsys.readouterr().out
    assert "e.sum(axis=-1, keepdims=True)" in out and "softmax(" not in out
