"""Lesson 13: the windowed causal mask, the ring-buffer cache, MLA absorption.

Property tests (hypothesis): ``causal_mask(n, m, window=w)`` equals its
definition 0 <= (i + m - n) - j < w for n != m too, in both modules; decoding
through a ring buffer of the window equals full sliding-window attention; MLA's
absorbed form equals the unabsorbed one; a sink lowers every row's sum below 1.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import attention_np as anp
from helpers import attention_torch as atn
from helpers import kv_cache

sizes = st.integers(min_value=1, max_value=12)


def definition(n, m, window):
    return np.array(
        [[0 <= (i + m - n) - j < window for j in range(m)] for i in range(n)],
        dtype=bool,
    ).reshape(n, m)


@given(n=sizes, m=sizes, window=st.integers(min_value=1, max_value=14))
@settings(max_examples=60, deadline=None)
def test_windowed_mask_equals_its_definition(n, m, window):
    expected = definition(n, m, window)
    got_np = anp.causal_mask(n, m, window=window)
    got_torch = atn.causal_mask(n, m, window=window)
    assert got_np.dtype == np.bool_ and got_torch.dtype == torch.bool
    np.testing.assert_array_equal(got_np, expected)
    np.testing.assert_array_equal(got_torch.numpy(), expected)


@given(n=sizes, m=sizes)
@settings(max_examples=30, deadline=None)
def test_a_window_as_long_as_the_keys_is_the_causal_mask(n, m):
    for window in (m, m + 1, m + n):
        np.testing.assert_array_equal(
            anp.causal_mask(n, m, window=window), anp.causal_mask(n, m)
        )
        assert torch.equal(atn.causal_mask(n, m, window=window), atn.causal_mask(n, m))


@pytest.mark.parametrize("module", [anp, atn], ids=["numpy", "torch"])
@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "4"])
def test_bad_window_names_the_rule(module, bad):
    with pytest.raises(ValueError, match="window must be a positive integer"):
        module.causal_mask(4, 6, window=bad)


def test_window_none_is_the_causal_mask():
    np.testing.assert_array_equal(
        anp.causal_mask(3, 5, window=None), anp.causal_mask(3, 5)
    )


@given(n=st.integers(1, 20), window=st.integers(1, 8), seed=st.integers(0, 99))
@settings(max_examples=40, deadline=None)
def test_ring_buffer_equals_full_sliding_window_attention(n, window, seed):
    rng = np.random.default_rng(seed)
    Q, K = rng.standard_normal((2, n, 4))
    V = rng.standard_normal((n, 3))
    full, _ = anp.scaled_dot_product_attention(
        Q, K, V, mask=anp.causal_mask(n, window=window)
    )
    np.testing.assert_allclose(
        kv_cache.ring_buffer_decode(Q, K, V, window), full, rtol=1e-12, atol=1e-12
    )


@given(
    heads=st.integers(1, 3),
    d_k=st.sampled_from([2, 4]),
    d_v=st.integers(1, 5),
    d_c=st.integers(1, 6),
    d_r=st.sampled_from([0, 2, 4]),
    n=st.integers(1, 7),
    seed=st.integers(0, 50),
)
@settings(max_examples=40, deadline=None)
def test_mla_absorbed_equals_unabsorbed(heads, d_k, d_v, d_c, d_r, n, seed):
    d_model = 6
    W = kv_cache.mla_weights(d_model, heads, d_k, d_v, d_c, d_r, seed=seed)
    X = np.random.default_rng(seed + 1).standard_normal((n, d_model))
    mask = anp.causal_mask(n)
    out, weights = kv_cache.mla_attention(X, W, heads, mask=mask)
    out_abs, weights_abs = kv_cache.mla_attention(X, W, heads, mask=mask, absorbed=True)
    np.testing.assert_allclose(weights_abs, weights, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out_abs, out, rtol=1e-10, atol=1e-12)


def test_mla_unabsorbed_is_multi_head_attention_on_rebuilt_keys():
    heads, d_k, d_c, n, d_model = 2, 4, 3, 5, 8
    W = kv_cache.mla_weights(d_model, heads, d_k, d_k, d_c, seed=3)
    X = np.random.default_rng(4).standard_normal((1, n, d_model))
    c = X @ W["W_DKV"]  # (1, n, d_c)
    Q = anp.split_heads(X @ W["W_Q"], heads)
    K = anp.split_heads(c @ W["W_UK"], heads)
    V = anp.split_heads(c @ W["W_UV"], heads)
    y, _ = anp.scaled_dot_product_attention(Q, K, V, mask=anp.causal_mask(n))
    expected = anp.merge_heads(y) @ W["W_O"]  # (1, n, d_model)
    out, _ = kv_cache.mla_attention(X[0], W, heads, mask=anp.causal_mask(n))
    np.testing.assert_allclose(out, expected[0], rtol=1e-12, atol=1e-12)


@given(n=st.integers(1, 6), m=st.integers(1, 8), seed=st.integers(0, 50))
@settings(max_examples=30, deadline=None)
def test_sink_is_one_more_term_in_z(n, m, seed):
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((n, 4))
    K = rng.standard_normal((m, 4))
    V = rng.standard_normal((m, 3))
    sink = float(rng.standard_normal())
    out, w = kv_cache.sink_attention(Q, K, V, sink)
    scores = Q @ K.T / math.sqrt(4)
    Z = np.exp(scores).sum(axis=1, keepdims=True) + math.exp(sink)
    np.testing.assert_allclose(w, np.exp(scores) / Z, rtol=1e-12)
    np.testing.assert_allclose(w.sum(axis=1), 1 - math.exp(sink) / Z[:, 0], rtol=1e-12)
    # a sink column appended to the scores, softmaxed, then dropped: the same
    padded = np.concatenate([scores, np.full((n, 1), sink)], axis=1)
    np.testing.assert_allclose(w, anp.softmax(padded)[:, :m], rtol=1e-12)
    np.testing.assert_allclose(out, w @ V, rtol=1e-12)


def test_sink_survives_large_scores_and_a_sink_of_minus_infinity():
    Q = np.full((2, 4), 30.0)
    K = np.full((3, 4), 30.0)
    V = np.arange(6.0).reshape(3, 2)
    out, w = kv_cache.sink_attention(Q, K, V, 2000.0)
    assert np.isfinite(w).all() and (w < 1e-80).all()
    _, w_plain = kv_cache.sink_attention(Q, K, V, -np.inf)
    np.testing.assert_allclose(w_plain, anp.scaled_dot_product_attention(Q, K, V)[1])


@given(m=st.integers(1, 10), k=st.integers(1, 12), seed=st.integers(0, 50))
@settings(max_examples=30, deadline=None)
def test_top_k_keeps_k_keys_and_equals_full_for_k_at_least_m(m, k, seed):
    rng = np.random.default_rng(seed)
    Q, K, V = (
        rng.standard_normal((3, 4)),
        rng.standard_normal((m, 4)),
        rng.standard_normal((m, 2)),
    )
    out, w = kv_cache.top_k_attention(Q, K, V, k)
    assert ((w > 0).sum(axis=-1) == min(k, m)).all()
    np.testing.assert_allclose(w.sum(axis=-1), 1.0)
    if k >= m:
        full, _ = anp.scaled_dot_product_attention(Q, K, V)
        np.testing.assert_allclose(out, full, rtol=1e-12)
