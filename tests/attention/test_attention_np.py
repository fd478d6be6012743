"""What only helpers.attention_np does: the explicit loop, NumPy's dtypes and inputs.

The contract both modules share is in test_attention_contract.py; that
attention_np never imports torch is checked with every NumPy-only helpers
module in tests/course/test_package.py.
"""

import math

import numpy as np
import pytest
import torch

from helpers import attention_np as anp
from helpers import attention_torch as atn


def draw(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in shapes]


def test_one_query_is_the_explicit_loop_of_seed_000():
    # the NumPy version loops over keys; it must agree with the vectorised torch one
    q, K, V = draw((8,), (20, 8), (20, 10))
    y, weights, Z = anp.attention_one_query(q, K, V)
    assert isinstance(y, np.ndarray) and isinstance(weights, np.ndarray)
    y_t, w_t, z_t = atn.attention_one_query(*(torch.from_numpy(x) for x in (q, K, V)))
    np.testing.assert_allclose(y, y_t.numpy(), rtol=1e-12)
    np.testing.assert_allclose(weights, w_t.numpy(), rtol=1e-12)
    assert Z == pytest.approx(z_t, rel=1e-12)


def test_mixed_float_dtypes_promote():
    Q, K, V = draw((2, 3), (4, 3), (4, 2))
    out, weights = anp.scaled_dot_product_attention(
        Q.astype(np.float32), K, V.astype(np.float32)
    )
    assert out.dtype == weights.dtype == np.float64
    out = anp.online_attention(Q.astype(np.float32), K, V.astype(np.float32))
    assert out.dtype == np.float64


def test_float32_stays_float32_everywhere():
    Q, K, V = (x.astype(np.float32) for x in draw((2, 3, 4), (2, 5, 4), (2, 5, 2)))
    assert anp.online_attention(Q, K, V, block_size=2).dtype == np.float32
    assert anp.rope(Q).dtype == np.float32
    X = Q.reshape(2, 3, 4)
    W = np.eye(4, dtype=np.float32)
    assert anp.multi_head_attention(X, W, W, W, W, 2)[0].dtype == np.float32


def test_accepts_nested_lists():
    out, weights = anp.scaled_dot_product_attention(
        [[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0], [2.0]]
    )
    assert isinstance(out, np.ndarray) and out.shape == (1, 1)
    e = np.exp([1 / math.sqrt(2), 0.0])
    w = e / e.sum()
    np.testing.assert_allclose(weights[0], w, rtol=1e-12)
    np.testing.assert_allclose(out[0, 0], w @ [1.0, 2.0], rtol=1e-12)


def test_does_not_modify_inputs():
    Q, K, V, x = draw((2, 3, 5), (2, 4, 5), (2, 4, 2), (3, 4))
    copies = [a.copy() for a in (Q, K, V, x)]
    anp.scaled_dot_product_attention(Q, K, V, mask=anp.causal_mask(3, 4))
    anp.online_attention(Q, K, V, block_size=3)
    anp.softmax(x)
    anp.rope(x)
    for a, b in zip((Q, K, V, x), copies, strict=True):
        np.testing.assert_array_equal(a, b)
