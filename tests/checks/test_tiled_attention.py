"""The checker of lesson 08's build exercise (helpers.checks.tiled_attention).

Each wrong answer is written as a learner would write it and must be rejected
with its diagnosis: the symptom names the mistake, and never holds the fix.
"""

import math

import numpy as np
import pytest

from helpers import attention_np as anp
from helpers import checks
from helpers.checks import CheckFailed
from helpers.checks.tiled_attention import check_causal_tiled_attention
from tests.checks.catalogue import right, topic_tests, wrong
from tests.checks.staged import assert_staged

# --------------------------------------------------------------------------
# Exercise 8.3: causal tiles, skipping the empty ones (the build exercise)
# --------------------------------------------------------------------------


def causal_tiled(Q, K, V, block_q, block_k, *, skip_rule=None, mask=True, rescale=True):
    """A learner's loop; the keywords switch on the mistakes the tests try."""
    n, d_k = Q.shape
    m = K.shape[0]
    out = np.zeros((n, V.shape[1]))
    tiles = 0
    for q0 in range(0, n, block_q):
        q1 = min(q0 + block_q, n)
        qi = np.arange(q0, q1)[:, None]
        run_max = np.full((q1 - q0, 1), -np.inf)
        run_z = np.zeros((q1 - q0, 1))
        acc = np.zeros((q1 - q0, V.shape[1]))
        for k0 in range(0, m, block_k):
            k1 = min(k0 + block_k, m)
            empty = (
                k0 > q1 - 1 + (m - n)
                if skip_rule is None
                else skip_rule(q0, q1, k0, n, m)
            )
            if empty:
                break
            tiles += 1
            S = Q[q0:q1] @ K[k0:k1].T / math.sqrt(d_k)
            if mask:
                S = np.where(np.arange(k0, k1)[None] <= qi + (m - n), S, -np.inf)
            new = np.maximum(run_max, S.max(axis=1, keepdims=True))
            shift = np.where(np.isfinite(new), new, 0.0)
            P = np.exp(S - shift)
            c = np.exp(run_max - shift) if rescale else 1.0
            run_z = c * run_z + P.sum(axis=1, keepdims=True)
            acc = c * acc + P @ V[k0:k1]
            run_max = new
        out[q0:q1] = acc / np.where(run_z == 0, 1.0, run_z)
    return out, tiles


def tiled_right(Q, K, V, block_q, block_k):
    return causal_tiled(Q, K, V, block_q, block_k)


def tiled_first_query(Q, K, V, block_q, block_k):
    return causal_tiled(
        Q, K, V, block_q, block_k, skip_rule=lambda q0, q1, k0, n, m: k0 > q0 + m - n
    )


def tiled_one_late(Q, K, V, block_q, block_k):
    rule = lambda q0, q1, k0, n, m: k0 > q1 - 1 + m - n + block_k  # noqa: E731
    return causal_tiled(Q, K, V, block_q, block_k, skip_rule=rule)


def tiled_upper_left(Q, K, V, block_q, block_k):
    n, d_k = Q.shape
    m = K.shape[0]
    allowed = np.arange(m)[None] <= np.arange(n)[:, None]  # j <= i
    out, tiles = np.zeros((n, V.shape[1])), 0
    for q0 in range(0, n, block_q):
        q1 = min(q0 + block_q, n)
        rows = slice(q0, q1)
        S_parts, V_parts = [], []
        for k0 in range(0, m, block_k):
            if k0 > q1 - 1:
                break
            tiles += 1
            S = Q[rows] @ K[k0 : k0 + block_k].T / math.sqrt(d_k)
            S_parts.append(np.where(allowed[rows, k0 : k0 + block_k], S, -np.inf))
            V_parts.append(V[k0 : k0 + block_k])
        if S_parts:
            S = np.concatenate(S_parts, axis=1)
            w = np.exp(S - S.max(axis=1, keepdims=True))
            out[rows] = (w / w.sum(axis=1, keepdims=True)) @ np.concatenate(V_parts)
    return out, tiles


def tiled_only_full_tiles(Q, K, V, block_q, block_k):
    rule = lambda q0, q1, k0, n, m: k0 + block_k - 1 > q0 + m - n  # noqa: E731
    return causal_tiled(Q, K, V, block_q, block_k, skip_rule=rule)


def tiled_unguarded(Q, K, V, block_q, block_k):
    n, d_k = Q.shape
    m = K.shape[0]
    out, tiles = np.zeros((n, V.shape[1])), 0
    for q0 in range(0, n, block_q):
        q1 = min(q0 + block_q, n)
        qi = np.arange(q0, q1)[:, None]
        run_max = np.full((q1 - q0, 1), -np.inf)
        run_z = np.zeros((q1 - q0, 1))
        acc = np.zeros((q1 - q0, V.shape[1]))
        for k0 in range(0, m, block_k):
            if k0 > q1 - 1 + (m - n):
                break
            tiles += 1
            S = Q[q0:q1] @ K[k0 : k0 + block_k].T / math.sqrt(d_k)
            keys = np.arange(k0, min(k0 + block_k, m))[None]
            S = np.where(keys <= qi + (m - n), S, -np.inf)
            new = np.maximum(run_max, S.max(axis=1, keepdims=True))
            P = np.exp(S - new)
            c = np.exp(run_max - new)
            run_z = c * run_z + P.sum(axis=1, keepdims=True)
            acc = c * acc + P @ V[k0 : k0 + block_k]
            run_max = new
        out[q0:q1] = acc / run_z
    return out, tiles


def tiled_no_mask(Q, K, V, block_q, block_k):
    return causal_tiled(Q, K, V, block_q, block_k, mask=False)


def tiled_no_rescale(Q, K, V, block_q, block_k):
    return causal_tiled(Q, K, V, block_q, block_k, rescale=False)


def tiled_full_mask(Q, K, V, block_q, block_k):
    mask = anp.causal_mask(Q.shape[0], K.shape[0])
    out, _ = anp.scaled_dot_product_attention(Q, K, V, mask=mask)
    return out, 0


def tiled_skip_equal(Q, K, V, block_q, block_k):
    rule = lambda q0, q1, k0, n, m: k0 >= q1 - 1 + m - n  # noqa: E731
    return causal_tiled(Q, K, V, block_q, block_k, skip_rule=rule)


def tiled_acc_only_rescaled(Q, K, V, block_q, block_k):
    n, d_k = Q.shape
    m = K.shape[0]
    out, tiles = np.zeros((n, V.shape[1])), 0
    for q0 in range(0, n, block_q):
        q1 = min(q0 + block_q, n)
        qi = np.arange(q0, q1)[:, None]
        run_max = np.full((q1 - q0, 1), -np.inf)
        run_z = np.zeros((q1 - q0, 1))
        acc = np.zeros((q1 - q0, V.shape[1]))
        for k0 in range(0, m, block_k):
            if k0 > q1 - 1 + (m - n):
                break
            tiles += 1
            k1 = min(k0 + block_k, m)
            S = Q[q0:q1] @ K[k0:k1].T / math.sqrt(d_k)
            S = np.where(np.arange(k0, k1)[None] <= qi + (m - n), S, -np.inf)
            new = np.maximum(run_max, S.max(axis=1, keepdims=True))
            shift = np.where(np.isfinite(new), new, 0.0)
            P = np.exp(S - shift)
            run_z += P.sum(axis=1, keepdims=True)
            acc = np.exp(run_max - shift) * acc + P @ V[k0:k1]
            run_max = new
        out[q0:q1] = acc / np.where(run_z == 0, 1.0, run_z)
    return out, tiles


def tiled_whole_matrix(Q, K, V, block_q, block_k):
    """The matrix form written out, and a computed tile count: no tiles at all."""
    n, m = Q.shape[0], K.shape[0]
    allowed = np.arange(m)[None, :] <= np.arange(n)[:, None] + (m - n)
    S = np.where(allowed, Q @ K.T / math.sqrt(Q.shape[1]), -np.inf)
    top = S.max(axis=1, keepdims=True)
    P = np.exp(S - np.where(np.isfinite(top), top, 0.0))
    z = P.sum(axis=1, keepdims=True)
    tiles = sum(
        bool(allowed[q0 : q0 + block_q, k0 : k0 + block_k].any())
        for q0 in range(0, n, block_q)
        for k0 in range(0, m, block_k)
    )
    return (P @ V) / np.where(z == 0, 1.0, z), tiles


def tiled_no_skip(Q, K, V, block_q, block_k):
    return causal_tiled(
        Q, K, V, block_q, block_k, skip_rule=lambda q0, q1, k0, n, m: False
    )


RIGHT = [right(check_causal_tiled_attention, tiled_right)]
WRONG = wrong(
    check_causal_tiled_attention,
    [
        (tiled_first_query, "looks at the tile's first query"),
        (tiled_one_late, "one key tile too many"),
        (tiled_upper_left, "aligned upper-left"),
        (tiled_no_mask, "blocked pairs are not masked"),
        (tiled_no_rescale, "not rescaled"),
        (tiled_no_skip, "nothing was skipped"),
        (tiled_only_full_tiles, "skipped the diagonal tiles too"),
        (tiled_unguarded, "NaN in rows that have seen no key"),
        (tiled_full_mask, "you called anp.causal_mask"),
        (tiled_skip_equal, "starts exactly at the last query's reach"),
        (tiled_acc_only_rescaled, "not both"),
        (tiled_whole_matrix, "a whole (n, m) score or mask matrix"),
    ],
)
test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


@pytest.mark.parametrize("fn", [tiled_first_query, tiled_no_rescale])
def test_the_symptom_names_the_mistake_without_the_fix(fn):
    with pytest.raises(CheckFailed) as info:
        check_causal_tiled_attention(fn)
    mistake = info.value.mistake
    assert mistake is not None and mistake.why and mistake.fix
    assert mistake.fix not in mistake.symptom


def test_the_helpers_work_again_after_a_refused_call():
    with pytest.raises(CheckFailed):
        check_causal_tiled_attention(tiled_full_mask)
    assert anp.causal_mask(2, 3).shape == (2, 3)  # restored after the check


def test_an_unsolved_stub_gets_the_short_message():
    def stub(*args):
        raise NotImplementedError("Exercise: replace this line with your code")

    with pytest.raises(CheckFailed, match="not implemented yet"):
        check_causal_tiled_attention(stub)


BUILD_WRONG = [
    (tiled_first_query, "looks at the tile's first query"),
    (tiled_one_late, "one key tile too many"),
    (tiled_upper_left, "aligned upper-left"),
    (tiled_no_mask, "blocked pairs are not masked"),
    (tiled_no_rescale, "not rescaled"),
]


@pytest.mark.parametrize(
    ("fn", "says"), BUILD_WRONG, ids=lambda x: getattr(x, "__name__", str(x))[:30]
)
def test_build_hints_come_in_steps(fn, says, capsys):
    assert_staged(checks.check_causal_tiled_attention, (fn,), says, capsys)


@pytest.mark.parametrize(
    ("fn", "line"),
    [
        (tiled_skip_equal, "rule = lambda"),
        (tiled_acc_only_rescaled, "run_z +="),
        (tiled_whole_matrix, "allowed = np.arange(m)"),
        (tiled_full_mask, "anp.causal_mask("),
    ],
)
def test_look_at_quotes_the_learners_line(fn, line):
    with pytest.raises(CheckFailed) as info:
        check_causal_tiled_attention(fn)
    assert line in info.value.where
    assert "Refused" not in str(info.value)
    assert "_Helper" not in str(info.value)
