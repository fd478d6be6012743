"""The tuned variant of ``helpers.attention_torch.online_attention``, for benchmarks.

Not for reading first: lesson 08 teaches the readable ``online_attention`` (one
loop over key blocks, running max, running sum, rescaled accumulator). This
variant computes the same result faster on a CPU with three tricks, measured
beside the readable one by ``benchmarks/attention_speed.py`` (row
``tuned.online``):

1. Base 2, as FlashAttention does: exp(x) = 2 ** (x * log2(e)), so log2(e)
   joins the scale on Q, once; torch's exp2 is about 3x faster than its exp.
2. Tiles of queries as well as keys, over all batch axes merged into one, of
   about 2**17 scores (512 KiB in float32) per thread, so that a tile stays in
   the CPU's cache while it is shifted, exponentiated and summed.
3. Lazy rescaling: scores come out of the matmul already relative to the max so
   far (``baddbmm`` with the negated max as its input), and the sums are
   rescaled only when a row's max grows by more than 8 (2**8 = 256 cannot
   overflow float32) or a row sees its first key. float16 rescales on any
   growth: its Z could overflow.

Inputs are not validated: pass floating tensors of one dtype (and a boolean
mask, True = may attend, broadcastable to (..., n, m)), as the benchmark does.
"""

import math

import torch

LOG2_E = 1.4426950408889634  # log2(e): exp(x) = 2 ** (x * LOG2_E)


def online_attention_tuned(Q, K, V, block_size=128, mask=None):
    """``online_attention`` with base-2 exponentials, cache tiles, lazy rescaling.

    Shapes:
        Q: (..., n, d_k)  K: (..., m, d_k)  V: (..., m, d_v)  mask: -> (..., n, m)
        returns output: (..., n, d_v)
    """
    n, d_k = Q.shape[-2:]
    m, d_v = V.shape[-2:]
    batch = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    lead = tuple(batch) or (1,)  # the batch axes; one axis of size 1 for one head
    B = math.prod(lead)
    Q = Q.expand(*lead, n, d_k).reshape(B, n, d_k) * (LOG2_E / math.sqrt(d_k))
    K_T = K.expand(*lead, m, d_k).reshape(B, m, d_k).transpose(1, 2)  # (B, d_k, m)
    V = V.expand(*lead, m, d_v).reshape(B, m, d_v)  # (B, m, d_v)
    if mask is not None:
        mask = torch.as_tensor(mask).expand(*lead, n, m).reshape(B, n, m)
    out = Q.new_empty((B, n, d_v))  # (B, n, d_v)
    margin = 0.0 if Q.dtype == torch.float16 else 8.0
    tile = 2**17 * torch.get_num_threads()
    q_block = max(1, min(n, tile // block_size))
    heads = max(1, tile // (q_block * block_size))
    for h in range(0, B, heads):
        for q in range(0, n, q_block):
            rows = (slice(h, h + heads), slice(q, q + q_block))
            out[rows] = _tile(Q[rows], K_T[h : h + heads], V[h : h + heads],
                              None if mask is None else mask[rows],
                              block_size, margin)  # fmt: skip
    return out.reshape(*batch, n, d_v)


def _tile(Q_tile, K_T, V, mask, block_size, margin):
    """One tile of queries (h, b_q, d_k) against every key block: (h, b_q, d_v)."""
    rows = Q_tile.shape[:2] + (1,)
    running_max = Q_tile.new_full(rows, -math.inf)  # -inf: no key seen yet
    shift = Q_tile.new_zeros(rows)  # running_max, or 0 while it is -inf
    running_sum = Q_tile.new_zeros(rows)  # sum of 2 ** (score - shift)
    acc = Q_tile.new_zeros(rows[:2] + (V.shape[-1],))  # sum of 2 ** (score - shift) v
    for start in range(0, K_T.shape[-1], block_size):
        keys = slice(start, start + block_size)
        scores = torch.baddbmm(-shift, Q_tile, K_T[..., keys])  # (h, b_q, b) - shift
        if mask is not None:
            scores.masked_fill_(~mask[..., keys], -math.inf)
        block_max = scores.detach().amax(dim=-1, keepdim=True) + shift
        if bool((block_max > running_max + margin).any()):
            new_max = torch.maximum(running_max, block_max)
            new_shift = torch.where(new_max > -math.inf, new_max, 0.0)
            scores.sub_(new_shift - shift)  # relative to the new shift
            # rescales the old sums; 0 (not inf) where no key was seen yet
            correction = torch.exp2(running_max - new_shift)
            running_max = new_max
            running_sum.mul_(correction)
            acc.mul_(correction)
            shift = new_shift
        p = scores.exp2_()  # (h, b_q, b), in place: only exp2's output is saved
        running_sum.add_(p.sum(dim=-1, keepdim=True))
        acc.baddbmm_(p, V[:, keys])  # (h, b_q, d_v)
    # Fully masked rows have a sum of 0 and acc 0: divide by 1 to give zeros.
    return acc / torch.where(running_sum == 0, 1.0, running_sum)
