"""Scaled dot-product attention in PyTorch: the functions of ``attention_np``.

Same names, same arguments, same mask convention (boolean, True = may attend),
written with torch operations so that everything is differentiable. Float
inputs keep their dtype; integer inputs are computed in torch's default float
dtype. NumPy arrays are accepted and converted with ``torch.as_tensor``.
"""

import torch
from torch import nn

from helpers import _validate as v


def _as_float(x, name, allow_neg_inf=False):
    """Return ``x`` as a floating tensor; reject non-numbers, NaN and inf."""
    x = torch.as_tensor(x)
    if x.dtype == torch.bool or x.is_complex():
        raise TypeError(f"{name} must hold real numbers; got dtype {x.dtype}")
    if not x.is_floating_point():
        return x.to(torch.get_default_dtype())
    if not allow_neg_inf and torch.isfinite(x.detach().sum()):
        return x  # one cheap pass: a NaN or inf anywhere makes the sum non-finite
    bad = torch.isnan(x) | torch.isposinf(x) if allow_neg_inf else ~torch.isfinite(x)
    if bad.any():
        where = tuple(int(i) for i in torch.nonzero(bad)[0])
        what = "-inf is allowed, NaN and +inf are not" if allow_neg_inf else "NaN/inf"
        raise ValueError(
            f"{name} contains {int(bad.sum())} non-finite value(s) ({what}); "
            f"the first is {x[where].item()} at index {where}"
        )
    return x


def _same_dtype(*tensors):
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    return [t.to(dtype) for t in tensors]


def _float_inputs(Q, K, V, names=("Q", "K", "V")):
    """Q, K, V as floating tensors of one dtype; NaN or inf in any is reported.

    Fast path: when all three share a float dtype, their three sums are finite
    exactly when no input holds NaN or inf (or a sum overflowed, and then
    _as_float looks closer) -- one sum per input, no pass over the scores.
    """
    if Q.is_floating_point() and Q.dtype == K.dtype == V.dtype:
        total = sum(float(x.detach().sum()) for x in (Q, K, V))
        if abs(total) < float("inf"):  # False for NaN too
            return Q, K, V
    return _same_dtype(
        *(_as_float(x, n) for x, n in zip((Q, K, V), names, strict=True))
    )


def _check_mask(mask, scores_shape):
    mask = torch.as_tensor(mask)
    if mask.dtype != torch.bool:
        raise TypeError(v.mask_dtype_message(mask.dtype))
    v.mask_shape(tuple(mask.shape), scores_shape)
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
    """Stable softmax along ``axis``: subtract the max, exponentiate, normalise.

    Entries equal to -inf get weight 0; a row that is entirely -inf gives all
    zeros (not NaN), the convention for a query that may attend to nothing.

    Shapes:
        x: any shape; the result has the same shape and sums to 1 along ``axis``.
    """
    x = _as_float(x, "x", allow_neg_inf=True)
    if x.ndim == 0:
        raise ValueError("x must have at least one axis; got a scalar")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis={axis} is out of range for x of shape {v.fmt(x.shape)}")
    if x.shape[axis] == 0:
        raise ValueError(f"x has no entries along axis={axis} (shape {v.fmt(x.shape)})")
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
    if q.ndim != 1:
        raise ValueError(
            f"q must be one query of shape (d_k,); got shape {v.fmt(q.shape)}"
        )
    for name, x in (("K", K), ("V", V)):
        if x.ndim != 2:
            raise ValueError(
                f"{name} must have shape (m, d_{name.lower()}); "
                f"got shape {v.fmt(x.shape)}"
            )
    v.qkv_shapes((1,) + tuple(q.shape), tuple(K.shape), tuple(V.shape))
    q, K, V = _float_inputs(q, K, V, names=("q", "K", "V"))
    scale = v.default_scale(scale, q.shape[0])
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
    batch, n, m, d_k, _ = v.qkv_shapes(tuple(Q.shape), tuple(K.shape), tuple(V.shape))
    Q, K, V = _float_inputs(Q, K, V)
    scale = v.default_scale(scale, d_k)
    if Q.ndim == K.ndim == 2:  # one head: the matmul applies the scale (alpha)
        scores = torch.addmm(Q.new_zeros(()), Q, K.T, beta=0, alpha=scale)  # (n, m)
    else:
        scores = (Q * scale) @ K.transpose(-2, -1)  # (..., n, m); scaling Q: n*d_k
    if mask is None:
        weights = torch.softmax(scores, dim=-1)  # no mask: no row can be empty
        return weights @ V, weights  # (..., n, d_v), (..., n, m)
    mask = _check_mask(mask, batch + (n, m))
    # A fully masked row would be softmax(all -inf) = NaN. Give such rows every key
    # instead (finite weights, finite gradients), then zero their weights. Both masks
    # keep the mask's own (possibly broadcast) shape: no extra pass over the scores.
    has_key = mask.any(dim=-1, keepdim=True)  # (..., n, 1) or broadcastable
    blocked = ~mask & has_key  # masked keys, in rows that keep at least one
    weights = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
    if not bool(has_key.all()):
        weights = weights * has_key  # the fully masked rows get zero weights
    return weights @ V, weights  # (..., n, d_v), (..., n, m)


def causal_mask(n, m=None):
    """Boolean (n, m) mask, True = may attend, aligned lower-right.

    Query i may see key j when j <= i + (m - n): the last query sees every key.

    Shapes:
        returns (n, m), m defaults to n
    """
    n = v.positive_int("n", n)
    m = n if m is None else v.positive_int("m", m)
    return torch.ones(n, m, dtype=torch.bool).tril(diagonal=m - n)


def padding_mask(lengths, max_len):
    """Boolean (batch, 1, 1, max_len) mask, True for the real (unpadded) tokens.

    Shapes:
        lengths: (batch,) ints in [0, max_len]
        returns (batch, 1, 1, max_len)
    """
    max_len = v.positive_int("max_len", max_len)
    lengths = torch.as_tensor(lengths)
    if lengths.ndim != 1 or lengths.is_floating_point() or lengths.dtype == torch.bool:
        raise ValueError(
            f"lengths must be a 1-D tensor of integers (one per sequence); got "
            f"shape {v.fmt(lengths.shape)} and dtype {lengths.dtype}"
        )
    if lengths.numel() and (lengths.min() < 0 or lengths.max() > max_len):
        raise ValueError(
            f"lengths must lie in [0, max_len={max_len}]; got {lengths.tolist()}"
        )
    keep = torch.arange(max_len) < lengths[:, None]  # (batch, max_len)
    return keep[:, None, None, :]


def split_heads(x, num_heads):
    """(..., n, d_model) -> (..., num_heads, n, d_model // num_heads).

    Shapes:
        x: (batch, n, d_model) -> (batch, num_heads, n, d_head)
    """
    x = torch.as_tensor(x)
    v.require_ndim("x", tuple(x.shape), 2, "(..., n, d_model)")
    *lead, n, d_model = x.shape
    d_head = v.heads(d_model, num_heads)
    return x.reshape(*lead, n, num_heads, d_head).transpose(
        -2, -3
    )  # (..., H, n, d_head)


def merge_heads(x):
    """(..., num_heads, n, d_head) -> (..., n, num_heads * d_head); inverse of split.

    Shapes:
        x: (batch, num_heads, n, d_head) -> (batch, n, d_model)
    """
    x = torch.as_tensor(x)
    v.require_ndim("x", tuple(x.shape), 3, "(..., num_heads, n, d_head)")
    *lead, num_heads, n, d_head = x.shape
    return x.transpose(-2, -3).reshape(*lead, n, num_heads * d_head)


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
    X = _as_float(X, "X")
    kv = X if kv is None else _as_float(kv, "kv")
    weights = {"W_Q": W_Q, "W_K": W_K, "W_V": W_V, "W_O": W_O}
    weights = {k: torch.as_tensor(w) for k, w in weights.items()}
    d_k = v.heads(X.shape[-1], num_heads)
    num_kv_heads = v.kv_heads(num_heads, num_kv_heads)
    shapes = {k: tuple(w.shape) for k, w in weights.items()}
    v.mha_shapes(tuple(X.shape), tuple(kv.shape), shapes, kv_width=num_kv_heads * d_k)
    X, kv, W_Q, W_K, W_V, W_O = _same_dtype(
        X, kv, *(_as_float(w, k) for k, w in weights.items())
    )
    group = num_heads // num_kv_heads  # query heads per K/V head
    Q = split_heads(X @ W_Q, num_heads)  # (batch, H, n, d_k)
    K = split_heads(kv @ W_K, num_kv_heads)  # (batch, H_kv, m, d_k)
    V = split_heads(kv @ W_V, num_kv_heads)  # (batch, H_kv, m, d_k)
    K = K.repeat_interleave(group, dim=-3)  # (batch, H, m, d_k): head h gets h // group
    V = V.repeat_interleave(group, dim=-3)  # (batch, H, m, d_k)
    heads_out, attn = scaled_dot_product_attention(Q, K, V, mask=mask)
    return merge_heads(heads_out) @ W_O, attn  # (batch, n, d_model), (batch, H, n, m)


def rope(x, positions=None, base=10000.0):
    """Rotary position embedding: rotate coordinate pairs by position-dependent angles.

    Pairs are interleaved, as in the RoFormer paper: pair i holds coordinates
    (2i, 2i + 1) and turns by the angle position * base ** (-2i / d). Norms are
    kept, position 0 is the identity, and q . k after rotation depends only on
    the offset between positions. Same numbers as ``attention_np.rope``.

    Shapes:
        x: (..., n, d), d even  positions: (n,) or broadcastable to (..., n);
        default 0..n-1. Returns the shape and float dtype of x.
    """
    x = _as_float(x, "x")
    if positions is not None:
        positions = _as_float(positions, "positions")
    v.rope_shapes(tuple(x.shape), None if positions is None else tuple(positions.shape))
    base = v.rope_base(base)
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
    """Attention over blocks of keys with a running max and a running Z.

    The FlashAttention forward pass: holds one tile of scores at a time, at most
    (q_block, block_size) per batch element and never the (n, m) matrix, yet
    equals ``scaled_dot_product_attention`` (fully masked rows give zeros) and is
    differentiable like it.

    Shapes:
        Q: (..., n, d_k)  K: (..., m, d_k)  V: (..., m, d_v)  mask: -> (..., n, m)
        returns output: (..., n, d_v)
    """
    Q, K, V = torch.as_tensor(Q), torch.as_tensor(K), torch.as_tensor(V)
    batch, n, m, d_k, d_v = v.qkv_shapes(tuple(Q.shape), tuple(K.shape), tuple(V.shape))
    block_size = v.positive_int("block_size", block_size)
    Q, K, V = _float_inputs(Q, K, V)
    lead = batch or (1,)  # the batch axes; one axis of size 1 for a single head
    if mask is not None:
        mask = _check_mask(mask, batch + (n, m)).expand(*lead, n, m)

    # Three speed-ups over lesson 08's loop, none of which changes the result:
    # 1. Base 2, as FlashAttention does: exp(x) = 2 ** (x * log2(e)), so log2(e)
    #    joins the scale on Q, once; torch's exp2 is about 3x faster than its exp.
    # 2. Tiles of queries as well as keys, over all batch axes merged into one,
    #    of about 2**17 scores (512 KiB in float32) per thread: they stay in cache.
    # 3. The max is updated lazily: scores are taken relative to the max so far
    #    straight out of the matmul (baddbmm), and the sums are rescaled only when
    #    a row's max grows by more than 8 (2**8 = 256 cannot overflow) or a row
    #    sees its first key. float16 rescales on any growth: its Z could overflow.
    scale = v.default_scale(None, d_k) * 1.4426950408889634  # log2(e)
    B = torch.Size(lead).numel()
    Q = Q.expand(*lead, n, d_k).reshape(B, n, d_k) * scale  # (B, n, d_k)
    K_T = K.expand(*lead, m, d_k).reshape(B, m, d_k).transpose(1, 2)  # (B, d_k, m)
    V = V.expand(*lead, m, d_v).reshape(B, m, d_v)  # (B, m, d_v)
    out = Q.new_empty((B, n, d_v))  # (B, n, d_v)
    margin = 0.0 if Q.dtype == torch.float16 else 8.0
    tile = 2**17 * torch.get_num_threads()
    q_block = max(1, min(n, tile // block_size))
    heads = max(1, tile // (q_block * block_size))
    for h in range(0, B, heads):
        for q in range(0, n, q_block):
            Q_tile = Q[h : h + heads, q : q + q_block]  # (h, b_q, d_k)
            rows = Q_tile.shape[:2] + (1,)
            running_max = Q.new_full(rows, float("-inf"))  # -inf: no key seen yet
            shift = Q.new_zeros(rows)  # running_max, or 0 while it is -inf
            running_z = Q.new_zeros(rows)  # sum of 2 ** (score - shift)
            acc = Q.new_zeros(rows[:2] + (d_v,))  # sum of 2 ** (score - shift) v
            for start in range(0, m, block_size):
                stop = min(start + block_size, m)
                K_blk = K_T[h : h + heads, :, start:stop]  # (h, d_k, b)
                scores = torch.baddbmm(-shift, Q_tile, K_blk)  # (h, b_q, b) - shift
                if mask is not None:
                    where = torch.unravel_index(torch.arange(h, h + rows[0]), lead)
                    allowed = mask[(*where, slice(q, q + q_block), slice(start, stop))]
                    scores.masked_fill_(~allowed, float("-inf"))
                # The max is detached: any shift gives the same softmax (lesson 03).
                block_max = scores.detach().amax(dim=-1, keepdim=True) + shift
                if bool((block_max > running_max + margin).any()):
                    new_max = torch.maximum(running_max, block_max)
                    new_shift = torch.where(new_max > float("-inf"), new_max, 0)
                    scores.sub_(new_shift - shift)  # relative to the new shift
                    # rescales the old sums; 0 (not inf) where no key was seen yet
                    correction = torch.exp2(running_max - new_shift)
                    running_max = new_max
                    running_z.mul_(correction)
                    acc.mul_(correction)
                    shift = new_shift
                # In place, so no second tile is allocated; autograd still works:
                # only exp2's own output is saved, and nothing changes it later.
                p = scores.exp2_()  # (h, b_q, b)
                running_z.add_(p.sum(dim=-1, keepdim=True))
                acc.baddbmm_(p, V[h : h + heads, start:stop])  # (h, b_q, d_v)
            # Fully masked rows have Z = 0 and acc = 0: divide by 1 to give zeros.
            out[h : h + heads, q : q + q_block] = acc / torch.where(
                running_z == 0, 1.0, running_z
            )
    return out.reshape(*batch, n, d_v)


class MultiHeadAttention(nn.Module):
    """Multi-head attention as an nn.Module: projections with biases, attention dropout.

    The same computation as ``multi_head_attention``, with nn.Linear projections
    (weights in torch's (out, in) layout, so ``q_proj(x) = x @ W_Q.T + b_Q``).
    ``num_kv_heads`` < num_heads gives grouped-query attention (1: multi-query).
    ``forward`` returns the per-head weights that multiply V: after attention
    dropout while training, as nn.MultiheadAttention does.

    Shapes:
        x: (batch, n, d_model)  kv: (batch, m, d_model)  mask: -> (batch, H, n, m)
        returns out: (batch, n, d_model), weights: (batch, num_heads, n, m)
    """

    def __init__(
        self, d_model, num_heads, *, num_kv_heads=None, bias=True, dropout=0.0
    ):
        super().__init__()
        d_model = v.positive_int("d_model", d_model)
        self.d_k = v.heads(d_model, num_heads)
        self.num_heads = num_heads
        self.num_kv_heads = v.kv_heads(num_heads, num_kv_heads)
        kv_width = self.num_kv_heads * self.d_k
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, kv_width, bias=bias)
        self.v_proj = nn.Linear(d_model, kv_width, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, kv=None, mask=None):
        x = _as_float(x, "x")
        kv = x if kv is None else _as_float(kv, "kv")
        v.mha_shapes(tuple(x.shape), tuple(kv.shape), {})  # (batch, n|m, d_model)
        group = self.num_heads // self.num_kv_heads  # query heads per K/V head
        Q = split_heads(self.q_proj(x), self.num_heads)  # (batch, H, n, d_k)
        K = split_heads(self.k_proj(kv), self.num_kv_heads)  # (batch, H_kv, m, d_k)
        V = split_heads(self.v_proj(kv), self.num_kv_heads)  # (batch, H_kv, m, d_k)
        K = K.repeat_interleave(group, dim=-3)  # (batch, H, m, d_k)
        V = V.repeat_interleave(group, dim=-3)  # (batch, H, m, d_k)
        heads_out, weights = scaled_dot_product_attention(Q, K, V, mask=mask)
        if self.training and self.dropout.p > 0:
            weights = self.dropout(weights)  # (batch, H, n, m): drop whole weights
            heads_out = weights @ V  # (batch, H, n, d_k)
        return self.out_proj(merge_heads(heads_out)), weights  # (batch, n, d_model)

    @classmethod
    def from_torch(cls, module):
        """A MultiHeadAttention holding the weights of an nn.MultiheadAttention.

        batch_first does not change the weights (call ours with batch first).
        torch's in_proj_weight (3 d_model, d_model) stacks W_Q, W_K, W_V in
        (out, in) layout, so its three row blocks are our three nn.Linear weights.
        """
        if not isinstance(module, nn.MultiheadAttention):
            raise TypeError(f"module must be an nn.MultiheadAttention; got {module!r}")
        d_model = module.embed_dim
        if not module._qkv_same_embed_dim:
            raise ValueError(
                f"kdim={module.kdim} and vdim={module.vdim} must equal "
                f"embed_dim={d_model}: keys and values come from d_model features"
            )
        if module.bias_k is not None or module.add_zero_attn:
            raise ValueError("add_bias_kv and add_zero_attn are not supported")
        bias = module.in_proj_bias is not None
        ours = cls(d_model, module.num_heads, bias=bias, dropout=module.dropout)
        ours = ours.to(module.in_proj_weight.dtype)
        W_Q, W_K, W_V = module.in_proj_weight.detach().chunk(
            3
        )  # (d_model, d_model) each
        with torch.no_grad():
            for proj, W in zip(ours._projections(), (W_Q, W_K, W_V), strict=True):
                proj.weight.copy_(W)
            ours.out_proj.weight.copy_(module.out_proj.weight)
            if bias:
                b_Q, b_K, b_V = module.in_proj_bias.detach().chunk(3)
                for proj, b in zip(ours._projections(), (b_Q, b_K, b_V), strict=True):
                    proj.bias.copy_(b)
                ours.out_proj.bias.copy_(module.out_proj.bias)
        return ours.train(module.training)

    def to_torch(self, batch_first=True):
        """An nn.MultiheadAttention holding these weights (no grouped-query heads)."""
        if self.num_kv_heads != self.num_heads:
            raise ValueError(
                f"nn.MultiheadAttention has no grouped-query attention: num_kv_heads="
                f"{self.num_kv_heads} must equal num_heads={self.num_heads}"
            )
        bias = self.q_proj.bias is not None
        theirs = nn.MultiheadAttention(
            self.q_proj.in_features,
            self.num_heads,
            dropout=self.dropout.p,
            bias=bias,
            batch_first=batch_first,
        ).to(self.q_proj.weight.dtype)
        with torch.no_grad():
            weights = [proj.weight for proj in self._projections()]
            theirs.in_proj_weight.copy_(torch.cat(weights))  # (3 d_model, d_model)
            theirs.out_proj.weight.copy_(self.out_proj.weight)
            if bias:
                biases = [proj.bias for proj in self._projections()]
                theirs.in_proj_bias.copy_(torch.cat(biases))  # (3 d_model,)
                theirs.out_proj.bias.copy_(self.out_proj.bias)
        return theirs.train(self.training)

    def _projections(self):
        return self.q_proj, self.k_proj, self.v_proj
