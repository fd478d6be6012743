"""Scaled dot-product attention in PyTorch: the functions of ``attention_np``.

Same names, same arguments, same mask convention (boolean, True = may attend),
written with torch operations so that everything is differentiable. Float
inputs keep their dtype; integer inputs are computed in torch's default float
dtype. NumPy arrays are accepted and converted with ``torch.as_tensor``.
Lesson 10's ``MultiHeadAttention`` (an nn.Module) lives in ``attention_layer``
and is re-exported here: ``atn.MultiHeadAttention``.
"""

import math

import torch

from helpers import _validate, _validate_linear
from helpers.i18n import _


def _as_float(x, name, allow_neg_inf=False):
    """Return ``x`` as a floating tensor; reject non-numbers, NaN and inf."""
    x = torch.as_tensor(x)
    if x.dtype == torch.bool or x.is_complex():
        raise TypeError(
            _("{name} must hold real numbers; got dtype {dtype}").format(
                name=name, dtype=x.dtype
            )
        )
    if not x.is_floating_point():
        return x.to(torch.get_default_dtype())
    if not allow_neg_inf and torch.isfinite(x.detach().sum()):
        return x  # one cheap pass: a NaN or inf anywhere makes the sum non-finite
    bad = torch.isnan(x) | torch.isposinf(x) if allow_neg_inf else ~torch.isfinite(x)
    if bad.any():
        where = torch.nonzero(bad)[0]
        raise ValueError(
            _validate.non_finite_message(
                name,
                int(bad.sum()),
                x[tuple(where)].item(),
                where.tolist(),
                allow_neg_inf,
            )
        )
    return x


def _float_inputs(**tensors):
    """The named inputs as floating tensors of one dtype, in the order given.

    NaN or inf in any of them is reported by name; integers become torch's
    default float dtype.
    """
    tensors = [_as_float(x, name) for name, x in tensors.items()]
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    return [t.to(dtype) for t in tensors]


def _check_mask(mask, scores_shape):
    mask = torch.as_tensor(mask)
    if mask.dtype != torch.bool:
        raise TypeError(_validate.mask_dtype_message(mask.dtype))
    _validate.mask_shape(tuple(mask.shape), scores_shape)
    return mask


def _softmax(x, axis):
    """Max-subtracted softmax; rows that are all -inf give all zeros.

    The max is detached: softmax does not change when a constant is subtracted,
    so its gradient does not flow through the shift.
    """
    shift = x.detach().amax(dim=axis, keepdim=True)
    shift = torch.where(torch.isfinite(shift), shift, torch.zeros_like(shift))
    e = torch.exp(x - shift)
    total = e.sum(dim=axis, keepdim=True)
    # An all-masked row has total 0: divide by 1 there so 0 / 1 = 0, not NaN.
    return e / torch.where(total == 0, torch.ones_like(total), total)


def softmax(x, axis=-1):
    """Stable softmax along ``axis``, as ``attention_np.softmax``, differentiable.

    -inf entries get weight 0; a row of only -inf (a query that may attend to
    nothing) gives zeros, and zero gradients rather than NaN.

    Shapes:
        x: any shape; the result has the same shape and sums to 1 along ``axis``.
    """
    x = _as_float(x, "x", allow_neg_inf=True)
    _validate.softmax_axis(tuple(x.shape), axis)
    return _softmax(x, axis)


def attention_one_query(q, K, V, scale=None):
    """Attention for one query: y = sum_s (1/Z) exp(score_s) v_s, vectorised.

    score_s = <q, k_s> * scale, Z = sum_j exp(score_j). ``y`` and ``weights`` use
    the max-shifted exponentials, so they stay exact where ``Z`` overflows.

    Shapes:
        q: (d_k,)  K: (m, d_k)  V: (m, d_v)
        returns y: (d_v,), weights: (m,), Z: float
    """
    q, K, V = torch.as_tensor(q), torch.as_tensor(K), torch.as_tensor(V)
    d_k = _validate.one_query_shapes(tuple(q.shape), tuple(K.shape), tuple(V.shape))
    q, K, V = _float_inputs(q=q, K=K, V=V)
    scale = _validate.default_scale(scale, d_k)
    scores = (K @ q) * scale  # (m,)  score(q, k_s) = <q, k_s> / sqrt(d_k)
    weights = torch.softmax(scores, dim=0)  # (m,)  exp(score_s) / Z
    y = weights @ V  # (d_v,)  sum_s a_s v_s
    Z = torch.logsumexp(scores.detach().double(), dim=0).exp().item()
    return y, weights, Z


def scaled_dot_product_attention(Q, K, V, mask=None, scale=None):
    """softmax(Q K^T * scale, masked) @ V, batched over leading axes.

    ``mask`` is boolean, True = may attend, broadcastable to (..., n, m). A query
    whose row is fully masked gets zero weights and a zero output row, as
    ``torch.nn.functional.scaled_dot_product_attention`` gives.

    Shapes:
        Q: (..., n, d_k)  K: (..., m, d_k)  V: (..., m, d_v)
        returns output: (..., n, d_v), weights: (..., n, m)
    """
    Q, K, V = torch.as_tensor(Q), torch.as_tensor(K), torch.as_tensor(V)
    batch, n, m, d_k, _ = _validate.qkv_shapes(
        tuple(Q.shape), tuple(K.shape), tuple(V.shape)
    )
    Q, K, V = _float_inputs(Q=Q, K=K, V=V)
    scale = _validate.default_scale(scale, d_k)
    scores = (Q * scale) @ K.transpose(-2, -1)  # (..., n, m); scaling Q costs n*d_k
    if mask is None:
        weights = torch.softmax(scores, dim=-1)  # (..., n, m)
        return weights @ V, weights  # (..., n, d_v), (..., n, m)
    mask = _check_mask(mask, batch + (n, m))
    # A fully masked row would be softmax(all -inf) = NaN. Such rows keep every key
    # here (finite weights and gradients), and their weights are zeroed after.
    has_key = mask.any(dim=-1, keepdim=True)  # (..., n, 1): the row sees some key
    weights = torch.softmax(scores.masked_fill(~mask & has_key, -math.inf), dim=-1)
    weights = weights * has_key  # (..., n, m): fully masked rows get zero weights
    return weights @ V, weights  # (..., n, d_v), (..., n, m)


def causal_mask(n, m=None, window=None):
    """Boolean (n, m) mask, True = may attend, aligned lower-right.

    Query i may see key j when j <= i + (m - n): the last query sees every key.
    With ``window=w``, only when 0 <= (i + m - n) - j < w (sliding window).

    Shapes:
        returns (n, m), m defaults to n
    """
    n = _validate.positive_int("n", n)
    m = n if m is None else _validate.positive_int("m", m)
    mask = torch.ones(n, m, dtype=torch.bool).tril(diagonal=m - n)
    if window is None:
        return mask
    window = _validate.window(window)
    return mask.triu(diagonal=m - n - window + 1)


def padding_mask(lengths, max_len):
    """Boolean (batch, 1, 1, max_len) mask, True for the real (unpadded) tokens.

    Shapes:
        lengths: (batch,) ints in [0, max_len]
        returns (batch, 1, 1, max_len)
    """
    max_len = _validate.positive_int("max_len", max_len)
    lengths = torch.as_tensor(lengths)
    is_integer = not (lengths.is_floating_point() or lengths.is_complex())
    is_integer = is_integer and lengths.dtype != torch.bool
    values = lengths.tolist() if lengths.ndim == 1 and is_integer else []
    _validate.padding_lengths(
        tuple(lengths.shape), lengths.dtype, is_integer, values, max_len
    )
    keep = torch.arange(max_len) < lengths[:, None]  # (batch, max_len)
    return keep[:, None, None, :]


def split_heads(x, num_heads):
    """(..., n, d_model) -> (..., num_heads, n, d_model // num_heads).

    Shapes:
        x: (batch, n, d_model) -> (batch, num_heads, n, d_k)
    """
    x = torch.as_tensor(x)
    _validate.require_ndim("x", tuple(x.shape), 2, "(..., n, d_model)")
    *lead, n, d_model = x.shape
    d_k = _validate.heads(d_model, num_heads)
    return x.reshape(*lead, n, num_heads, d_k).transpose(-2, -3)  # (..., H, n, d_k)


def merge_heads(x):
    """(..., num_heads, n, d_k) -> (..., n, num_heads * d_k); inverse of split.

    Shapes:
        x: (batch, num_heads, n, d_k) -> (batch, n, d_model)
    """
    x = torch.as_tensor(x)
    _validate.require_ndim("x", tuple(x.shape), 3, "(..., num_heads, n, d_k)")
    *lead, num_heads, n, d_k = x.shape
    return x.transpose(-2, -3).reshape(*lead, n, num_heads * d_k)


def multi_head_attention(
    X, W_Q, W_K, W_V, W_O, num_heads, mask=None, kv=None, num_kv_heads=None
):
    """Multi-head attention: project, split heads, attend, merge, project.

    Q = X @ W_Q, K = kv @ W_K, V = kv @ W_V (kv defaults to X), each head with
    d_k = d_model / num_heads, merged heads through W_O. ``mask`` (True = may
    attend) broadcasts to (batch, num_heads, n, m). With ``num_kv_heads``
    (grouped-query attention) W_K and W_V give num_kv_heads heads and query head
    h uses K/V head h // (num_heads // num_kv_heads).

    Shapes:
        X: (batch, n, d_model)  kv: (batch, m, d_model)
        W_Q, W_O: (d_model, d_model)  W_K, W_V: (d_model, num_kv_heads * d_k)
        returns output: (batch, n, d_model), weights: (batch, num_heads, n, m)
    """
    X = torch.as_tensor(X)
    kv = X if kv is None else torch.as_tensor(kv)
    weights = {"W_Q": W_Q, "W_K": W_K, "W_V": W_V, "W_O": W_O}
    weights = {k: torch.as_tensor(w) for k, w in weights.items()}
    d_k = _validate.heads(X.shape[-1], num_heads)
    num_kv_heads = _validate.kv_heads(num_heads, num_kv_heads)
    shapes = {k: tuple(w.shape) for k, w in weights.items()}
    _validate.mha_shapes(
        tuple(X.shape), tuple(kv.shape), shapes, kv_width=num_kv_heads * d_k
    )
    X, kv, W_Q, W_K, W_V, W_O = _float_inputs(X=X, kv=kv, **weights)
    group = num_heads // num_kv_heads  # query heads per K/V head
    Q = split_heads(X @ W_Q, num_heads)  # (batch, H, n, d_k)
    K = split_heads(kv @ W_K, num_kv_heads)  # (batch, H_kv, m, d_k)
    V = split_heads(kv @ W_V, num_kv_heads)  # (batch, H_kv, m, d_k)
    K = K.repeat_interleave(group, dim=-3)  # (batch, H, m, d_k): head h gets h // group
    V = V.repeat_interleave(group, dim=-3)  # (batch, H, m, d_k)
    heads_out, attn = scaled_dot_product_attention(Q, K, V, mask=mask)
    return merge_heads(heads_out) @ W_O, attn  # (batch, n, d_model), (batch, H, n, m)


def rope(x, positions=None, base=10000.0):
    """Rotary position embedding, the same numbers as ``attention_np.rope``.

    Interleaved pairs (2i, 2i + 1) turn by position * base ** (-2i / d) (RoFormer),
    differentiably in x.

    Shapes:
        x: (..., n, d) with d even; positions broadcast to (..., n), default
        0..n-1; returns x's shape and float dtype.
    """
    x = _as_float(x, "x")
    if positions is not None:
        positions = _as_float(positions, "positions")
    _validate.rope_shapes(
        tuple(x.shape), None if positions is None else tuple(positions.shape)
    )
    base = _validate.rope_base(base)
    n, d = x.shape[-2:]
    if positions is None:
        positions = torch.arange(n)
    exponents = torch.arange(0, d, 2, dtype=torch.float64) / d  # (d/2,)
    freqs = base**-exponents  # (d/2,) angle per unit of position
    angles = positions.to(torch.float64)[..., None] * freqs  # (..., n, d/2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., n, d/2) each: the pairs
    rotated = torch.stack(
        (even * cos - odd * sin, even * sin + odd * cos), dim=-1
    )  # (..., n, d/2, 2): each pair turns by its angle
    return rotated.flatten(-2)  # (..., n, d), pairs back in place


def online_attention(Q, K, V, block_size=128, mask=None):
    """Attention over blocks of keys with a running max and a running sum (Z).

    The FlashAttention forward pass (lesson 08): one loop over blocks of keys.
    Each block's scores shift by the running max; when the max grows, the
    running sum and the accumulator are rescaled by exp(old max - new max).
    Holds (..., n, block_size) scores at a time, never (..., n, m), yet equals
    ``scaled_dot_product_attention`` (fully masked rows give zeros) and is
    differentiable like it.

    Shapes:
        Q: (..., n, d_k)  K: (..., m, d_k)  V: (..., m, d_v)  mask: -> (..., n, m)
        returns output: (..., n, d_v)
    """
    Q, K, V = torch.as_tensor(Q), torch.as_tensor(K), torch.as_tensor(V)
    batch, n, m, d_k, d_v = _validate.qkv_shapes(
        tuple(Q.shape), tuple(K.shape), tuple(V.shape)
    )
    block_size = _validate.positive_int("block_size", block_size)
    Q, K, V = _float_inputs(Q=Q, K=K, V=V)
    if mask is not None:
        mask = _check_mask(mask, batch + (n, m)).expand(*batch, n, m)
    # Scaled once; every batch axis of K and V too, so the scores can change in place.
    Q = (Q * _validate.default_scale(None, d_k)).expand(*batch, n, d_k)

    running_max = Q.new_full((*batch, n, 1), -math.inf)  # max score so far
    running_sum = Q.new_zeros((*batch, n, 1))  # sum of exp(score - max)
    acc = Q.new_zeros((*batch, n, d_v))  # sum of exp(score - max) v
    for start in range(0, m, block_size):
        keys = slice(start, start + block_size)
        scores = Q @ K[..., keys, :].transpose(-2, -1)  # (..., n, b)
        if mask is not None:
            scores.masked_fill_(~mask[..., keys], -math.inf)
        # The max is detached: any shift gives the same softmax (lesson 03).
        new_max = torch.maximum(running_max, scores.detach().amax(-1, keepdim=True))
        # a row that has seen no key yet has max -inf: shift it by 0 instead
        shift = torch.where(new_max > -math.inf, new_max, 0.0)  # (..., n, 1)
        p = scores.sub_(shift).exp_()  # (..., n, b): exp(score - shift), in place
        correction = torch.exp(running_max - shift)  # rescales the old sums
        running_sum = running_sum * correction + p.sum(-1, keepdim=True)
        acc.mul_(correction).add_(p @ V[..., keys, :])  # (..., n, d_v)
        running_max = new_max
        del scores, p  # before the next block is computed: one block held at a time
    # Fully masked rows have a sum of 0 and acc 0: divide by 1 to give zeros.
    return acc / torch.where(running_sum == 0, 1.0, running_sum)


def _features(Q, K, feature_map):
    """phi(Q), phi(K) as float tensors, checked: same size r, finite, >= 0."""
    fn = (
        (lambda x: torch.nn.functional.elu(x) + 1)
        if feature_map is None
        else feature_map
    )
    phi = []
    for name, x in (("Q", Q), ("K", K)):
        f = _as_float(fn(x), f"feature_map({name})")
        if f.numel() and f.min() < 0:
            low = f.min().item()
            raise ValueError(_validate_linear.negative_features_message(name, low))
        phi.append(f)
    _validate_linear.feature_shapes(Q.shape, K.shape, phi[0].shape, phi[1].shape)
    return phi


def linear_attention(Q, K, V, feature_map=None, causal=False):
    """Attention with the similarity phi(q) . phi(k), as ``attention_np``'s.

    phi(Q) (phi(K)^T V) / phi(Q) sum_j phi(k_j), never (n, m); causal: a loop
    over keys with the running state S and z, read lower-right (query i sees
    keys j <= i + (m - n); a query that sees none gets zeros). ``feature_map``
    defaults to elu(x) + 1. Differentiable.

    Shapes:
        Q: (..., n, d_k)  K: (..., m, d_k)  V: (..., m, d_v)  returns (..., n, d_v)
    """
    Q, K, V = torch.as_tensor(Q), torch.as_tensor(K), torch.as_tensor(V)
    batch, n, m, _, d_v = _validate.qkv_shapes(
        tuple(Q.shape), tuple(K.shape), tuple(V.shape)
    )
    _validate_linear.feature_map(feature_map)
    causal = _validate_linear.causal_flag(causal)
    Q, K, V = _float_inputs(Q=Q, K=K, V=V)
    phi_q, phi_k = (f.to(V.dtype) for f in _features(Q, K, feature_map))
    if not causal:
        S = phi_k.transpose(-2, -1) @ V  # (..., r, d_v): sum_j phi(k_j) v_j^T
        z = phi_k.sum(dim=-2).unsqueeze(-1)  # (..., r, 1): sum_j phi(k_j)
        num, Z = phi_q @ S, phi_q @ z  # (..., n, d_v), (..., n, 1)
    else:
        S = V.new_zeros((*batch, phi_k.shape[-1], d_v))  # (..., r, d_v)
        z = V.new_zeros((*batch, phi_k.shape[-1]))  # (..., r)
        rows, sums = [], []
        for j in range(m):
            S = S + phi_k[..., j, :, None] * V[..., j, None, :]  # write phi(k_j) v_j^T
            z = z + phi_k[..., j, :]  # (..., r)
            if j >= m - n:  # the query at key j's position reads the state
                phi = phi_q[..., j - (m - n), :]  # (..., r)
                rows.append(torch.einsum("...r,...rv->...v", phi, S))
                sums.append((phi * z).sum(-1, keepdim=True))  # (..., 1)
        unseen = max(n - m, 0)  # the first n - m queries see no key: zeros
        num = torch.stack([V.new_zeros((*batch, d_v))] * unseen + rows, dim=-2)
        Z = torch.stack([V.new_ones((*batch, 1))] * unseen + sums, dim=-2)
    if not (Z > 0).all():
        raise ValueError(
            _validate_linear.zero_normaliser_message(
                torch.nonzero(~(Z > 0))[0][-2].item()
            )
        )
    return num / Z  # (..., n, d_v)


def delta_rule(Q, K, V, beta):
    """The delta rule (DeltaNet), as ``attention_np``'s: read S^T k_t, then write.

    S (..., d_k, d_v) starts at 0; for each t: S <- S + beta_t k_t (v_t -
    S^T k_t)^T, then y_t = S^T q_t. Differentiable.

    Shapes:
        Q, K: (..., n, d_k)  V: (..., n, d_v)  beta: scalar or (..., n), in (0, 1]
        returns y: (..., n, d_v)
    """
    Q, K, V = torch.as_tensor(Q), torch.as_tensor(K), torch.as_tensor(V)
    batch, n, d_k, d_v = _validate_linear.delta_shapes(
        tuple(Q.shape), tuple(K.shape), tuple(V.shape)
    )
    Q, K, V = _float_inputs(Q=Q, K=K, V=V)
    if isinstance(beta, (int, float)):  # a Python number: exactly, in V's dtype
        beta = torch.tensor(float(beta), dtype=V.dtype)
    beta = _as_float(beta, "beta").to(V.dtype)
    _validate_linear.beta_shape(tuple(beta.shape), batch, n)
    _validate_linear.beta_range(beta.min().item(), beta.max().item())
    beta = beta.expand(*batch, n)  # (..., n)
    S = V.new_zeros((*batch, d_k, d_v))  # (..., d_k, d_v)
    y = []
    for t in range(n):
        k, v, q = K[..., t, :], V[..., t, :], Q[..., t, :]  # (..., d_k|d_v)
        prediction = torch.einsum("...kv,...k->...v", S, k)  # (..., d_v): read first
        error = (v - prediction) * beta[..., t, None]  # (..., d_v)
        S = S + k[..., :, None] * error[..., None, :]  # (..., d_k, d_v): then write
        y.append(torch.einsum("...kv,...k->...v", S, q))  # (..., d_v)
    return torch.stack(y, dim=-2)  # (..., n, d_v)


# MultiHeadAttention lives in helpers.attention_layer, which imports the functions
# above: loaded on first use (atn.MultiHeadAttention), so no import cycle.
_LAYER = ("MultiHeadAttention",)


def __getattr__(name):
    if name in _LAYER:
        from helpers import attention_layer

        return getattr(attention_layer, name)
    raise AttributeError(f"module 'helpers.attention_torch' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_LAYER])
