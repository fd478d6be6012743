"""linear_attention and delta_rule (lesson 12): property tests and bad input.

Hypothesis draws the shapes (batch axes 0-2, n and m 1..7, d_k and d_v 1..6)
and a seed. References, each written here independently of the helpers:

- the quadratic form: phi(Q) phi(K)^T, masked lower-right when causal,
  normalised row by row, times V (float64);
- the loop: one query and one key at a time, in plain Python;
- the other module (NumPy against PyTorch, and back).

The delta rule is checked against its loop definition, recalls orthonormal
keys exactly, recalls the key it wrote last exactly at beta = 1 (unit keys),
and swept repeatedly over m <= d_k linearly independent unit keys reaches the
minimum-norm least-squares memory, np.linalg.lstsq's.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import attention_np as anp
from helpers import attention_torch as atn

FAST = settings(max_examples=30, deadline=None, derandomize=True, database=None)

batch_shapes = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)
sizes = st.integers(1, 7)
features = st.integers(1, 6)
seeds = st.integers(0, 2**32 - 1)


def elu_plus_one(x):
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def quadratic_form(Q, K, V, phi=elu_plus_one, causal=False):
    """Normalise phi(Q) phi(K)^T (masked) row by row, times V; empty rows give 0."""
    n, m = Q.shape[-2], K.shape[-2]
    A = phi(Q) @ np.swapaxes(phi(K), -1, -2)  # (..., n, m)
    if causal:
        A = A * (np.arange(m)[None, :] <= np.arange(n)[:, None] + (m - n))
    Z = A.sum(axis=-1, keepdims=True)  # (..., n, 1)
    return np.where(Z > 0, A @ V / np.where(Z > 0, Z, 1.0), 0.0)


def loop_form(q_rows, k_rows, v_rows, phi, causal):
    """One (n, m) sequence in plain Python: sum_j sim(q_i, k_j) v_j / Z_i."""
    n, m = len(q_rows), len(k_rows)
    out = []
    for i in range(n):
        num, Z = [0.0] * len(v_rows[0]), 0.0
        for j in range(m):
            if causal and j > i + (m - n):
                continue
            sim = sum(
                a * b for a, b in zip(phi(q_rows[i]), phi(k_rows[j]), strict=True)
            )
            Z += sim
            num = [s + sim * v for s, v in zip(num, v_rows[j], strict=True)]
        out.append([s / Z if Z > 0 else 0.0 for s in num])
    return np.array(out)


def delta_loop(Q, K, V, beta):
    """The delta rule for one sequence, written with explicit loops."""
    n, d_k = K.shape
    d_v = V.shape[1]
    S = [[0.0] * d_v for _ in range(d_k)]
    y = []
    for t in range(n):
        pred = [sum(S[a][b] * K[t][a] for a in range(d_k)) for b in range(d_v)]
        for a in range(d_k):
            for b in range(d_v):
                S[a][b] += beta[t] * K[t][a] * (V[t][b] - pred[b])
        y.append([sum(S[a][b] * Q[t][a] for a in range(d_k)) for b in range(d_v)])
    return np.array(y)


def draw(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in shapes]


@FAST
@given(batch_shapes, sizes, sizes, features, features, seeds, st.booleans())
def test_linear_attention_equals_the_quadratic_form_in_both_modules(
    batch, n, m, d_k, d_v, seed, causal
):
    Q, K, V = draw(seed, (*batch, n, d_k), (*batch, m, d_k), (*batch, m, d_v))
    expected = quadratic_form(Q, K, V, causal=causal)  # (..., n, d_v)
    got_np = anp.linear_attention(Q, K, V, causal=causal)
    got_t = atn.linear_attention(*map(torch.from_numpy, (Q, K, V)), causal=causal)
    np.testing.assert_allclose(got_np, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_t.numpy(), got_np, rtol=1e-10, atol=1e-12)


@FAST
@given(sizes, sizes, features, features, seeds, st.booleans())
def test_linear_attention_equals_the_loop_with_a_given_feature_map(
    n, m, d_k, d_v, seed, causal
):
    Q, K, V = draw(seed, (n, d_k), (m, d_k), (m, d_v))
    W = np.random.default_rng(seed + 1).standard_normal((d_k, 3))  # (d_k, r = 3)

    def phi_np(x):  # positive random features: exp(x W - |x|^2 / 2)
        return np.exp(x @ W - (x**2).sum(-1, keepdims=True) / 2) / math.sqrt(3)

    def phi_t(x):
        Wt = torch.from_numpy(W)
        return torch.exp(x @ Wt - (x**2).sum(-1, keepdim=True) / 2) / math.sqrt(3)

    def phi_row(row):
        return list(phi_np(np.array([row]))[0])

    expected = loop_form(Q.tolist(), K.tolist(), V.tolist(), phi_row, causal)
    got_np = anp.linear_attention(Q, K, V, feature_map=phi_np, causal=causal)
    got_t = atn.linear_attention(
        *map(torch.from_numpy, (Q, K, V)), feature_map=phi_t, causal=causal
    )
    np.testing.assert_allclose(got_np, expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got_t.numpy(), expected, rtol=1e-9, atol=1e-12)


def test_causal_with_n_equal_m_is_the_recurrence_and_early_rows_ignore_later_keys():
    Q, K, V = draw(3, (6, 4), (6, 4), (6, 5))
    full = anp.linear_attention(Q, K, V, causal=True)  # (6, 5)
    K2, V2 = K.copy(), V.copy()
    K2[4:], V2[4:] = 10.0, -3.0  # change the future of rows 0..3
    changed = anp.linear_attention(Q, K2, V2, causal=True)
    np.testing.assert_allclose(changed[:4], full[:4], rtol=1e-12)
    assert not np.allclose(changed[4:], full[4:])


def test_more_queries_than_keys_gives_zeros_for_the_queries_that_see_nothing():
    Q, K, V = draw(4, (5, 3), (2, 3), (2, 4))
    for module, wrap in ((anp, np.asarray), (atn, torch.from_numpy)):
        out = np.asarray(module.linear_attention(*map(wrap, (Q, K, V)), causal=True))
        assert np.all(out[:3] == 0)
        np.testing.assert_allclose(out[3:], quadratic_form(Q, K, V, causal=True)[3:])


@pytest.mark.parametrize("module", [anp, atn], ids=["numpy", "torch"])
def test_float32_stays_float32(module):
    Q, K, V = (x.astype(np.float32) for x in draw(5, (3, 4), (5, 4), (5, 2)))
    args = (Q, K, V) if module is anp else tuple(map(torch.from_numpy, (Q, K, V)))
    for causal in (False, True):
        assert str(module.linear_attention(*args, causal=causal).dtype).endswith(
            "float32"
        )
    K_, V_ = args[1], args[2]
    assert str(module.delta_rule(K_, K_, V_, 0.5).dtype).endswith("float32")


# delta_rule ---------------------------------------------------------------------


@FAST
@given(batch_shapes, sizes, features, features, seeds, st.booleans())
def test_delta_rule_equals_its_loop_in_both_modules(batch, n, d_k, d_v, seed, per_step):
    Q, K, V = draw(seed, (*batch, n, d_k), (*batch, n, d_k), (*batch, n, d_v))
    rng = np.random.default_rng(seed + 7)
    beta = rng.uniform(0.05, 1.0, (*batch, n)) if per_step else 0.7
    got = anp.delta_rule(Q, K, V, beta)  # (..., n, d_v)
    got_t = atn.delta_rule(
        *map(torch.from_numpy, (Q, K, V)),
        torch.from_numpy(beta) if per_step else beta,
    )
    betas = np.broadcast_to(beta, (*batch, n))
    for index in np.ndindex(*batch):
        expected = delta_loop(Q[index], K[index], V[index], betas[index])
        np.testing.assert_allclose(got[index], expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got_t.numpy(), got, rtol=1e-10, atol=1e-12)


def unit_keys(rng, m, d_k):
    K = rng.standard_normal((m, d_k))
    return K / np.linalg.norm(K, axis=1, keepdims=True)  # (m, d_k)


def test_delta_rule_recalls_orthonormal_keys_exactly_up_to_d_k():
    d_k, d_v = 8, 5
    rng = np.random.default_rng(0)
    K = np.linalg.qr(rng.standard_normal((d_k, d_k)))[0]  # (d_k, d_k) orthonormal
    V = rng.standard_normal((d_k, d_v))  # (m, d_v)
    # write all m = d_k pairs, then read every key back with queries = the keys
    Q = np.concatenate([np.zeros((d_k, d_k)), K])  # (2 m, d_k)
    K2 = np.concatenate([K, np.zeros((d_k, d_k))])  # reads write nothing (k = 0)
    V2 = np.concatenate([V, np.zeros((d_k, d_v))])
    y = anp.delta_rule(Q, K2, V2, 1.0)[d_k:]  # (m, d_v)
    np.testing.assert_allclose(y, V, atol=1e-12)


def test_delta_rule_at_beta_one_recalls_the_last_written_unit_key_exactly():
    rng = np.random.default_rng(1)
    K = unit_keys(rng, 6, 4)  # more keys than d_k: not all can be kept
    V = rng.standard_normal((6, 3))
    y = anp.delta_rule(K, K, V, 1.0)  # query t = key t: read right after writing
    np.testing.assert_allclose(y, V, atol=1e-12)
    Kn = 2 * K  # not unit norm: beta = 1 overshoots
    assert not np.allclose(anp.delta_rule(Kn, Kn, V, 1.0) / 2, V)


def test_delta_rule_sweeps_reach_the_least_squares_memory():
    m, d_k, d_v, sweeps = 5, 8, 3, 1000
    rng = np.random.default_rng(2)
    K, V = unit_keys(rng, m, d_k), rng.standard_normal((m, d_v))
    Ks = np.tile(K, (sweeps, 1))  # (sweeps * m, d_k): the pairs, again and again
    Vs = np.tile(V, (sweeps, 1))
    probe = np.eye(d_k)  # reading e_a gives row a of S: the whole state
    Q = np.zeros_like(Ks)
    Q = np.concatenate([Q, probe])
    Ks = np.concatenate([Ks, np.zeros((d_k, d_k))])
    Vs = np.concatenate([Vs, np.zeros((d_k, d_v))])
    S = anp.delta_rule(Q, Ks, Vs, 1.0)[-d_k:]  # (d_k, d_v)
    lstsq = np.linalg.lstsq(K, V, rcond=None)[0]  # the minimum-norm solution
    np.testing.assert_allclose(S, lstsq, atol=1e-8)
    np.testing.assert_allclose(K @ S, V, atol=1e-8)  # recalls every pair


# bad input ------------------------------------------------------------------------


@pytest.mark.parametrize("module", [anp, atn], ids=["numpy", "torch"])
def test_bad_input_is_named(module):
    wrap = np.asarray if module is anp else torch.from_numpy
    Q, K, V = map(wrap, draw(6, (3, 4), (5, 4), (5, 2)))
    with pytest.raises(ValueError, match="K has d_k=3 but Q has d_k=4"):
        module.linear_attention(Q, K[:, :3], V)
    with pytest.raises(TypeError, match="feature_map must be a function"):
        module.linear_attention(Q, K, V, feature_map="elu")
    with pytest.raises(ValueError, match="negative feature"):
        module.linear_attention(Q, K, V, feature_map=lambda x: x)
    with pytest.raises(ValueError, match="normaliser Z"):
        module.linear_attention(Q, K, V, feature_map=lambda x: x * 0)
    with pytest.raises(ValueError, match="one feature size"):
        module.linear_attention(
            Q, K, V, feature_map=lambda x: x[..., : x.shape[0]] ** 2
        )
    with pytest.raises(ValueError, match="keep every other axis"):
        module.linear_attention(Q, K, V, feature_map=lambda x: (x**2).sum())
    with pytest.raises(TypeError, match="causal must be True or False"):
        module.linear_attention(Q, K, V, causal="yes")
    with pytest.raises(ValueError, match="feature_map\\(Q\\) contains"):
        module.linear_attention(Q, K, V, feature_map=lambda x: x**2 + np.inf)
    with pytest.raises(ValueError, match="same length"):
        module.delta_rule(Q, K, V, 1.0)
    with pytest.raises(ValueError, match="beta must lie in"):
        module.delta_rule(Q, Q, V[:3], 0.0)
    with pytest.raises(ValueError, match="beta of shape"):
        module.delta_rule(Q, Q, V[:3], wrap(np.full(4, 0.5)))
    with pytest.raises(ValueError, match="beta contains"):
        module.delta_rule(Q, Q, V[:3], wrap(np.array([0.5, np.nan, 0.5])))
