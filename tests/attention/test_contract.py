"""The attention contract, checked on helpers.attention_np and attention_torch.

Both modules have the same names, arguments and error messages, so most tests
here take the ``attn`` fixture (tests/attention/conftest.py) and run once per module.
Checks go from cheap to full: shape, rows sum to 1, mask obeyed, scale, then the
float64 loop reference. NumPy-only behaviour is in test_attention_np.py,
PyTorch-only behaviour (autograd, torch's own SDPA) in test_attention_torch.py;
lesson 10's helpers in test_attention_gqa.py, test_attention_rope.py and
test_attention_module.py.
"""

import math

import numpy as np
import pytest
import torch

RNG_SEED = 0


def randn(*shape, seed=RNG_SEED):
    return np.random.default_rng(seed).standard_normal(shape)


def qkv(batch, n, m, d_k, d_v, seed=RNG_SEED):
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((*batch, n, d_k))
    K = rng.standard_normal((*batch, m, d_k))
    V = rng.standard_normal((*batch, m, d_v))
    return Q, K, V


def softmax64(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# --------------------------------------------------------------------- softmax


@pytest.mark.parametrize("axis", [-1, 0, 1, 2, -3])
def test_softmax_sums_to_one_along_axis_and_equals_exp_over_sum(attn, axis):
    x = randn(2, 3, 4)
    w = attn.np(attn.softmax(attn.arr(x), axis=axis))
    assert w.shape == x.shape
    np.testing.assert_allclose(w.sum(axis=axis), 1.0, rtol=1e-12)
    expected = np.exp(x) / np.exp(x).sum(axis=axis, keepdims=True)
    np.testing.assert_allclose(w, expected, rtol=1e-12)


def test_softmax_default_axis_is_last(attn):
    x = randn(3, 5)
    np.testing.assert_allclose(
        attn.np(attn.softmax(attn.arr(x))), softmax64(x, axis=-1), rtol=1e-12
    )


def test_softmax_subtracts_the_max_so_huge_inputs_do_not_overflow(attn):
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, 0.0, 1000.0]])
    w = attn.np(attn.softmax(attn.arr(x)))
    assert np.isfinite(w).all()
    np.testing.assert_allclose(w[0], softmax64([0.0, 1.0, 2.0]), rtol=1e-12)
    np.testing.assert_allclose(w[1], [0.0, 0.0, 1.0], atol=1e-300)


def test_softmax_float32_huge_inputs(attn):
    x = np.array([1000.0, 1001.0, 1002.0], dtype=np.float32)
    w = attn.np(attn.softmax(attn.arr(x)))
    assert w.dtype == np.float32
    assert np.isfinite(w).all()
    np.testing.assert_allclose(w, softmax64([0.0, 1.0, 2.0]), rtol=1e-6)


def test_softmax_is_shift_invariant(attn):
    x = randn(4, 6)
    a = attn.np(attn.softmax(attn.arr(x)))
    b = attn.np(attn.softmax(attn.arr(x + 123.0)))
    np.testing.assert_allclose(a, b, rtol=1e-10)


def test_softmax_neg_inf_gets_zero_and_all_neg_inf_row_gives_zeros(attn):
    x = np.array([[0.0, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf], [2.0, 2.0, 2.0]])
    w = attn.np(attn.softmax(attn.arr(x)))
    assert not np.isnan(w).any()
    assert w[0, 1] == 0.0
    np.testing.assert_allclose(w[0, [0, 2]], softmax64([0.0, 1.0]), rtol=1e-12)
    assert (w[1] == 0.0).all()
    np.testing.assert_allclose(w[2], 1 / 3, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_softmax_keeps_float_dtype(attn, dtype):
    x = randn(3, 4).astype(dtype)
    w = attn.softmax(attn.arr(x))
    assert attn.dtype_name(w) == np.dtype(dtype).name
    tol = {np.float16: 2e-3, np.float32: 1e-6, np.float64: 1e-12}[dtype]
    np.testing.assert_allclose(attn.np(w).astype(np.float64), softmax64(x), atol=tol)


def test_softmax_integer_input_is_computed_in_floating_point(attn):
    w = attn.np(attn.softmax(attn.arr([[1, 2, 3], [4, 5, 6]])))
    assert np.issubdtype(w.dtype, np.floating)
    np.testing.assert_allclose(w, softmax64([[1, 2, 3], [4, 5, 6]]), rtol=1e-6)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_softmax_rejects_nan_and_pos_inf(attn, bad):
    x = np.array([[0.0, 1.0], [bad, 2.0]])
    with pytest.raises(ValueError, match=r"x contains 1 non-finite.*index \(1, 0\)"):
        attn.softmax(attn.arr(x))


def test_softmax_rejects_bad_axis_scalar_empty_and_bool(attn):
    with pytest.raises(ValueError, match=r"axis=2 is out of range .* shape \(3, 4\)"):
        attn.softmax(attn.arr(randn(3, 4)), axis=2)
    with pytest.raises(ValueError, match="scalar"):
        attn.softmax(attn.arr(np.float64(1.0)))
    with pytest.raises(
        ValueError, match=r"no entries along axis=-1 \(shape \(3, 0\)\)"
    ):
        attn.softmax(attn.arr(np.zeros((3, 0))))
    with pytest.raises(TypeError, match="real numbers; got dtype"):
        attn.softmax(attn.arr(np.array([True, False])))


# ------------------------------------------------------- attention_one_query


def one_query_reference(q, K, V, scale=None):
    q, K, V = (np.asarray(x, dtype=np.float64) for x in (q, K, V))
    scale = 1 / math.sqrt(q.shape[0]) if scale is None else scale
    scores = K @ q * scale
    weights = softmax64(scores)
    return weights @ V, weights, float(np.exp(scores).sum())


@pytest.mark.parametrize(("m", "d_k", "d_v"), [(1, 1, 1), (5, 8, 10), (20, 8, 3)])
def test_one_query_loop_equals_matrix_form(attn, m, d_k, d_v):
    rng = np.random.default_rng(1)
    q, K, V = rng.normal(size=d_k), rng.normal(size=(m, d_k)), rng.normal(size=(m, d_v))
    y, weights, Z = attn.attention_one_query(attn.arr(q), attn.arr(K), attn.arr(V))
    y_ref, w_ref, z_ref = one_query_reference(q, K, V)
    assert attn.np(y).shape == (d_v,)
    assert attn.np(weights).shape == (m,)
    assert isinstance(Z, float)
    np.testing.assert_allclose(attn.np(weights).sum(), 1.0, rtol=1e-12)
    np.testing.assert_allclose(attn.np(weights), w_ref, rtol=1e-12)
    np.testing.assert_allclose(attn.np(y), y_ref, rtol=1e-12, atol=1e-14)
    # Z = sum_s exp(score_s) computed in float64, and y = sum_s exp(score_s)/Z v_s
    assert Z == pytest.approx(z_ref, rel=1e-12)
    scores = K @ q / math.sqrt(d_k)
    np.testing.assert_allclose(
        attn.np(y), (np.exp(scores)[:, None] * V).sum(axis=0) / Z, rtol=1e-10
    )


def test_one_query_equals_sdpa_row(attn):
    q, K, V = randn(4), randn(6, 4, seed=1), randn(6, 3, seed=2)
    y, weights, _ = attn.attention_one_query(attn.arr(q), attn.arr(K), attn.arr(V))
    out, w = attn.scaled_dot_product_attention(
        attn.arr(q[None]), attn.arr(K), attn.arr(V)
    )
    np.testing.assert_allclose(attn.np(y), attn.np(out)[0], rtol=1e-12)
    np.testing.assert_allclose(attn.np(weights), attn.np(w)[0], rtol=1e-12)


def test_one_query_scale_argument(attn):
    q, K, V = randn(4), randn(6, 4, seed=1), randn(6, 3, seed=2)
    y, weights, Z = attn.attention_one_query(
        attn.arr(q), attn.arr(K), attn.arr(V), scale=0.3
    )
    y_ref, w_ref, z_ref = one_query_reference(q, K, V, scale=0.3)
    np.testing.assert_allclose(attn.np(weights), w_ref, rtol=1e-12)
    np.testing.assert_allclose(attn.np(y), y_ref, rtol=1e-12)
    assert Z == pytest.approx(z_ref, rel=1e-12)


def test_one_query_Z_overflows_but_y_and_weights_stay_exact(attn):
    q = np.array([1.0, 0.0])
    K = np.array([[1000.0, 0.0], [999.0, 5.0], [990.0, -3.0]])  # scores 1000, 999, 990
    V = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0], [3.0, 3.0, 3.0]])
    y, weights, Z = attn.attention_one_query(
        attn.arr(q), attn.arr(K), attn.arr(V), scale=1.0
    )
    assert Z == math.inf
    w_ref = softmax64([0.0, -1.0, -10.0])
    assert np.isfinite(attn.np(y)).all()
    np.testing.assert_allclose(attn.np(weights), w_ref, rtol=1e-12)
    np.testing.assert_allclose(attn.np(y), w_ref @ V, rtol=1e-12)


def test_one_query_float32_stays_float32(attn):
    q, K, V = (x.astype(np.float32) for x in (randn(4), randn(5, 4), randn(5, 2)))
    y, weights, Z = attn.attention_one_query(attn.arr(q), attn.arr(K), attn.arr(V))
    assert attn.dtype_name(y) == attn.dtype_name(weights) == "float32"
    y_ref, w_ref, z_ref = one_query_reference(q, K, V)
    np.testing.assert_allclose(attn.np(y), y_ref, rtol=1e-5, atol=1e-6)
    assert Z == pytest.approx(z_ref, rel=1e-5)


def test_one_query_errors_name_the_shapes(attn):
    q, K, V = randn(8), randn(5, 8), randn(5, 3)
    with pytest.raises(
        ValueError, match=r"q must be one query of shape \(d_k,\); got shape \(1, 8\)"
    ):
        attn.attention_one_query(attn.arr(q[None]), attn.arr(K), attn.arr(V))
    with pytest.raises(
        ValueError, match=r"K must have shape \(m, d_k\); got shape \(8,\)"
    ):
        attn.attention_one_query(attn.arr(q), attn.arr(q), attn.arr(V))
    with pytest.raises(
        ValueError, match=r"V must have shape \(m, d_v\); got shape \(5,\)"
    ):
        attn.attention_one_query(attn.arr(q), attn.arr(K), attn.arr(V[:, 0]))
    with pytest.raises(ValueError, match="K has d_k=6 but Q has d_k=8"):
        attn.attention_one_query(attn.arr(q), attn.arr(randn(5, 6)), attn.arr(V))
    with pytest.raises(ValueError, match="K has m=5 keys but V has 4 values"):
        attn.attention_one_query(attn.arr(q), attn.arr(K), attn.arr(V[:4]))
    bad = K.copy()
    bad[2, 3] = np.nan
    with pytest.raises(ValueError, match=r"K contains 1 non-finite.*index \(2, 3\)"):
        attn.attention_one_query(attn.arr(q), attn.arr(bad), attn.arr(V))


# --------------------------------------------------- scaled_dot_product_attention

SHAPES = [
    # batch, n, m, d_k, d_v
    ((), 1, 1, 1, 1),
    ((), 4, 20, 8, 10),  # seed 000: N=4, M=20, d_k=8, d_v=10
    ((), 5, 3, 2, 7),
    ((2,), 3, 3, 4, 4),
    ((2, 3), 2, 5, 3, 1),
    ((1,), 6, 1, 5, 2),
]


@pytest.mark.parametrize(("batch", "n", "m", "d_k", "d_v"), SHAPES)
def test_sdpa_equals_loop_reference(attn, reference, batch, n, m, d_k, d_v):
    Q, K, V = qkv(batch, n, m, d_k, d_v)
    out, weights = attn.scaled_dot_product_attention(
        attn.arr(Q), attn.arr(K), attn.arr(V)
    )
    out, weights = attn.np(out), attn.np(weights)
    assert out.shape == (*batch, n, d_v)
    assert weights.shape == (*batch, n, m)
    assert out.dtype == weights.dtype == np.float64
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-12)
    out_ref, w_ref = reference(Q, K, V)
    np.testing.assert_allclose(weights, w_ref, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(out, out_ref, rtol=1e-10, atol=1e-12)


def test_sdpa_broadcasts_batch_axes(attn, reference):
    rng = np.random.default_rng(2)
    Q = rng.normal(size=(2, 1, 3, 4))
    K = rng.normal(size=(1, 5, 6, 4))
    V = rng.normal(size=(5, 6, 2))
    out, weights = attn.scaled_dot_product_attention(
        attn.arr(Q), attn.arr(K), attn.arr(V)
    )
    assert attn.np(out).shape == (2, 5, 3, 2)
    assert attn.np(weights).shape == (2, 5, 3, 6)
    out_ref, w_ref = reference(Q, K, V)
    np.testing.assert_allclose(attn.np(out), out_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(attn.np(weights), w_ref, rtol=1e-10, atol=1e-14)
    # one explicit slice: batch (1, 3) uses Q[1, 0], K[0, 3], V[3]
    o13, _ = attn.scaled_dot_product_attention(
        attn.arr(Q[1, 0]), attn.arr(K[0, 3]), attn.arr(V[3])
    )
    np.testing.assert_allclose(attn.np(out)[1, 3], attn.np(o13), rtol=1e-12)


@pytest.mark.parametrize("scale", [0.0, 0.5, 2.0])
def test_sdpa_scale_argument(attn, reference, scale):
    Q, K, V = qkv((2,), 3, 4, 5, 2)
    out, weights = attn.scaled_dot_product_attention(
        attn.arr(Q), attn.arr(K), attn.arr(V), scale=scale
    )
    out_ref, w_ref = reference(Q, K, V, scale=scale)
    np.testing.assert_allclose(attn.np(weights), w_ref, rtol=1e-10)
    np.testing.assert_allclose(attn.np(out), out_ref, rtol=1e-10, atol=1e-12)
    if scale == 0.0:
        np.testing.assert_allclose(attn.np(weights), 1 / 4)


def test_sdpa_default_scale_is_one_over_sqrt_d_k(attn):
    Q, K, V = qkv((), 3, 4, 9, 2)
    default = attn.scaled_dot_product_attention(attn.arr(Q), attn.arr(K), attn.arr(V))
    explicit = attn.scaled_dot_product_attention(
        attn.arr(Q), attn.arr(K), attn.arr(V), scale=1 / 3
    )
    unscaled = attn.scaled_dot_product_attention(
        attn.arr(Q), attn.arr(K), attn.arr(V), scale=1.0
    )
    np.testing.assert_allclose(attn.np(default[1]), attn.np(explicit[1]), rtol=1e-14)
    assert not np.allclose(attn.np(default[1]), attn.np(unscaled[1]))


@pytest.mark.parametrize(
    ("dtype", "rtol", "atol"),
    [(np.float32, 1e-5, 1e-6), (np.float16, 2e-2, 5e-3), (np.float64, 1e-12, 1e-14)],
)
def test_sdpa_keeps_float_dtype(attn, reference, dtype, rtol, atol):
    Q, K, V = (x.astype(dtype) for x in qkv((2,), 3, 5, 4, 6))
    out, weights = attn.scaled_dot_product_attention(
        attn.arr(Q), attn.arr(K), attn.arr(V)
    )
    name = np.dtype(dtype).name
    assert attn.dtype_name(out) == attn.dtype_name(weights) == name
    out_ref, w_ref = reference(Q, K, V)  # float64 from the rounded inputs
    np.testing.assert_allclose(attn.np(out).astype(float), out_ref, rtol, atol)
    np.testing.assert_allclose(attn.np(weights).astype(float), w_ref, rtol, atol)


def test_sdpa_float32_with_mask_stays_float32(attn):
    Q, K, V = (x.astype(np.float32) for x in qkv((), 3, 4, 2, 2))
    mask = attn.causal_mask(3, 4)
    out, weights = attn.scaled_dot_product_attention(
        attn.arr(Q), attn.arr(K), attn.arr(V), mask=mask
    )
    assert attn.dtype_name(out) == attn.dtype_name(weights) == "float32"


def test_sdpa_integer_input_seed_003(attn, reference):
    # seed 003: X = [[1, 2, 3], [4, 5, 6]] attends to itself, integers in
    X = np.array([[1, 2, 3], [4, 5, 6]])
    out, weights = attn.scaled_dot_product_attention(
        attn.arr(X), attn.arr(X), attn.arr(X)
    )
    out, weights = attn.np(out), attn.np(weights)
    assert np.issubdtype(out.dtype, np.floating)
    assert np.issubdtype(weights.dtype, np.floating)
    out_ref, w_ref = reference(X, X, X)
    np.testing.assert_allclose(weights, w_ref, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out, out_ref, rtol=1e-6)
    # integer division would have given 0/1 weights; real ones are strictly inside
    assert 0 < weights[0, 0] < 1


def test_sdpa_seed_003_single_head_projection(attn, reference):
    X = np.array([[[1, 2, 3], [4, 5, 6]]])  # (1, 2, 3)
    W = np.array([[1, 0], [0, 1], [0, 0]])  # W_Q = W_K = W_V in seed 003
    Q = K = V = X @ W  # (1, 2, 2): [[1, 2], [4, 5]]
    out, weights = attn.scaled_dot_product_attention(
        attn.arr(Q), attn.arr(K), attn.arr(V)
    )
    out_ref, w_ref = reference(Q, K, V)
    np.testing.assert_allclose(attn.np(weights), w_ref, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(attn.np(out), out_ref, rtol=1e-6)


def test_sdpa_mask_true_means_may_attend(attn):
    Q, K, V = qkv((), 3, 6, 4, 2)
    mask = np.array(
        [
            [True, False, True, False, True, False],
            [False, False, False, False, False, True],
            [True, True, True, True, True, True],
        ]
    )
    out, weights = attn.scaled_dot_product_attention(
        attn.arr(Q), attn.arr(K), attn.arr(V), mask=attn.arr(mask)
    )
    out, weights = attn.np(out), attn.np(weights)
    assert (weights[~mask] == 0).all()
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-12)
    # a masked row equals attention over only the keys it may see
    for i in range(3):
        keep = mask[i]
        o_i, w_i = attn.scaled_dot_product_attention(
            attn.arr(Q[i : i + 1]), attn.arr(K[keep]), attn.arr(V[keep])
        )
        np.testing.assert_allclose(out[i], attn.np(o_i)[0], rtol=1e-12)
        np.testing.assert_allclose(weights[i, keep], attn.np(w_i)[0], rtol=1e-12)
    assert weights[1, 5] == 1.0
    np.testing.assert_allclose(out[1], V[5], rtol=1e-12)


def test_sdpa_fully_masked_rows_give_zero_weights_and_zero_output(attn, reference):
    Q, K, V = qkv((2,), 3, 4, 4, 5)
    mask = np.ones((2, 3, 4), dtype=bool)
    mask[0, 1] = False
    mask[1, 0] = False
    mask[1, 2, :2] = False
    out, weights = attn.scaled_dot_product_attention(
        attn.arr(Q), attn.arr(K), attn.arr(V), mask=attn.arr(mask)
    )
    out, weights = attn.np(out), attn.np(weights)
    assert np.isfinite(out).all() and np.isfinite(weights).all()
    assert (weights[0, 1] == 0).all() and (out[0, 1] == 0).all()
    assert (weights[1, 0] == 0).all() and (out[1, 0] == 0).all()
    out_ref, w_ref = reference(Q, K, V, mask=mask)
    np.testing.assert_allclose(out, out_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights, w_ref, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize(
    "mask_shape", [(4,), (1, 4), (3, 4), (2, 1, 4), (2, 1, 1, 4), (1, 1, 3, 4)]
)
def test_sdpa_mask_broadcasts(attn, reference, mask_shape):
    Q, K, V = qkv((2, 2), 3, 4, 3, 2)
    mask = np.random.default_rng(3).random(mask_shape) < 0.6
    out, weights = attn.scaled_dot_product_attention(
        attn.arr(Q), attn.arr(K), attn.arr(V), mask=attn.arr(mask)
    )
    out_ref, w_ref = reference(Q, K, V, mask=mask)
    np.testing.assert_allclose(attn.np(out), out_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(attn.np(weights), w_ref, rtol=1e-10, atol=1e-14)


def test_sdpa_mask_from_other_library_or_list_is_accepted(attn, reference):
    Q, K, V = qkv((), 2, 3, 2, 2)
    mask = [[True, False, True], [False, True, True]]
    out, _ = attn.scaled_dot_product_attention(
        attn.arr(Q), attn.arr(K), attn.arr(V), mask=mask
    )
    np.testing.assert_allclose(attn.np(out), reference(Q, K, V, mask=np.array(mask))[0])


def test_sdpa_equals_torch_sdpa(attn):
    Q, K, V = qkv((2, 3), 4, 5, 6, 7)
    mask = np.random.default_rng(4).random((2, 3, 4, 5)) < 0.7
    out, _ = attn.scaled_dot_product_attention(
        attn.arr(Q), attn.arr(K), attn.arr(V), mask=attn.arr(mask)
    )
    expected = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(x) for x in (Q, K, V)), attn_mask=torch.from_numpy(mask)
    )
    np.testing.assert_allclose(attn.np(out), expected.numpy(), rtol=1e-10, atol=1e-12)


def test_sdpa_d_k_mismatch(attn):
    Q, K, V = randn(3, 8), randn(5, 6), randn(5, 2)
    with pytest.raises(
        ValueError, match=r"K has d_k=6 but Q has d_k=8.*Q \(3, 8\), K \(5, 6\)"
    ):
        attn.scaled_dot_product_attention(attn.arr(Q), attn.arr(K), attn.arr(V))


def test_sdpa_key_value_count_mismatch(attn):
    Q, K, V = randn(3, 4), randn(5, 4), randn(7, 2)
    with pytest.raises(
        ValueError, match=r"K has m=5 keys but V has 7 values.*V \(7, 2\)"
    ):
        attn.scaled_dot_product_attention(attn.arr(Q), attn.arr(K), attn.arr(V))


@pytest.mark.parametrize("mask_shape", [(3, 4), (2, 5), (4, 5, 5), (5, 3, 5)])
def test_sdpa_mask_not_broadcastable(attn, mask_shape):
    Q, K, V = qkv((2,), 3, 5, 4, 2)
    mask = np.ones(mask_shape, dtype=bool)
    shape = re_escape_shape(mask_shape)
    with pytest.raises(
        ValueError,
        match=rf"mask of shape {shape} is not broadcastable.*\(2, 3, 5\)",
    ):
        attn.scaled_dot_product_attention(
            attn.arr(Q), attn.arr(K), attn.arr(V), mask=attn.arr(mask)
        )


def re_escape_shape(shape):
    return str(tuple(shape)).replace("(", r"\(").replace(")", r"\)")


@pytest.mark.parametrize(
    ("mask", "dtype_name"),
    [
        (np.zeros((3, 4), dtype=np.float32), "float32"),
        (np.ones((3, 4), dtype=np.int64), "int64"),
        (np.where(np.eye(3, 4) > 0, 0.0, -np.inf), "float64"),
    ],
)
def test_sdpa_mask_must_be_boolean(attn, mask, dtype_name):
    Q, K, V = qkv((), 3, 4, 2, 2)
    with pytest.raises(
        TypeError, match=rf"mask must be boolean, True = may attend; got .*{dtype_name}"
    ) as info:
        attn.scaled_dot_product_attention(
            attn.arr(Q), attn.arr(K), attn.arr(V), mask=attn.arr(mask)
        )
    assert "mask == 0" in str(info.value)


@pytest.mark.parametrize("name", ["Q", "K", "V"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_sdpa_rejects_nan_and_inf(attn, name, bad):
    arrays = dict(zip("QKV", qkv((2,), 3, 4, 5, 6), strict=True))
    arrays[name][1, 2, 3] = bad
    with pytest.raises(ValueError, match=rf"{name} contains 1 non-finite.*\(1, 2, 3\)"):
        attn.scaled_dot_product_attention(*(attn.arr(arrays[k]) for k in "QKV"))


@pytest.mark.parametrize(
    ("shapes", "pattern"),
    [
        (
            ((4,), (5, 4), (5, 2)),
            r"Q must have shape \(\.\.\., n, d_k\); got shape \(4,\)",
        ),
        (
            ((3, 4), (4,), (5, 2)),
            r"K must have shape \(\.\.\., m, d_k\); got shape \(4,\)",
        ),
        (
            ((3, 4), (5, 4), (5,)),
            r"V must have shape \(\.\.\., m, d_v\); got shape \(5,\)",
        ),
        (((3, 4), (0, 4), (0, 2)), r"K has no keys \(m=0"),
        (((3, 0), (5, 0), (5, 2)), r"d_k=0"),
        (
            ((2, 3, 4), (3, 5, 4), (3, 5, 2)),
            r"batch axes of Q \(2,\), K \(3,\) and V \(3,\) do not broadcast",
        ),
    ],
)
def test_sdpa_shape_errors(attn, shapes, pattern):
    Q, K, V = (np.ones(s) for s in shapes)
    with pytest.raises(ValueError, match=pattern):
        attn.scaled_dot_product_attention(attn.arr(Q), attn.arr(K), attn.arr(V))


def test_sdpa_rejects_bool_inputs_and_non_finite_scale(attn):
    Q, K, V = qkv((), 2, 3, 2, 2)
    with pytest.raises(TypeError, match="Q must hold real numbers; got dtype"):
        attn.scaled_dot_product_attention(attn.arr(Q > 0), attn.arr(K), attn.arr(V))
    with pytest.raises(ValueError, match="scale must be a finite number; got nan"):
        attn.scaled_dot_product_attention(
            attn.arr(Q), attn.arr(K), attn.arr(V), scale=math.nan
        )


# ----------------------------------------------------------------- causal_mask


def test_causal_mask_is_lower_right_aligned(attn):
    mask = attn.np(attn.causal_mask(2, 4))
    assert mask.dtype == np.bool_
    np.testing.assert_array_equal(mask, [[1, 1, 1, 0], [1, 1, 1, 1]])


@pytest.mark.parametrize(("n", "m"), [(1, 1), (3, 3), (2, 4), (4, 2), (1, 6), (6, 1)])
def test_causal_mask_equals_torch_tril_with_diagonal_m_minus_n(attn, n, m):
    mask = attn.np(attn.causal_mask(n, m))
    expected = torch.ones(n, m, dtype=torch.bool).tril(diagonal=m - n).numpy()
    np.testing.assert_array_equal(mask, expected)
    assert mask.shape == (n, m)
    assert mask[-1].all(), "the last query sees every key"
    i, j = np.indices((n, m))
    np.testing.assert_array_equal(mask, j <= i + (m - n))


def test_causal_mask_default_m_is_n(attn):
    np.testing.assert_array_equal(
        attn.np(attn.causal_mask(4)), np.tril(np.ones((4, 4), dtype=bool))
    )


def test_causal_mask_n_greater_than_m_leaves_first_rows_empty(attn, reference):
    n, m = 5, 2
    mask = attn.np(attn.causal_mask(n, m))
    assert not mask[: n - m].any()
    assert mask[n - m :].any(axis=-1).all()
    Q, K, V = qkv((), n, m, 3, 2)
    out, weights = attn.scaled_dot_product_attention(
        attn.arr(Q), attn.arr(K), attn.arr(V), mask=attn.causal_mask(n, m)
    )
    assert (attn.np(out)[: n - m] == 0).all()
    np.testing.assert_allclose(attn.np(out), reference(Q, K, V, mask=mask)[0])


def test_causal_mask_matches_kv_cache_decoding(attn, reference):
    # the last 2 queries of a length-5 causal self-attention see the 5 keys
    # exactly as causal_mask(2, 5) lets them
    Q, K, V = qkv((), 5, 5, 3, 2)
    full, _ = attn.scaled_dot_product_attention(
        attn.arr(Q), attn.arr(K), attn.arr(V), mask=attn.causal_mask(5)
    )
    tail, _ = attn.scaled_dot_product_attention(
        attn.arr(Q[3:]), attn.arr(K), attn.arr(V), mask=attn.causal_mask(2, 5)
    )
    np.testing.assert_allclose(attn.np(tail), attn.np(full)[3:], rtol=1e-12)


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        ((0,), "n must be a positive integer; got 0"),
        ((3, -1), "m must be a positive integer; got -1"),
        ((2.5,), "n must be a positive integer; got 2.5"),
    ],
)
def test_causal_mask_errors(attn, args, pattern):
    with pytest.raises(ValueError, match=pattern):
        attn.causal_mask(*args)


# ---------------------------------------------------------------- padding_mask


def test_padding_mask_shape_and_values(attn):
    mask = attn.np(attn.padding_mask(attn.arr([3, 0, 5, 1]), 5))
    assert mask.shape == (4, 1, 1, 5)
    assert mask.dtype == np.bool_
    np.testing.assert_array_equal(
        mask[:, 0, 0],
        [
            [1, 1, 1, 0, 0],
            [0, 0, 0, 0, 0],
            [1, 1, 1, 1, 1],
            [1, 0, 0, 0, 0],
        ],
    )


def test_padding_mask_accepts_a_list_and_broadcasts_over_heads_and_queries(
    attn, reference
):
    lengths = [2, 4]
    mask = attn.padding_mask(lengths, 4)
    Q, K, V = qkv((2, 3), 5, 4, 2, 2)  # (batch, heads, ...)
    out, weights = attn.scaled_dot_product_attention(
        attn.arr(Q), attn.arr(K), attn.arr(V), mask=mask
    )
    weights = attn.np(weights)
    assert (weights[0, :, :, 2:] == 0).all()
    assert (weights[0, :, :, :2] > 0).all()
    assert (weights[1] > 0).all()
    np.testing.assert_allclose(
        attn.np(out), reference(Q, K, V, mask=attn.np(mask))[0], rtol=1e-10
    )


@pytest.mark.parametrize(
    ("lengths", "max_len", "pattern"),
    [
        ([2, 5], 4, r"lengths must lie in \[0, max_len=4\]; got \[2, 5\]"),
        ([-1, 2], 4, r"lengths must lie in \[0, max_len=4\]; got \[-1, 2\]"),
        ([1.0, 2.0], 4, r"lengths must be a 1-D .* of integers.*float"),
        ([[1, 2]], 4, r"lengths must be a 1-D .*shape \(1, 2\)"),
        ([1, 2], 0, "max_len must be a positive integer; got 0"),
    ],
)
def test_padding_mask_errors(attn, lengths, max_len, pattern):
    with pytest.raises(ValueError, match=pattern):
        attn.padding_mask(attn.arr(lengths), max_len)


# ---------------------------------------------------------- split/merge heads


@pytest.mark.parametrize(("num_heads", "d_model"), [(1, 6), (2, 6), (3, 6), (6, 6)])
def test_split_heads_shapes_and_columns(attn, num_heads, d_model):
    x = randn(2, 5, d_model)
    heads = attn.np(attn.split_heads(attn.arr(x), num_heads))
    d_k = d_model // num_heads
    assert heads.shape == (2, num_heads, 5, d_k)
    for h in range(num_heads):
        np.testing.assert_array_equal(heads[:, h], x[:, :, h * d_k : (h + 1) * d_k])


def test_split_then_merge_round_trip(attn):
    x = randn(3, 4, 8)
    heads = attn.split_heads(attn.arr(x), 4)
    np.testing.assert_array_equal(attn.np(attn.merge_heads(heads)), x)
    y = randn(3, 2, 4, 5)  # (batch, H, n, d_k)
    merged = attn.merge_heads(attn.arr(y))
    assert attn.np(merged).shape == (3, 4, 10)
    np.testing.assert_array_equal(attn.np(attn.split_heads(merged, 2)), y)


def test_split_heads_without_batch_and_with_extra_axes(attn):
    x = randn(5, 6)
    assert attn.np(attn.split_heads(attn.arr(x), 3)).shape == (3, 5, 2)
    x = randn(2, 3, 5, 6)
    heads = attn.np(attn.split_heads(attn.arr(x), 2))
    assert heads.shape == (2, 3, 2, 5, 3)
    np.testing.assert_array_equal(heads[:, :, 1], x[..., 3:])


def test_split_and_merge_errors(attn):
    with pytest.raises(ValueError, match="d_model=10 is not divisible by num_heads=4"):
        attn.split_heads(attn.arr(randn(2, 3, 10)), 4)
    with pytest.raises(ValueError, match="num_heads must be a positive integer; got 0"):
        attn.split_heads(attn.arr(randn(2, 3, 10)), 0)
    with pytest.raises(ValueError, match=r"x must have shape .*got shape \(10,\)"):
        attn.split_heads(attn.arr(randn(10)), 2)
    with pytest.raises(ValueError, match=r"x must have shape .*got shape \(3, 10\)"):
        attn.merge_heads(attn.arr(randn(3, 10)))


# -------------------------------------------------------- multi_head_attention


def mha_weights(d_model, seed=5):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(d_model, d_model)) / math.sqrt(d_model) for _ in range(4)]


def mha_loop(reference, X, W_Q, W_K, W_V, W_O, num_heads, mask=None, kv=None):
    """Per-head loop: head h uses columns h*d_k:(h+1)*d_k of each projection."""
    kv = X if kv is None else kv
    batch, n, d_model = X.shape
    m = kv.shape[1]
    d_k = d_model // num_heads
    full = None if mask is None else np.broadcast_to(mask, (batch, num_heads, n, m))
    heads, weights = [], []
    for h in range(num_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        out_h, w_h = reference(
            X @ W_Q[:, cols],
            kv @ W_K[:, cols],
            kv @ W_V[:, cols],
            mask=None if full is None else full[:, h],
        )
        heads.append(out_h)
        weights.append(w_h)
    return np.concatenate(heads, axis=-1) @ W_O, np.stack(weights, axis=1)


@pytest.mark.parametrize("num_heads", [1, 2, 4, 8])
def test_mha_equals_per_head_loop(attn, reference, num_heads):
    X = randn(2, 3, 8)
    W = mha_weights(8)
    out, weights = attn.multi_head_attention(
        attn.arr(X), *(attn.arr(w) for w in W), num_heads
    )
    out, weights = attn.np(out), attn.np(weights)
    assert out.shape == (2, 3, 8)
    assert weights.shape == (2, num_heads, 3, 3)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-12)
    out_ref, w_ref = mha_loop(reference, X, *W, num_heads)
    np.testing.assert_allclose(weights, w_ref, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(out, out_ref, rtol=1e-10, atol=1e-12)


def test_mha_one_head_is_single_head_attention_then_W_O(attn, reference):
    X = randn(1, 4, 6)
    W_Q, W_K, W_V, W_O = mha_weights(6)
    out, weights = attn.multi_head_attention(
        attn.arr(X), *(attn.arr(w) for w in (W_Q, W_K, W_V, W_O)), 1
    )
    single, w1 = reference(X @ W_Q, X @ W_K, X @ W_V)
    np.testing.assert_allclose(attn.np(out), single @ W_O, rtol=1e-10)
    np.testing.assert_allclose(attn.np(weights)[:, 0], w1, rtol=1e-10)


def test_mha_cross_attention_with_kv_of_other_length(attn, reference):
    X, kv = randn(2, 3, 8), randn(2, 7, 8, seed=9)
    W = mha_weights(8)
    out, weights = attn.multi_head_attention(
        attn.arr(X), *(attn.arr(w) for w in W), 2, kv=attn.arr(kv)
    )
    assert attn.np(out).shape == (2, 3, 8)
    assert attn.np(weights).shape == (2, 2, 3, 7)
    out_ref, w_ref = mha_loop(reference, X, *W, 2, kv=kv)
    np.testing.assert_allclose(attn.np(out), out_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(attn.np(weights), w_ref, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("kind", ["causal", "padding", "per_head"])
def test_mha_mask(attn, reference, kind):
    X = randn(2, 4, 8)
    W = mha_weights(8)
    if kind == "causal":
        mask = attn.np(attn.causal_mask(4))
    elif kind == "padding":
        mask = attn.np(attn.padding_mask([4, 2], 4))
    else:
        mask = np.random.default_rng(6).random((2, 2, 4, 4)) < 0.5
    out, weights = attn.multi_head_attention(
        attn.arr(X), *(attn.arr(w) for w in W), 2, mask=attn.arr(mask)
    )
    weights = attn.np(weights)
    assert (weights[~np.broadcast_to(mask, weights.shape)] == 0).all()
    out_ref, w_ref = mha_loop(reference, X, *W, 2, mask=mask)
    np.testing.assert_allclose(attn.np(out), out_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights, w_ref, rtol=1e-10, atol=1e-14)


def test_mha_seed_003_all_ones_weights_make_every_head_identical(attn, reference):
    # seed 003: X (2, 3, 4) of 1..24, W_Q = W_K = W_V = W_O = ones, 2 heads
    X = np.arange(1, 25).reshape(2, 3, 4)
    W = np.ones((4, 4))
    out, weights = attn.multi_head_attention(attn.arr(X), *[attn.arr(W)] * 4, 2)
    out, weights = attn.np(out), attn.np(weights)
    assert out.shape == (2, 3, 4) and weights.shape == (2, 2, 3, 3)
    np.testing.assert_array_equal(weights[:, 0], weights[:, 1])
    # saturated: every query puts (almost) all its weight on the last key
    assert (weights[..., -1] > 1 - 1e-6).all()
    out_ref, w_ref = mha_loop(reference, X.astype(float), W, W, W, W, 2)
    np.testing.assert_allclose(weights, w_ref, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(out, out_ref, rtol=1e-6)


def test_mha_errors(attn):
    X = randn(2, 3, 10)
    W = [attn.arr(w) for w in mha_weights(10)]
    with pytest.raises(ValueError, match="d_model=10 is not divisible by num_heads=4"):
        attn.multi_head_attention(attn.arr(X), *W, 4)
    with pytest.raises(
        ValueError,
        match=r"X must have shape \(batch, n, d_model\); got \(3, 10\) \(add a batch",
    ):
        attn.multi_head_attention(attn.arr(X[0]), *W, 2)
    with pytest.raises(
        ValueError,
        match=r"W_K must have shape \(d_model, d_model\) = \(10, 10\).*got \(10, 8\)",
    ):
        attn.multi_head_attention(attn.arr(X), W[0], W[1][:, :8], W[2], W[3], 2)
    with pytest.raises(
        ValueError,
        match=r"kv must have shape \(batch, m, d_model\) = \(2, m, 10\).*\(2, 5, 8\)",
    ):
        attn.multi_head_attention(attn.arr(X), *W, 2, kv=attn.arr(randn(2, 5, 8)))
    with pytest.raises(ValueError, match=r"kv must have shape .*got \(3, 5, 10\)"):
        attn.multi_head_attention(attn.arr(X), *W, 2, kv=attn.arr(randn(3, 5, 10)))
    with pytest.raises(ValueError, match="num_heads must be a positive integer; got 0"):
        attn.multi_head_attention(attn.arr(X), *W, 0)
    with pytest.raises(TypeError, match="mask must be boolean.*mask == 0"):
        attn.multi_head_attention(attn.arr(X), *W, 2, mask=attn.arr(np.zeros((3, 3))))
    with pytest.raises(
        ValueError, match=r"mask of shape \(4, 4\) is not broadcastable"
    ):
        attn.multi_head_attention(attn.arr(X), *W, 2, mask=attn.causal_mask(4))


@pytest.mark.parametrize("name", ["X", "kv", "W_Q", "W_O"])
def test_mha_rejects_nan(attn, name):
    X, kv = randn(2, 3, 4), randn(2, 5, 4, seed=2)
    W = dict(zip(["W_Q", "W_K", "W_V", "W_O"], mha_weights(4), strict=True))
    arrays = {"X": X, "kv": kv, **W}
    arrays[name][1, 1] = np.nan
    with pytest.raises(ValueError, match=rf"{name} contains \d+ non-finite"):
        attn.multi_head_attention(
            attn.arr(arrays["X"]),
            *(attn.arr(arrays[k]) for k in ["W_Q", "W_K", "W_V", "W_O"]),
            2,
            kv=attn.arr(arrays["kv"]),
        )


# ------------------------------------------------------------ online_attention


@pytest.mark.parametrize("block_size", [1, 2, 3, 4, 6, 7, 8, 128])
def test_online_attention_equals_reference_for_every_block_size(
    attn, reference, block_size
):
    Q, K, V = qkv((2,), 3, 7, 4, 5)  # m = 7: most block sizes do not divide it
    out = attn.online_attention(attn.arr(Q), attn.arr(K), attn.arr(V), block_size)
    assert attn.np(out).shape == (2, 3, 5)
    np.testing.assert_allclose(
        attn.np(out), reference(Q, K, V)[0], rtol=1e-10, atol=1e-12
    )


def test_online_attention_default_block_size_and_sdpa_agree(attn):
    Q, K, V = qkv((2, 2), 5, 9, 3, 4)
    out = attn.online_attention(attn.arr(Q), attn.arr(K), attn.arr(V))
    ref, _ = attn.scaled_dot_product_attention(attn.arr(Q), attn.arr(K), attn.arr(V))
    np.testing.assert_allclose(attn.np(out), attn.np(ref), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("masked", [False, True])
def test_online_attention_broadcasts_batch_axes(attn, reference, masked):
    rng = np.random.default_rng(2)
    Q = rng.normal(size=(2, 1, 3, 4))
    K = rng.normal(size=(1, 5, 6, 4))
    V = rng.normal(size=(5, 6, 2))
    mask = rng.random((5, 1, 6)) < 0.6 if masked else None  # (heads, 1, m)
    out = attn.online_attention(
        attn.arr(Q), attn.arr(K), attn.arr(V), block_size=4,
        mask=None if mask is None else attn.arr(mask),
    )  # fmt: skip
    assert attn.np(out).shape == (2, 5, 3, 2)
    out_ref, _ = reference(Q, K, V, mask=mask)
    np.testing.assert_allclose(attn.np(out), out_ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("block_size", [1, 2, 3, 5])
def test_online_attention_with_mask_and_fully_masked_rows(attn, reference, block_size):
    Q, K, V = qkv((2,), 4, 7, 3, 2)
    mask = np.random.default_rng(7).random((2, 4, 7)) < 0.4
    mask[0, 2] = False  # fully masked row
    mask[1, 0] = False
    mask[1, 3, :] = False
    mask[1, 3, 6] = True  # only the last key, in the last (short) block
    out = attn.np(
        attn.online_attention(
            attn.arr(Q), attn.arr(K), attn.arr(V), block_size, mask=attn.arr(mask)
        )
    )
    assert np.isfinite(out).all()
    assert (out[0, 2] == 0).all() and (out[1, 0] == 0).all()
    np.testing.assert_allclose(out[1, 3], V[1, 6], rtol=1e-12)
    np.testing.assert_allclose(
        out, reference(Q, K, V, mask=mask)[0], rtol=1e-10, atol=1e-12
    )


@pytest.mark.parametrize(("n", "m"), [(3, 7), (7, 3), (5, 5)])
@pytest.mark.parametrize("block_size", [1, 2, 4])
def test_online_attention_causal_n_not_m(attn, reference, n, m, block_size):
    Q, K, V = qkv((), n, m, 4, 3)
    out = attn.online_attention(
        attn.arr(Q), attn.arr(K), attn.arr(V), block_size, mask=attn.causal_mask(n, m)
    )
    mask = attn.np(attn.causal_mask(n, m))
    np.testing.assert_allclose(
        attn.np(out), reference(Q, K, V, mask=mask)[0], rtol=1e-10, atol=1e-12
    )


def test_online_attention_huge_scores_and_float32(attn, reference):
    Q, K, V = (x.astype(np.float32) for x in qkv((), 3, 9, 4, 2))
    Q = Q * 40  # scores in the hundreds: exp would overflow without the running max
    out = attn.online_attention(attn.arr(Q), attn.arr(K), attn.arr(V), block_size=2)
    assert attn.dtype_name(out) == "float32"
    assert np.isfinite(attn.np(out)).all()
    np.testing.assert_allclose(
        attn.np(out), reference(Q, K, V)[0], rtol=1e-5, atol=1e-5
    )


def test_online_attention_errors(attn):
    Q, K, V = qkv((), 3, 5, 4, 2)
    with pytest.raises(
        ValueError, match="block_size must be a positive integer; got 0"
    ):
        attn.online_attention(attn.arr(Q), attn.arr(K), attn.arr(V), 0)
    with pytest.raises(ValueError, match="K has d_k=3 but Q has d_k=4"):
        attn.online_attention(attn.arr(Q), attn.arr(K[:, :3]), attn.arr(V))
    with pytest.raises(ValueError, match="K has m=5 keys but V has 4 values"):
        attn.online_attention(attn.arr(Q), attn.arr(K), attn.arr(V[:4]))
    with pytest.raises(TypeError, match="mask must be boolean.*mask == 0"):
        attn.online_attention(
            attn.arr(Q), attn.arr(K), attn.arr(V), mask=attn.arr(np.ones((3, 5)))
        )
    with pytest.raises(
        ValueError, match=r"mask of shape \(3, 4\) is not broadcastable"
    ):
        attn.online_attention(
            attn.arr(Q), attn.arr(K), attn.arr(V), mask=attn.arr(np.ones((3, 4), bool))
        )
    Q[0, 0] = np.inf
    with pytest.raises(ValueError, match=r"Q contains 1 non-finite.*\(0, 0\)"):
        attn.online_attention(attn.arr(Q), attn.arr(K), attn.arr(V))
