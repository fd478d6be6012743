"""Lesson 13: the ways today's models shrink the KV cache, in NumPy.

Sliding-window attention decoded through a ring buffer of the window, a sink
logit as one more term in Z, multi-head latent attention (MLA) in its
unabsorbed and absorbed forms, and top-k sparse attention. Each function is
written to be read next to the lesson; the lesson and the tests check each one
against an independent form (the windowed ``causal_mask``, float64 loops, the
unabsorbed MLA). Never imports torch.

Shape words: n queries, m keys, d_k, d_v; MLA adds the latent size d_c and the
decoupled RoPE size d_r.
"""

import math

import numpy as np

from helpers import _validate
from helpers import attention_np as anp


def ring_buffer_decode(Q, K, V, window):
    """Decode token by token with a KV cache that holds only the last window keys.

    The cache is two preallocated buffers of ``window`` rows; token t writes its
    key and value into row t % window, overwriting the token t - window, then its
    query attends over the rows filled so far. Equal, token for token, to
    attention with ``causal_mask(n, window=window)``.

    Shapes:
        Q: (n, d_k), K: (n, d_k), V: (n, d_v) -> outputs (n, d_v)
    """
    window = _validate.window(window)
    n, d_k = Q.shape
    K_buf = np.zeros((window, d_k))  # (window, d_k): the whole cache
    V_buf = np.zeros((window, V.shape[1]))  # (window, d_v)
    outputs = np.zeros((n, V.shape[1]))  # (n, d_v)
    for t in range(n):
        slot = t % window
        K_buf[slot], V_buf[slot] = K[t], V[t]  # overwrite the oldest entry
        filled = min(t + 1, window)  # rows 0 .. filled - 1 hold real tokens
        outputs[t] = anp.scaled_dot_product_attention(
            Q[t : t + 1], K_buf[:filled], V_buf[:filled]
        )[0][0]
    return outputs


def sink_attention(Q, K, V, sink, mask=None):
    """Attention with a sink logit: one more term exp(sink) in every row's Z.

    weights = exp(s_j) / (exp(sink) + sum_j' exp(s_j')), so each row sums to
    1 - exp(sink) / Z < 1; the sink has no value, so the output shrinks with it
    (gpt-oss's learned per-head sink). Max-subtracted, masked like
    ``scaled_dot_product_attention``.

    Shapes:
        Q: (..., n, d_k), K: (..., m, d_k), V: (..., m, d_v)
        sink: a number or (...,) (e.g. one per head), broadcast to (..., 1, 1)
        returns output (..., n, d_v), weights (..., n, m)
    """
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(d_k)  # (..., n, m)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # (..., n, m)
    sink = np.asarray(sink, dtype=scores.dtype)[..., None, None]  # (..., 1, 1)
    top = np.maximum(scores.max(axis=-1, keepdims=True), sink)  # (..., n, 1)
    exp_scores = np.exp(scores - top)  # (..., n, m)
    Z = exp_scores.sum(axis=-1, keepdims=True) + np.exp(sink - top)  # (..., n, 1)
    weights = exp_scores / Z  # (..., n, m)
    return weights @ V, weights


def top_k_attention(Q, K, V, k, mask=None):
    """Sparse attention: each query keeps its k largest scores, the rest get 0.

    Ties at the k-th score are broken by position (the earlier key is kept).
    With k >= m it is full attention.

    Shapes:
        Q: (..., n, d_k), K: (..., m, d_k), V: (..., m, d_v)
        returns output (..., n, d_v), weights (..., n, m)
    """
    k = _validate.positive_int("k", k)
    d_k, m = Q.shape[-1], K.shape[-2]
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(d_k)  # (..., n, m)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # (..., n, m)
    if k < m:
        order = np.argsort(-scores, axis=-1, kind="stable")  # (..., n, m)
        keep = np.zeros(scores.shape, dtype=bool)  # (..., n, m)
        np.put_along_axis(keep, order[..., :k], True, axis=-1)
        scores = np.where(keep, scores, -np.inf)  # (..., n, m)
    weights = anp.softmax(scores)  # (..., n, m); fully masked rows give NaN
    weights = np.nan_to_num(weights)  # ... which become zeros, as in the helper
    return weights @ V, weights


def mla_weights(d_model, num_heads, d_k, d_v, d_c, d_r=0, *, seed=0):
    """Random MLA projections, scaled by 1/sqrt(fan-in), as a dict.

    W_Q (d_model, H d_k), W_DKV (d_model, d_c) down to the latent, W_UK
    (d_c, H d_k) and W_UV (d_c, H d_v) up from it, W_O (H d_v, d_model); with
    d_r > 0 also the decoupled RoPE parts W_QR (d_model, H d_r) and W_KR
    (d_model, d_r), one RoPE key shared by every head.
    """
    rng = np.random.default_rng(seed)
    shapes = {
        "W_Q": (d_model, num_heads * d_k),
        "W_DKV": (d_model, d_c),
        "W_UK": (d_c, num_heads * d_k),
        "W_UV": (d_c, num_heads * d_v),
        "W_O": (num_heads * d_v, d_model),
    }
    if d_r:
        shapes |= {"W_QR": (d_model, num_heads * d_r), "W_KR": (d_model, d_r)}
    return {
        name: rng.standard_normal(shape) / math.sqrt(shape[0])
        for name, shape in shapes.items()
    }


def _heads(x, num_heads):
    """(n, H * d) -> (H, n, d)."""
    n = x.shape[0]
    return x.reshape(n, num_heads, -1).transpose(1, 0, 2)


def mla_cache(X, W, positions=None):
    """What MLA caches per token: the latent c (n, d_c) and the RoPE key (n, d_r).

    Shapes:
        X: (n, d_model) -> c (n, d_c), k_rope (n, d_r) (d_r = 0 without RoPE)
    """
    c = X @ W["W_DKV"]  # (n, d_c)
    if "W_KR" not in W:
        return c, np.zeros((X.shape[0], 0))
    return c, anp.rope(X @ W["W_KR"], positions)  # (n, d_c), (n, d_r)


def mla_attention(X, W, num_heads, mask=None, absorbed=False):
    """Multi-head latent attention of X over itself, unabsorbed or absorbed.

    Unabsorbed: K and V are rebuilt from the cached latent, K = c W_UK and
    V = c W_UV, per head. Absorbed: W_UK is folded into each head's query
    (q W_UK_h^T scores the latent c directly) and W_UV into the output
    (W_UV_h W_O_h), so K and V are never built. The RoPE parts, if any, add
    q_r . k_r to every score; the scale is 1/sqrt(d_k + d_r).

    Shapes:
        X: (n, d_model), mask broadcastable to (num_heads, n, n)
        returns output (n, d_model), weights (num_heads, n, n)
    """
    H = num_heads
    c, k_rope = mla_cache(X, W)  # (n, d_c), (n, d_r)
    q = _heads(X @ W["W_Q"], H)  # (H, n, d_k)
    d_k, d_r = q.shape[-1], k_rope.shape[-1]
    if absorbed:
        W_QK, W_VO = absorb(W["W_Q"], W["W_UK"], W["W_UV"], W["W_O"], H)
        scores = (X @ W_QK) @ c.T  # (H, n, d_model) @ (d_model, d_c) -> (H, n, n)
    else:
        k = _heads(c @ W["W_UK"], H)  # (H, n, d_k): rebuilt from the latent
        scores = q @ np.swapaxes(k, -1, -2)  # (H, n, n)
    if d_r:
        q_rope = anp.rope(_heads(X @ W["W_QR"], H))  # (H, n, d_r)
        scores = scores + q_rope @ k_rope.T  # (H, n, n): the shared RoPE key
    scores = scores / math.sqrt(d_k + d_r)  # (H, n, n)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = np.nan_to_num(anp.softmax(scores))  # (H, n, n)
    if absorbed:
        mixed = weights @ c  # (H, n, d_c): the weighted latents
        return (mixed @ W_VO).sum(axis=0), weights  # (n, d_model)
    v = _heads(c @ W["W_UV"], H)  # (H, n, d_v)
    heads_out = (weights @ v).transpose(1, 0, 2).reshape(X.shape[0], -1)
    return heads_out @ W["W_O"], weights  # (n, H d_v) @ (H d_v, d_model)


def absorb(W_Q, W_UK, W_UV, W_O, num_heads):
    """MLA's absorbed weights: W_QK[h] = W_Q_h W_UK_h^T, W_VO[h] = W_UV_h W_O_h.

    Shapes:
        W_Q (d_model, H d_k), W_UK (d_c, H d_k), W_UV (d_c, H d_v),
        W_O (H d_v, d_model) -> W_QK (H, d_model, d_c), W_VO (H, d_c, d_model)
    """
    H = num_heads
    d_model, d_c = W_Q.shape[0], W_UK.shape[0]
    W_Q_h = W_Q.reshape(d_model, H, -1).transpose(1, 0, 2)  # (H, d_model, d_k)
    W_UK_h = W_UK.reshape(d_c, H, -1).transpose(1, 0, 2)  # (H, d_c, d_k)
    W_UV_h = W_UV.reshape(d_c, H, -1).transpose(1, 0, 2)  # (H, d_c, d_v)
    W_O_h = W_O.reshape(H, -1, W_O.shape[1])  # (H, d_v, d_model)
    return W_Q_h @ np.swapaxes(W_UK_h, -1, -2), W_UV_h @ W_O_h
