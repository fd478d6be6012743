"""Lesson 01's build checker (helpers.checks.queries) against wrong answers.

``attention_each_query(Q, K, V, scale=None) -> (Y, weights, Z)``, written the
ways a learner would: loops over queries, a vectorised form, and the slips of
lesson 01, each rejected with its diagnosis.
"""

import math

import numpy as np
import pytest

from helpers import attention_np as anp
from helpers import checks
from tests.checks.catalogue import right, topic_tests, wrong
from tests.checks.staged import assert_staged


def _scale(q, scale):
    return 1 / math.sqrt(q.shape[-1]) if scale is None else scale


def each_loop(Q, K, V, scale=None):
    rows, weights, Z = [], [], []
    for t in range(Q.shape[0]):
        scores = K @ Q[t] * _scale(Q[t], scale)  # (m,)
        e = np.exp(scores - scores.max())  # (m,)
        weights.append(e / e.sum())
        rows.append(weights[-1] @ V)
        Z.append(np.exp(scores).sum())
    return np.stack(rows), np.stack(weights), np.array(Z)


def each_sqrt_d_v(Q, K, V, scale=None):
    return each_loop(Q, K, V, 1 / math.sqrt(V.shape[-1]) if scale is None else scale)


def each_stops_early(Q, K, V, scale=None):
    Y, weights, Z = each_loop(Q, K, V, scale)
    return Y[:-1], weights[:-1], Z[:-1]  # for t in range(n - 1)


def each_calls_the_helper(Q, K, V, scale=None):
    rows = [anp.attention_one_query(q, K, V, scale=scale) for q in Q]
    return tuple(np.stack([r[i] for r in rows]) for i in range(3))


def each_vectorised(Q, K, V, scale=None):
    scores = Q @ K.T * _scale(Q, scale)  # (n, m)
    e = np.exp(scores)  # (n, m)
    Z = e.sum(axis=1)  # (n,)
    weights = e / Z[:, None]  # (n, m)
    return weights @ V, weights, Z


def each_z_shifted(Q, K, V, scale=None):
    Y, weights, _ = each_loop(Q, K, V, scale)
    scores = Q @ K.T * _scale(Q, scale)
    return Y, weights, np.exp(scores - scores.max(axis=1, keepdims=True)).sum(axis=1)


def each_z_one(Q, K, V, scale=None):
    Y, weights, _ = each_loop(Q, K, V, scale)
    return Y, weights, weights.sum(axis=1)


def each_z_shared(Q, K, V, scale=None):
    scores = Q @ K.T * _scale(Q, scale)  # (n, m)
    e = np.exp(scores)
    weights = e / e.sum(axis=1, keepdims=True)
    return weights @ V, weights, np.full(len(Q), e.sum())


def each_no_scale(Q, K, V, scale=None):
    return each_loop(Q, K, V, 1.0 if scale is None else scale)


def each_scale_ignored(Q, K, V, scale=None):
    return each_loop(Q, K, V)


def each_over_queries(Q, K, V, scale=None):
    scores = Q @ K.T * _scale(Q, scale)
    e = np.exp(scores)
    weights = e / e.sum(axis=0, keepdims=True)  # softmax down each column
    return weights @ V, weights, e.sum(axis=1)


def each_no_1_over_z(Q, K, V, scale=None):
    scores = Q @ K.T * _scale(Q, scale)
    e = np.exp(scores)
    Z = e.sum(axis=1)
    return e @ V, e / Z[:, None], Z


def each_same_query(Q, K, V, scale=None):
    rows, weights, Z = [], [], []
    for _ in range(Q.shape[0]):
        y, w, z = each_loop(Q[:1], K, V, scale)  # the loop forgot its index
        rows.append(y[0]), weights.append(w[0]), Z.append(z[0])
    return np.stack(rows), np.stack(weights), np.array(Z)


def each_z_as_column(Q, K, V, scale=None):
    Y, weights, Z = each_loop(Q, K, V, scale)
    return Y, weights, Z[:, None]


RIGHT = [
    right(checks.check_attention_each_query, each_loop),
    right(checks.check_attention_each_query, each_vectorised),
]
WRONG = wrong(
    checks.check_attention_each_query,
    [
        (each_z_shifted, "the sum of exp(score - max)"),
        (each_z_one, "every Z[t] you return is 1"),
        (each_z_shared, "the sum over every query and key"),
        (each_no_scale, "raw dot products"),
        (each_scale_ignored, "still use 1 / sqrt(d_k)"),
        (each_over_queries, "columns sum to 1"),
        (each_no_1_over_z, "Z[t] times too large"),
        (each_same_query, "every row of your answer is query 0's"),
        (each_z_as_column, "`Z` has shape"),
        (each_sqrt_d_v, "sqrt(d_v)"),
        (each_stops_early, "one query short"),
        (each_calls_the_helper, "you called anp.attention_one_query"),
    ],
)
test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


@pytest.mark.parametrize(
    ("fn", "says"),
    [
        (each_z_shifted, "exp(max score) times too small"),
        (each_over_queries, "columns sum to 1"),
        (each_same_query, "query 0's"),
    ],
)
def test_hints_come_in_steps(fn, says, capsys):
    assert_staged(checks.check_attention_each_query, (fn,), says, capsys)
