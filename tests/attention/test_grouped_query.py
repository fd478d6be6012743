"""Grouped-query and multi-query attention: multi_head_attention(..., num_kv_heads)."""

import numpy as np
import pytest


def gqa_weights(d_model, d_k, num_kv_heads, seed=0):
    rng = np.random.default_rng(seed)
    W_Q, W_O = (rng.standard_normal((d_model, d_model)) for _ in range(2))
    W_K, W_V = (rng.standard_normal((d_model, num_kv_heads * d_k)) for _ in range(2))
    return W_Q, W_K, W_V, W_O


@pytest.mark.parametrize(("num_heads", "num_kv_heads"), [(4, 1), (4, 2), (6, 3)])
def test_query_head_h_uses_kv_head_h_floor_div_group(
    attn, reference, num_heads, num_kv_heads
):
    d_k, n, m = 2, 3, 5
    d_model = num_heads * d_k
    rng = np.random.default_rng(1)
    X, kv = rng.standard_normal((2, n, d_model)), rng.standard_normal((2, m, d_model))
    W_Q, W_K, W_V, W_O = gqa_weights(d_model, d_k, num_kv_heads)
    out, weights = attn.multi_head_attention(
        *(attn.arr(a) for a in (X, W_Q, W_K, W_V, W_O)),
        num_heads, kv=attn.arr(kv), num_kv_heads=num_kv_heads,
    )  # fmt: skip
    assert attn.np(weights).shape == (2, num_heads, n, m)
    group = num_heads // num_kv_heads
    heads = []
    for h in range(num_heads):
        g = h // group  # the K/V head query head h shares
        q_cols, kv_cols = slice(h * d_k, (h + 1) * d_k), slice(g * d_k, (g + 1) * d_k)
        y, w = reference(X @ W_Q[:, q_cols], kv @ W_K[:, kv_cols], kv @ W_V[:, kv_cols])
        np.testing.assert_allclose(attn.np(weights)[:, h], w, rtol=1e-10, atol=1e-12)
        heads.append(y)
    expected = np.concatenate(heads, axis=-1) @ W_O  # (batch, n, d_model)
    np.testing.assert_allclose(attn.np(out), expected, rtol=1e-10, atol=1e-10)


def test_num_kv_heads_equal_to_num_heads_is_ordinary_multi_head_attention(attn):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((1, 4, 6))
    W = [rng.standard_normal((6, 6)) for _ in range(4)]
    plain = attn.multi_head_attention(*(attn.arr(a) for a in [X, *W]), 3)
    same = attn.multi_head_attention(*(attn.arr(a) for a in [X, *W]), 3, num_kv_heads=3)
    for a, b in zip(plain, same, strict=True):
        np.testing.assert_array_equal(attn.np(a), attn.np(b))


def test_num_heads_must_be_a_multiple_of_num_kv_heads(attn):
    X = attn.arr(np.ones((1, 2, 6)))
    W_Q, W_K, W_V, W_O = (attn.arr(w) for w in gqa_weights(6, 1, 4))
    with pytest.raises(
        ValueError, match="num_heads=6 is not a multiple of num_kv_heads=4"
    ):
        attn.multi_head_attention(X, W_Q, W_K, W_V, W_O, 6, num_kv_heads=4)
    with pytest.raises(ValueError, match="num_kv_heads must be a positive integer"):
        attn.multi_head_attention(X, W_Q, W_K, W_V, W_O, 6, num_kv_heads=0)


def test_kv_projections_must_have_num_kv_heads_times_d_k_columns(attn):
    X = attn.arr(np.ones((1, 2, 8)))
    W_Q, _, _, W_O = (attn.arr(w) for w in gqa_weights(8, 2, 2))
    full = attn.arr(np.ones((8, 8)))  # (d_model, d_model): one K/V head per query head
    with pytest.raises(
        ValueError,
        match=r"W_K must have shape \(d_model, num_kv_heads \* d_k\) = \(8, 4\) .*"
        r"got \(8, 8\)",
    ):
        attn.multi_head_attention(X, W_Q, full, full, W_O, 4, num_kv_heads=2)
