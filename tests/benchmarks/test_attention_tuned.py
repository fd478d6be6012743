"""benchmarks/attention_tuned.py computes what the readable online_attention does."""

import numpy as np
import pytest
import torch

from benchmarks.attention_tuned import online_attention_tuned
from helpers import attention_torch as atn


def qkv(shape_q, shape_k, d_v, seed=0, dtype=torch.float64, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    Q = torch.randn(shape_q, generator=g, dtype=dtype) * scale
    K = torch.randn(shape_k, generator=g, dtype=dtype) * scale
    V = torch.randn((*shape_k[:-1], d_v), generator=g, dtype=dtype)
    return Q, K, V


@pytest.mark.parametrize("block_size", [1, 3, 8, 128])
@pytest.mark.parametrize(
    ("shape_q", "shape_k"),
    [((7, 4), (11, 4)), ((2, 3, 5, 4), (2, 3, 9, 4)), ((2, 3, 5, 4), (9, 4))],
)
def test_tuned_equals_readable_with_and_without_masks(shape_q, shape_k, block_size):
    Q, K, V = qkv(shape_q, shape_k, d_v=3)
    n, m = shape_q[-2], shape_k[-2]
    rng = np.random.default_rng(1)
    random_mask = torch.from_numpy(rng.random((n, m)) < 0.5)
    random_mask[0] = False  # a fully masked row gives zeros
    for mask in (None, atn.causal_mask(n, m), random_mask):
        expected = atn.online_attention(Q, K, V, block_size=block_size, mask=mask)
        got = online_attention_tuned(Q, K, V, block_size=block_size, mask=mask)
        torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)


def test_tuned_rescales_when_scores_grow_and_in_float32_and_float16():
    # scores that grow from block to block force the lazy rescaling to act
    Q, K, V = qkv((64, 8), (300, 8), d_v=4, scale=4.0)
    K = K * torch.linspace(0.1, 3.0, 300)[:, None]
    expected = atn.scaled_dot_product_attention(Q, K, V)[0]
    torch.testing.assert_close(
        online_attention_tuned(Q, K, V, block_size=16), expected, rtol=1e-10, atol=1e-12
    )
    for dtype, tol in ((torch.float32, 1e-5), (torch.float16, 2e-2)):
        got = online_attention_tuned(*(x.to(dtype) for x in (Q, K, V)), block_size=16)
        assert got.dtype == dtype
        torch.testing.assert_close(got.double(), expected, rtol=tol, atol=tol)


def test_tuned_gradients_equal_the_readable_ones():
    Q, K, V = (x.requires_grad_() for x in qkv((6, 4), (10, 4), d_v=3))
    mask = atn.causal_mask(6, 10)
    grads = torch.autograd.grad(
        online_attention_tuned(Q, K, V, 4, mask).sum(), (Q, K, V)
    )
    expected = torch.autograd.grad(
        atn.online_attention(Q, K, V, 4, mask).sum(), (Q, K, V)
    )
    for g, e in zip(grads, expected, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-12)
