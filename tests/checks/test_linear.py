"""check_delta_step, check_causal_linear_attention, check_linear_attention (lesson 12).

The right answers are written here as a learner would, with loops; each wrong
one is a mistake the checker must name (a keyword of its symptom).
"""

import math

import numpy as np
import pytest
import torch

from helpers import attention_np as anp
from helpers import attention_torch as atn  # the lesson imports it: refused too
from helpers.checks import (
    CheckFailed,
    check_causal_linear_attention,
    check_delta_step,
    check_linear_attention,
)
from tests.checks.catalogue import right, topic_tests, wrong

# --------------------------------------------------------------------------
# Right answers
# --------------------------------------------------------------------------


def read(S, x):
    """S^T x for S (..., d_k, d_v) and x (..., d_k)."""
    return np.einsum("...kv,...k->...v", S, x)


def delta_step(S, q, k, v, beta):
    prediction = read(S, k)  # (..., d_v): read first
    S_new = S + beta * k[..., :, None] * (v - prediction)[..., None, :]
    return S_new, read(S_new, q)


def delta_step_in_place(S, q, k, v, beta):
    """S is the learner's running state: changing it in place is allowed."""
    S += beta * k[..., :, None] * (v - read(S, k))[..., None, :]
    return S, read(S, q)


def causal_loop(phi_Q, phi_K, V):
    n, m = len(phi_Q), len(phi_K)
    S, z = np.zeros((phi_K.shape[1], V.shape[1])), np.zeros(phi_K.shape[1])
    out = np.zeros((n, V.shape[1]))
    for j in range(m):
        S = S + np.outer(phi_K[j], V[j])  # write key j
        z = z + phi_K[j]
        i = j - (m - n)  # then the query at its position reads
        if i >= 0:
            out[i] = phi_Q[i] @ S / (phi_Q[i] @ z)
    return out


def elu1(x):
    return np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))


def linear_quadratic(Q, K, V, feature_map=None, causal=False):
    phi = feature_map or elu1
    A = phi(Q) @ np.swapaxes(phi(K), -1, -2)  # (..., n, m)
    if causal:
        n, m = Q.shape[-2], K.shape[-2]
        A = A * (np.arange(m) <= np.arange(n)[:, None] + (m - n))  # lower-right
    return A @ V / A.sum(axis=-1, keepdims=True)


def linear_regrouped(Q, K, V, feature_map=None, causal=False):
    phi = feature_map if feature_map is not None else elu1
    fq, fk = phi(Q), phi(K)
    if not causal:
        S = np.swapaxes(fk, -1, -2) @ V  # (..., r, d_v)
        return fq @ S / (fq @ fk.sum(axis=-2)[..., None])
    n, m = Q.shape[-2], K.shape[-2]
    S = np.cumsum(fk[..., :, :, None] * V[..., :, None, :], axis=-3)  # (..., m, r, d_v)
    z = np.cumsum(fk, axis=-2)  # (..., m, r)
    S, z = S[..., m - n :, :, :], z[..., m - n :, :]  # the states the queries read
    return np.einsum("...nr,...nrv->...nv", fq, S) / (fq * z).sum(-1, keepdims=True)


# --------------------------------------------------------------------------
# Wrong answers, as a learner writes them
# --------------------------------------------------------------------------


def step_write_then_read(S, q, k, v, beta):
    S = S + beta * k[..., :, None] * v[..., None, :]  # write first
    prediction = read(S, k)  # then read: too late
    S = S - beta * k[..., :, None] * prediction[..., None, :]
    return S, read(S, q)


def step_linear_write(S, q, k, v, beta):
    S_new = S + beta * k[..., :, None] * v[..., None, :]
    return S_new, read(S_new, q)


def step_sign(S, q, k, v, beta):
    S_new = S + beta * k[..., :, None] * (read(S, k) - v)[..., None, :]
    return S_new, read(S_new, q)


def step_no_beta(S, q, k, v, beta):
    S_new = S + k[..., :, None] * (v - read(S, k))[..., None, :]
    return S_new, read(S_new, q)


def step_y_old(S, q, k, v, beta):
    S_new = S + beta * k[..., :, None] * (v - read(S, k))[..., None, :]
    return S_new, read(S, q)


def step_outer_swapped(S, q, k, v, beta):
    S_new = S + beta * np.outer(v - S.T @ k, k)  # (d_v, d_k): the other way round
    return S_new, S_new @ q


def causal_no_z(phi_Q, phi_K, V):
    n, m = len(phi_Q), len(phi_K)
    S, out = np.zeros((phi_K.shape[1], V.shape[1])), np.zeros((n, V.shape[1]))
    for j in range(m):
        S = S + np.outer(phi_K[j], V[j])
        if j >= m - n:
            out[j - (m - n)] = phi_Q[j - (m - n)] @ S
    return out


def causal_read_before_write(phi_Q, phi_K, V):
    n, m = len(phi_Q), len(phi_K)
    S, z = np.zeros((phi_K.shape[1], V.shape[1])), np.zeros(phi_K.shape[1])
    out = np.zeros((n, V.shape[1]))
    for j in range(m):
        i = j - (m - n)
        if i >= 0:  # reads the state before key j is in it
            zq = phi_Q[i] @ z
            out[i] = phi_Q[i] @ S / zq if zq > 0 else 0.0
        S = S + np.outer(phi_K[j], V[j])
        z = z + phi_K[j]
    return out


def causal_upper_left(phi_Q, phi_K, V):
    n = len(phi_Q)
    S, z = np.zeros((phi_K.shape[1], V.shape[1])), np.zeros(phi_K.shape[1])
    out = np.zeros((n, V.shape[1]))
    for i in range(n):  # query i reads after key i: positions from the start
        S = S + np.outer(phi_K[i], V[i])
        z = z + phi_K[i]
        out[i] = phi_Q[i] @ S / (phi_Q[i] @ z)
    return out


def causal_z_last(phi_Q, phi_K, V):
    n, m = len(phi_Q), len(phi_K)
    S, out = np.zeros((phi_K.shape[1], V.shape[1])), np.zeros((n, V.shape[1]))
    for j in range(m):
        S = S + np.outer(phi_K[j], V[j])
        z = phi_K[j]  # not accumulated
        if j >= m - n:
            out[j - (m - n)] = phi_Q[j - (m - n)] @ S / (phi_Q[j - (m - n)] @ z)
    return out


def causal_everything(phi_Q, phi_K, V):
    S, z = phi_K.T @ V, phi_K.sum(axis=0)
    return phi_Q @ S / (phi_Q @ z)[:, None]


def causal_off_by_one(phi_Q, phi_K, V):
    n, m = len(phi_Q), len(phi_K)
    S, z = np.zeros((phi_K.shape[1], V.shape[1])), np.zeros(phi_K.shape[1])
    out = np.zeros((n, V.shape[1]))
    for j in range(m):
        S = S + np.outer(phi_K[j], V[j])
        z = z + phi_K[j]
        i = j - (m - n - 1)  # one off: query i reads after key i + m - n - 1
        if 0 <= i < n:
            out[i] = phi_Q[i] @ S / (phi_Q[i] @ z)
    return out


def causal_read_first_unguarded(phi_Q, phi_K, V):
    n, m = len(phi_Q), len(phi_K)
    S, z = np.zeros((phi_K.shape[1], V.shape[1])), np.zeros(phi_K.shape[1])
    out = np.zeros((n, V.shape[1]))
    for j in range(m):
        i = j - (m - n)
        if i >= 0:  # reads first: with n = m query 0 divides 0 by 0
            out[i] = phi_Q[i] @ S / (phi_Q[i] @ z)
        S = S + np.outer(phi_K[j], V[j])
        z = z + phi_K[j]
    return out


def causal_masked_parallel(phi_Q, phi_K, V):
    """Cell 14's parallel form, pasted: right numbers, the (n, m) matrix."""
    A = phi_Q @ phi_K.T * anp.causal_mask(len(phi_Q), len(phi_K))  # (n, m)
    return A @ V / A.sum(axis=1, keepdims=True)


def causal_tril(phi_Q, phi_K, V):
    n, m = len(phi_Q), len(phi_K)
    A = np.tril(phi_Q @ phi_K.T, k=m - n)  # (n, m), without the helper
    return A @ V / A.sum(axis=1, keepdims=True)


def causal_helper(phi_Q, phi_K, V):
    return anp.linear_attention(phi_Q, phi_K, V, feature_map=lambda x: x, causal=True)


def linear_calls_helper(Q, K, V, feature_map=None, causal=False):
    return anp.linear_attention(Q, K, V, feature_map=feature_map, causal=causal)


def linear_calls_torch_helper(Q, K, V, feature_map=None, causal=False):
    args = (torch.from_numpy(x) for x in (Q, K, V))
    return atn.linear_attention(*args, causal=causal).numpy()


def linear_torch_elu(Q, K, V, feature_map=None, causal=False):
    import torch.nn.functional as F  # noqa: N812

    phi = feature_map or (lambda x: F.elu(x) + 1)
    return linear_regrouped(Q, K, V, phi, causal)


def linear_z_wrong_axis(Q, K, V, feature_map=None, causal=False):
    phi = feature_map if feature_map is not None else elu1
    fq, fk = phi(Q), phi(K)
    if not causal:
        return linear_regrouped(Q, K, V, feature_map, False)
    n, m = Q.shape[-2], K.shape[-2]
    S = np.cumsum(fk[..., :, :, None] * V[..., :, None, :], axis=-3)  # (..., m, r, d_v)
    z = np.cumsum(fk, axis=-1)  # over the features, not the keys
    S, z = S[..., m - n :, :, :], z[..., m - n :, :]
    return np.einsum("...nr,...nrv->...nv", fq, S) / (fq * z).sum(-1, keepdims=True)


def linear_s_raw_k(Q, K, V, feature_map=None, causal=False):
    phi = feature_map if feature_map is not None else elu1
    fq, fk = phi(Q), phi(K)
    S = np.swapaxes(K, -1, -2) @ V  # raw keys
    z = fk.sum(axis=-2)[..., None]
    return fq @ S / (fq @ z)


def linear_state_d_k(Q, K, V, feature_map=None, causal=False):
    """The running state sized with d_k: right only while r == d_k."""
    phi = feature_map or elu1
    fq, fk = phi(Q), phi(K)
    n, m, d_k, d_v = Q.shape[-2], K.shape[-2], K.shape[-1], V.shape[-1]
    if not causal:
        return linear_regrouped(Q, K, V, feature_map, False)
    S = np.zeros((*K.shape[:-2], d_k, d_v))  # (..., d_k, d_v): should be r
    z = np.zeros((*K.shape[:-2], d_k))
    out = np.zeros((*Q.shape[:-2], n, d_v))
    for j in range(m):
        S = S + fk[..., j, :, None] * V[..., j, None, :]
        z = z + fk[..., j, :]
        i = j - (m - n)
        if i >= 0:
            num = np.einsum("...r,...rv->...v", fq[..., i, :], S)
            out[..., i, :] = num / (fq[..., i, :] * z).sum(-1, keepdims=True)
    return out


def linear_masked_causal(Q, K, V, feature_map=None, causal=False):
    """Regrouped when not causal, the (n, m) mask when causal: right numbers."""
    if not causal:
        return linear_regrouped(Q, K, V, feature_map, False)
    return linear_quadratic(Q, K, V, feature_map, True)


def linear_no_z(Q, K, V, feature_map=None, causal=False):
    phi = feature_map or elu1
    A = phi(Q) @ np.swapaxes(phi(K), -1, -2)
    if causal:
        A = A * anp.causal_mask(Q.shape[-2], K.shape[-2])
    return A @ V


def linear_elu(Q, K, V, feature_map=None, causal=False):
    phi = feature_map or (lambda x: np.where(x > 0, x, np.exp(np.minimum(x, 0)) - 1))
    A = phi(Q) @ np.swapaxes(phi(K), -1, -2)
    if causal:
        A = A * anp.causal_mask(Q.shape[-2], K.shape[-2])
    return A @ V / A.sum(axis=-1, keepdims=True)


def linear_ignores_map(Q, K, V, feature_map=None, causal=False):
    return linear_quadratic(Q, K, V, None, causal)


def linear_ignores_causal(Q, K, V, feature_map=None, causal=False):
    return linear_regrouped(Q, K, V, feature_map, False)


def linear_upper_left(Q, K, V, feature_map=None, causal=False):
    phi = feature_map or elu1
    A = phi(Q) @ np.swapaxes(phi(K), -1, -2)
    if causal:
        A = np.tril(A)  # upper-left
    return A @ V / A.sum(axis=-1, keepdims=True)


def linear_softmax(Q, K, V, feature_map=None, causal=False):
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    mask = anp.causal_mask(Q.shape[-2], K.shape[-2]) if causal else None
    return anp.scaled_dot_product_attention(Q, K, V, mask=mask)[0] + 0 * scores[..., :1]


RIGHT = [
    right(check_delta_step, delta_step),
    right(check_delta_step, delta_step_in_place),
    right(check_causal_linear_attention, causal_loop),
    right(check_linear_attention, anp.linear_attention, id="linear-helper"),
    right(check_linear_attention, linear_regrouped),
]

WRONG = [
    *wrong(
        check_delta_step,
        [
            (step_write_then_read, "already holds k v^T"),
            (step_linear_write, "linear attention's write"),
            (step_sign, "wrong sign"),
            (step_no_beta, "ignores the write strength"),
            (step_y_old, "y is read from the old state"),
            (step_outer_swapped, "raised ValueError"),
        ],
    ),
    *wrong(
        check_causal_linear_attention,
        [
            (causal_no_z, "without dividing by the normaliser"),
            (causal_read_before_write, "misses its own key"),
            (causal_upper_left, "aligned upper-left"),
            (causal_z_last, "only the newest key"),
            (causal_everything, "not causal"),
            (causal_off_by_one, "m - n - 1, one off"),
            (causal_read_first_unguarded, "misses its own key"),
            (causal_masked_parallel, "you called anp.causal_mask"),
            (causal_helper, "you called anp.linear_attention"),
            (causal_tril, "builds an (n, m) array"),
        ],
    ),
    *wrong(
        check_linear_attention,
        [
            (linear_no_z, "without the normaliser"),
            (linear_elu, "gives negative features"),
            (linear_ignores_map, "the default elu(x) + 1's"),
            (linear_ignores_causal, "still sees every key"),
            (linear_upper_left, "aligned upper-left"),
            (linear_softmax, "softmax attention's"),
            (linear_state_d_k, "sized with d_k"),
            (linear_quadratic, "builds an (..., n, m) array"),
            (linear_masked_causal, "(causal=True) it needed"),
            (linear_calls_helper, "you called anp.linear_attention"),
            (linear_calls_torch_helper, "atn.linear_attention"),
            (linear_torch_elu, "calls torch on NumPy arrays"),
            (linear_z_wrong_axis, "another axis than the key axis"),
            (linear_s_raw_k, "built from the raw keys"),
        ],
    ),
]

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


# --------------------------------------------------------------------------
# Where a failure says to look: the learner's faulty line, not their return
# --------------------------------------------------------------------------


def step_y_old_named(S, q, k, v, beta):
    S_new = S + beta * k[..., :, None] * (v - read(S, k))[..., None, :]
    y = read(S, q)  # the old state
    return S_new, y


def step_no_beta_named(S, q, k, v, beta):
    prediction = read(S, k)
    S_new = S + k[..., :, None] * (v - prediction)[..., None, :]
    y = read(S_new, q)
    return S_new, y


def linear_quadratic_named(Q, K, V, feature_map=None, causal=False):
    phi = feature_map or elu1
    A = phi(Q) @ np.swapaxes(phi(K), -1, -2)  # (..., n, m): the culprit
    if causal:
        n, m = Q.shape[-2], K.shape[-2]
        A = A * (np.arange(m) <= np.arange(n)[:, None] + (m - n))
    out = A @ V / A.sum(axis=-1, keepdims=True)
    return out


@pytest.mark.parametrize(
    ("checker", "fn", "line"),
    [
        (check_delta_step, step_y_old_named, "y = read(S, q)"),
        (check_delta_step, step_no_beta_named, "S_new = S + k[..., :, None]"),
        (check_causal_linear_attention, causal_off_by_one, "i = j - (m - n - 1)"),
        (check_causal_linear_attention, causal_tril, "A = np.tril("),
        (check_linear_attention, linear_quadratic_named, "A = phi(Q) @ np.swapaxes"),
    ],
    ids=["y-line", "write-line", "offset-line", "tril-line", "product-line"],
)
def test_look_at_names_the_faulty_line(checker, fn, line):
    with pytest.raises(CheckFailed) as info:
        checker(fn)
    look_at = str(info.value).split("Look at:")[-1]
    assert line in look_at
