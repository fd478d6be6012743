"""Scaled dot-product attention in NumPy, from one query to many heads.

This module never imports torch. ``helpers.attention_torch`` has the same
functions for PyTorch. Masks are boolean with True = may attend.

Float inputs keep their dtype (float32 in, float32 out); integer inputs are
computed in float64, as NumPy itself would.
"""

import numpy as np

from helpers import _arrays, _validate, _validate_linear


def _as_float(x, name, allow_neg_inf=False):
    """Return ``x`` as a floating ndarray; reject non-numbers, NaN and inf."""
    x = _arrays.real_numbers(np.asarray(x), name)
    if not np.issubdtype(x.dtype, np.floating):
        return x.astype(np.float64)
    if not allow_neg_inf:
        with np.errstate(over="ignore", invalid="ignore"):
            if np.isfinite(x.sum()):
                return x  # one cheap pass: NaN or inf anywhere makes the sum non-finite
    bad = np.isnan(x) | np.isposinf(x) if allow_neg_inf else ~np.isfinite(x)
    if bad.any():
        where = np.argwhere(bad)[0]
        raise ValueError(
            _validate.non_finite_message(
                name, int(bad.sum()), x[tuple(where)], where.tolist(), allow_neg_inf
            )
        )
    return x


def _float_inputs(**arrays):
    """The named inputs as floating ndarrays of one dtype, in the order given.

    NaN or inf in any of them is reported by name; integers become float64.
    """
    arrays = [_as_float(x, name) for name, x in arrays.items()]
    dtype = np.result_type(*arrays)
    return [x.astype(dtype, copy=False) for x in arrays]


def _check_mask(mask, scores_shape):
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise TypeError(_validate.mask_dtype_message(mask.dtype))
    _validate.mask_shape(mask.shape, scores_shape)
    return mask


def _softmax(x, axis):
    """Max-subtracted softmax; rows that are all -inf give all zeros."""
    shift = np.max(x, axis=axis, keepdims=True)
    shift[~np.isfinite(shift)] = 0.0  # all -inf: exp(-inf - 0) = 0
    e = np.exp(x - shift)
    total = np.sum(e, axis=axis, keepdims=True)
    total[total == 0] = 1.0  # an all-masked row: 0 / 1 = 0, not 0 / 0 = NaN
    e /= total
    return e


def softmax(x, axis=-1):
    """Stable softmax along ``axis``: subtract the max, exponentiate, normalise.

    Entries equal to -inf get weight 0; a row that is entirely -inf gives all
    zeros (not NaN), the convention for a query that may attend to nothing.

    Shapes:
        x: any shape; the result has the same shape and sums to 1 along ``axis``.
    """
    x = _as_float(x, "x", allow_neg_inf=True)
    _validate.softmax_axis(x.shape, axis)
    return _softmax(x, axis)


def attention_one_query(q, K, V, scale=None):
    """Attention for one query, written as the per-key sum of seed 000.

    y = sum_s (1/Z) exp(score_s) v_s with score_s = <q, k_s> * scale and
    Z = sum_j exp(score_j). The loop runs over keys; the exponentials are taken
    after subtracting the largest score, so ``y`` and ``weights`` stay exact even
    where ``Z`` itself overflows to inf.

    Shapes:
        q: (d_k,)  K: (m, d_k)  V: (m, d_v)
        returns y: (d_v,), weights: (m,), Z: float
    """
    d_k = _validate.one_query_shapes(np.shape(q), np.shape(K), np.shape(V))
    q, K, V = _float_inputs(q=q, K=K, V=V)
    dtype = q.dtype
    scale = _validate.default_scale(scale, d_k)
    m = K.shape[0]

    scores = np.empty(m, dtype=dtype)
    for s in range(m):
        scores[s] = np.dot(q, K[s]) * scale  # score(q, k_s) = <q, k_s> / sqrt(d_k)
    top = scores.max()
    unnormalised = np.empty(m, dtype=dtype)
    for s in range(m):
        unnormalised[s] = np.exp(scores[s] - top)  # exp(score_s) / exp(top)
    z_shifted = unnormalised.sum()  # Z / exp(top), at least 1
    weights = unnormalised / z_shifted
    y = np.zeros(V.shape[1], dtype=dtype)
    for s in range(m):
        y += weights[s] * V[s]
    with np.errstate(over="ignore"):
        Z = float(z_shifted) * float(np.exp(np.float64(top)))
    return y, weights, Z


def scaled_dot_product_attention(Q, K, V, mask=None, scale=None):
    """softmax(Q K^T * scale, masked) @ V, batched over leading axes.

    ``mask`` is boolean, True = may attend, broadcastable to (..., n, m). A query
    whose row is fully masked gets zero weights and a zero output row.
    ``scale`` defaults to 1/sqrt(d_k).

    Shapes:
        Q: (..., n, d_k)  K: (..., m, d_k)  V: (..., m, d_v)
        returns output: (..., n, d_v), weights: (..., n, m)
    """
    batch, n, m, d_k, _ = _validate.qkv_shapes(np.shape(Q), np.shape(K), np.shape(V))
    Q, K, V = _float_inputs(Q=Q, K=K, V=V)
    scale = _validate.default_scale(scale, d_k)
    scores = Q @ np.swapaxes(K, -1, -2)  # (..., n, m)
    scores *= scale
    if mask is not None:
        mask = _check_mask(mask, batch + (n, m))
        scores = np.where(mask, scores, -np.inf)
    weights = _softmax(scores, axis=-1)  # (..., n, m)
    return weights @ V, weights  # (..., n, d_v), (..., n, m)


def causal_mask(n, m=None, window=None):
    """Boolean (n, m) mask, True = may attend, aligned lower-right.

    Query i may see key j when j <= i + (m - n): the last query sees every key,
    as in a KV cache where n new queries follow m - n cached keys. With n > m the
    first n - m queries see no key at all (their rows are all False). With
    ``window=w`` (sliding-window attention) query i sees key j only when
    0 <= (i + m - n) - j < w: itself and the w - 1 keys before it.

    Shapes:
        returns (n, m), m defaults to n
    """
    n = _validate.positive_int("n", n)
    m = n if m is None else _validate.positive_int("m", m)
    if window is None:
        return np.tril(np.ones((n, m), dtype=bool), k=m - n)
    window = _validate.window(window)
    offset = np.arange(n)[:, None] + (m - n) - np.arange(m)[None, :]  # (n, m)
    return (offset >= 0) & (offset < window)


def padding_mask(lengths, max_len):
    """Boolean (batch, 1, 1, max_len) mask, True for the real (unpadded) tokens.

    The two size-1 axes broadcast over heads and queries.

    Shapes:
        lengths: (batch,) ints in [0, max_len]
        returns (batch, 1, 1, max_len)
    """
    max_len = _validate.positive_int("max_len", max_len)
    lengths = np.asarray(lengths)
    is_integer = np.issubdtype(lengths.dtype, np.integer)
    values = lengths.tolist() if lengths.ndim == 1 and is_integer else []
    _validate.padding_lengths(lengths.shape, lengths.dtype, is_integer, values, max_len)
    keep = np.arange(max_len) < lengths[:, None]  # (batch, max_len)
    return keep[:, None, None, :]


def split_heads(x, num_heads):
    """(..., n, d_model) -> (..., num_heads, n, d_model // num_heads).

    A reshape that cuts d_model into heads, then a transpose that moves the
    head axis in front of the sequence axis.

    Shapes:
        x: (batch, n, d_model) -> (batch, num_heads, n, d_k)
    """
    x = np.asarray(x)
    _validate.require_ndim("x", x.shape, 2, "(..., n, d_model)")
    *lead, n, d_model = x.shape
    d_k = _validate.heads(d_model, num_heads)
    x = x.reshape(*lead, n, num_heads, d_k)  # (..., n, H, d_k)
    return np.swapaxes(x, -2, -3)  # (..., H, n, d_k)


def merge_heads(x):
    """(..., num_heads, n, d_k) -> (..., n, num_heads * d_k); inverse of split.

    Shapes:
        x: (batch, num_heads, n, d_k) -> (batch, n, d_model)
    """
    x = np.asarray(x)
    _validate.require_ndim("x", x.shape, 3, "(..., num_heads, n, d_k)")
    *lead, num_heads, n, d_k = x.shape
    x = np.swapaxes(x, -2, -3)  # (..., n, H, d_k)
    return x.reshape(*lead, n, num_heads * d_k)


def multi_head_attention(
    X, W_Q, W_K, W_V, W_O, num_heads, mask=None, kv=None, num_kv_heads=None
):
    """Multi-head attention: project, split heads, attend, merge, project.

    Q = X @ W_Q, K = kv @ W_K, V = kv @ W_V (kv defaults to X: self-attention),
    each head attends with its own d_k = d_model / num_heads, and the merged heads
    go through W_O. ``mask`` (True = may attend) broadcasts to
    (batch, num_heads, n, m).

    Grouped-query attention: with ``num_kv_heads`` (a divisor of num_heads), W_K
    and W_V give only num_kv_heads heads of size d_k, and query head h uses K/V
    head h // (num_heads // num_kv_heads). num_kv_heads=1 is multi-query attention.

    Shapes:
        X: (batch, n, d_model)  kv: (batch, m, d_model)
        W_Q, W_O: (d_model, d_model)  W_K, W_V: (d_model, num_kv_heads * d_k)
        returns output: (batch, n, d_model), weights: (batch, num_heads, n, m)
    """
    kv = X if kv is None else kv
    weights = {"W_Q": W_Q, "W_K": W_K, "W_V": W_V, "W_O": W_O}
    d_k = _validate.heads(np.shape(X)[-1], num_heads)
    num_kv_heads = _validate.kv_heads(num_heads, num_kv_heads)
    shapes = {k: np.shape(w) for k, w in weights.items()}
    _validate.mha_shapes(np.shape(X), np.shape(kv), shapes, kv_width=num_kv_heads * d_k)
    X, kv, W_Q, W_K, W_V, W_O = _float_inputs(X=X, kv=kv, **weights)
    group = num_heads // num_kv_heads  # query heads per K/V head
    Q = split_heads(X @ W_Q, num_heads)  # (batch, H, n, d_k)
    K = split_heads(kv @ W_K, num_kv_heads)  # (batch, H_kv, m, d_k)
    V = split_heads(kv @ W_V, num_kv_heads)  # (batch, H_kv, m, d_k)
    K = np.repeat(K, group, axis=-3)  # (batch, H, m, d_k): head h gets h // group
    V = np.repeat(V, group, axis=-3)  # (batch, H, m, d_k)
    heads_out, attn = scaled_dot_product_attention(Q, K, V, mask=mask)
    return merge_heads(heads_out) @ W_O, attn  # (batch, n, d_model), (batch, H, n, m)


def rope(x, positions=None, base=10000.0):
    """Rotary position embedding: rotate coordinate pairs by position-dependent angles.

    Pairs are interleaved, as in the RoFormer paper: pair i holds coordinates
    (2i, 2i + 1) and turns by the angle position * base ** (-2i / d). A rotation
    keeps every norm, position 0 is the identity, and after rotating queries and
    keys, q . k depends only on the offset between their positions.

    Shapes:
        x: (..., n, d), d even  positions: (n,) or broadcastable to (..., n);
        default 0..n-1. Returns the shape and float dtype of x.
    """
    x = _as_float(x, "x")
    if positions is not None:
        positions = _as_float(positions, "positions")
    _validate.rope_shapes(x.shape, None if positions is None else np.shape(positions))
    base = _validate.rope_base(base)
    n, d = x.shape[-2:]
    if positions is None:
        positions = np.arange(n)
    freqs = base ** (-np.arange(0, d, 2) / d)  # (d/2,) angle per unit of position
    angles = np.asarray(positions, dtype=np.float64)[..., None] * freqs  # (..., n, d/2)
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., n, d/2) each: the pairs
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin  # each pair turns by its angle
    out[..., 1::2] = even * sin + odd * cos
    return out


def online_attention(Q, K, V, block_size=128, mask=None):
    """Attention over blocks of keys with a running max and a running sum (Z).

    The FlashAttention forward pass (lesson 08): one loop over blocks of keys.
    Each block's scores shift by the running max; when the max grows, the
    running sum and the accumulator are rescaled by exp(old max - new max).
    Holds (..., n, block_size) scores at a time, never (..., n, m), yet equals
    ``scaled_dot_product_attention`` (fully masked rows give zeros).

    Shapes:
        Q: (..., n, d_k)  K: (..., m, d_k)  V: (..., m, d_v)  mask: -> (..., n, m)
        returns output: (..., n, d_v)
    """
    batch, n, m, d_k, d_v = _validate.qkv_shapes(np.shape(Q), np.shape(K), np.shape(V))
    block_size = _validate.positive_int("block_size", block_size)
    Q, K, V = _float_inputs(Q=Q, K=K, V=V)
    if mask is not None:
        mask = np.broadcast_to(_check_mask(mask, batch + (n, m)), batch + (n, m))
    Q = Q * _validate.default_scale(None, d_k)  # (..., n, d_k), scaled once

    running_max = np.full(batch + (n, 1), -np.inf, dtype=Q.dtype)  # max score so far
    running_sum = np.zeros(batch + (n, 1), dtype=Q.dtype)  # sum of exp(score - max)
    acc = np.zeros(batch + (n, d_v), dtype=Q.dtype)  # sum of exp(score - max) v
    for start in range(0, m, block_size):
        keys = slice(start, start + block_size)
        scores = Q @ np.swapaxes(K[..., keys, :], -1, -2)  # (..., n, b)
        if mask is not None:
            scores = np.where(mask[..., keys], scores, -np.inf)
        new_max = np.maximum(running_max, scores.max(axis=-1, keepdims=True))
        # a row that has seen no key yet has max -inf: shift it by 0 instead
        shift = np.where(new_max > -np.inf, new_max, 0.0)  # (..., n, 1)
        p = np.exp(scores - shift)  # (..., n, b)
        correction = np.exp(running_max - shift)  # rescales the old sums
        running_sum = running_sum * correction + p.sum(axis=-1, keepdims=True)
        acc = acc * correction + p @ V[..., keys, :]  # (..., n, d_v)
        running_max = new_max
    running_sum[running_sum == 0] = 1.0  # fully masked rows: 0 / 1 = 0
    return acc / running_sum


def _elu_plus_one(x):
    """elu(x) + 1: x + 1 for x > 0, exp(x) otherwise; always > 0."""
    return np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))


def _features(Q, K, feature_map):
    """phi(Q), phi(K) as float arrays, checked: same size r, finite, >= 0."""
    fn = _elu_plus_one if feature_map is None else feature_map
    phi = []
    for name, x in (("Q", Q), ("K", K)):
        f = _as_float(fn(x), f"feature_map({name})")
        if f.size and f.min() < 0:
            raise ValueError(_validate_linear.negative_features_message(name, f.min()))
        phi.append(f)
    _validate_linear.feature_shapes(Q.shape, K.shape, phi[0].shape, phi[1].shape)
    return phi


def linear_attention(Q, K, V, feature_map=None, causal=False):
    """Attention with the similarity phi(q) . phi(k), summed as running states.

    Equal to normalising phi(Q) phi(K)^T row by row (masked lower-right when
    ``causal``: query i sees keys j <= i + (m - n)) and multiplying by V, but
    computed as phi(Q) (phi(K)^T V) / phi(Q) sum_j phi(k_j): never (n, m).
    Causal: one loop over keys, the state S += phi(k_j) v_j^T, z += phi(k_j),
    read by the query at that position (an RNN). A query that sees no key
    (n > m) gets zeros. ``feature_map`` defaults to elu(x) + 1.

    Shapes:
        Q: (..., n, d_k)  K: (..., m, d_k)  V: (..., m, d_v)
        phi(Q): (..., n, r)  phi(K): (..., m, r)  returns (..., n, d_v)
    """
    batch, n, m, _, d_v = _validate.qkv_shapes(np.shape(Q), np.shape(K), np.shape(V))
    _validate_linear.feature_map(feature_map)
    causal = _validate_linear.causal_flag(causal)
    Q, K, V = _float_inputs(Q=Q, K=K, V=V)
    phi_q, phi_k = _features(Q, K, feature_map)  # (..., n, r), (..., m, r)
    phi_q, phi_k = (x.astype(V.dtype, copy=False) for x in (phi_q, phi_k))
    if not causal:
        S = np.swapaxes(phi_k, -1, -2) @ V  # (..., r, d_v): sum_j phi(k_j) v_j^T
        z = phi_k.sum(axis=-2)[..., None]  # (..., r, 1): sum_j phi(k_j)
        num, Z = phi_q @ S, phi_q @ z  # (..., n, d_v), (..., n, 1)
        seen = np.ones(batch + (n, 1), dtype=bool)
    else:
        num = np.zeros(batch + (n, d_v), dtype=V.dtype)  # (..., n, d_v)
        Z = np.zeros(batch + (n, 1), dtype=V.dtype)  # (..., n, 1)
        S = np.zeros(batch + (phi_k.shape[-1], d_v), dtype=V.dtype)  # (..., r, d_v)
        z = np.zeros(batch + (phi_k.shape[-1],), dtype=V.dtype)  # (..., r)
        for j in range(m):
            S = S + phi_k[..., j, :, None] * V[..., j, None, :]  # write phi(k_j) v_j^T
            z = z + phi_k[..., j, :]  # (..., r)
            i = j - (m - n)  # the query at key j's position reads the state
            if i >= 0:
                num[..., i, :] = np.einsum("...r,...rv->...v", phi_q[..., i, :], S)
                Z[..., i, 0] = np.einsum("...r,...r->...", phi_q[..., i, :], z)
        seen = (np.arange(n) >= n - m)[:, None]  # (n, 1): the first n - m see nothing
    bad = seen & ~(Z > 0)
    if bad.any():
        raise ValueError(
            _validate_linear.zero_normaliser_message(np.argwhere(bad)[0][-2])
        )
    return np.where(seen, num, 0) / np.where(seen, Z, 1)  # (..., n, d_v)


def delta_rule(Q, K, V, beta):
    """The delta rule (DeltaNet): a fixed-size state that corrects what it recalls.

    The state S (..., d_k, d_v) starts at 0. For each step t: read the
    prediction S^T k_t first, then write S <- S + beta_t k_t (v_t - S^T k_t)^T,
    then read y_t = S^T q_t. With beta_t = 1 and a unit-norm k_t, S^T k_t = v_t
    right after the write. Without the "- S^T k_t" it is causal linear attention
    with the identity feature map and no normaliser.

    Shapes:
        Q, K: (..., n, d_k)  V: (..., n, d_v)  beta: scalar or (..., n), in (0, 1]
        returns y: (..., n, d_v)
    """
    batch, n, d_k, d_v = _validate_linear.delta_shapes(
        np.shape(Q), np.shape(K), np.shape(V)
    )
    Q, K, V = _float_inputs(Q=Q, K=K, V=V)
    beta = _as_float(beta, "beta").astype(V.dtype, copy=False)  # keeps float32
    _validate_linear.beta_shape(beta.shape, batch, n)
    _validate_linear.beta_range(float(beta.min()), float(beta.max()))
    beta = np.broadcast_to(beta, batch + (n,))  # (..., n)
    S = np.zeros(batch + (d_k, d_v), dtype=V.dtype)  # (..., d_k, d_v)
    y = np.zeros(batch + (n, d_v), dtype=V.dtype)  # (..., n, d_v)
    for t in range(n):
        k, v, q = K[..., t, :], V[..., t, :], Q[..., t, :]  # (..., d_k|d_v)
        prediction = np.einsum("...kv,...k->...v", S, k)  # (..., d_v): read first
        error = (v - prediction) * beta[..., t, None]  # (..., d_v)
        S = S + k[..., :, None] * error[..., None, :]  # (..., d_k, d_v): then write
        y[..., t, :] = np.einsum("...kv,...k->...v", S, q)  # (..., d_v)
    return y
