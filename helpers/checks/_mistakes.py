"""Mistakes shared by several attention checkers: their messages and their maths.

``checks.attention`` (one query, all queries, self-attention) and
``checks.heads`` (multi-head attention) name the same slips in the same words:
a missing or wrong scale, a softmax over the wrong axis, a mask applied the
wrong way. Each message is a ``str.format_map`` template over the case's sizes
and facts (``{d_k}``, ``{d_v}``, ``{max_score}``, ...).
"""

import math

import numpy as np

from helpers import attention_np as anp

NO_SCALE = (
    "your scores are not scaled: score_s = <q, k_s> / sqrt(d_k), so divide the "
    "dot products by math.sqrt(d_k), d_k being the size of a query or key"
)
SCALE_D_K = (
    "you divided the scores by d_k = {d_k}; divide by sqrt(d_k) = {sqrt_d_k:.4g} "
    "instead (math.sqrt(d_k))"
)
SCALE_D_V = (
    "you divided the scores by sqrt(d_v) = sqrt({d_v}), the size of a value; the "
    "scale belongs to the dot product q . k, whose length is d_k = {d_k}: divide "
    "by math.sqrt(d_k), with d_k the size of a key, K.shape[-1]"
)
SCALE_TIMES_SQRT = (
    "you multiplied the scores by sqrt(d_k) = {sqrt_d_k:.4g}; divide by it "
    "instead: scores / math.sqrt(d_k)"
)
SCALE_N = (
    "you divided by the square root of n = {n}, the number of queries "
    "(Q.shape[-2]); d_k is the size of a query or key, the last axis"
)
SCALE_M = (
    "you divided by the square root of m = {m}, the number of keys (len(K)); d_k "
    "is the size of a query or key, the last axis"
)
SCALE_IGNORED = (
    "you ignored the `scale` argument (this call passed scale={scale}): use it "
    "instead of 1 / sqrt(d_k) when it is not None"
)
COLUMNS_SUM_TO_1 = (
    "your weights' columns sum to 1, not its rows: did you take the softmax over "
    "axis 0 / axis -2 (the queries) instead of the last axis (the keys)? Each "
    "query's weights over the m keys must sum to 1: softmax(scores, axis=-1)"
)
BATCH_AXIS = (
    "your weights sum to 1 over axis {a}, the batch axis (or a head axis): take the "
    "softmax over the last axis (the keys), axis=-1, so it works with any batch axes"
)
MAX_AXIS = (
    "you subtracted the max along another axis than the one you sum over: the "
    "shift must be one number per row (per query), so that it cancels between "
    "e^x and Z. Take both along the keys, with keepdims=True"
)
EXP_SIGN = (
    "you exponentiated max - x instead of x - max: e^(max - x) gives the largest "
    "weight to the smallest score. Use np.exp(x - max)"
)
NO_EXP = (
    "you forgot np.exp: the weights are e^x / Z, not the (shifted) scores "
    "divided by their sum"
)
ROWS_NOT_NORMALISED = (
    "the rows of your weights do not sum to 1: each query's weights over the "
    "keys must sum to 1, softmax(scores, axis=-1)"
)
MASK_AFTER = (
    "the blocked weights are zero but the rows no longer sum to 1: you applied "
    "the mask after the softmax. Mask the scores instead (blocked -> -inf, "
    "np.where(mask, scores, -np.inf)), then take the softmax, so the allowed "
    "keys share the whole weight"
)
MASK_FLIPPED = (
    "your mask polarity is flipped: in this course masks are boolean with "
    "True = may attend, so block the positions where the mask is False: "
    "np.where(mask, scores, -np.inf). Yours blocks the True positions"
)
MASK_ADDED = (
    "you added the boolean mask to the scores (scores + mask adds 0 or 1). A "
    "boolean mask selects: np.where(mask, scores, -np.inf)"
)
MASK_IGNORED = (
    "your weights are not zero where the mask is False: the mask was not applied "
    "to the scores. Use np.where(mask, scores, -np.inf) before the softmax"
)
FULLY_MASKED_UNIFORM = (
    "a fully masked row (a query that may attend to no key) must give zero "
    "weights and a zero output, but yours spreads the weight evenly (1/m each): "
    "filling with a finite number like -1e9 makes all its scores equal. Fill "
    "with -np.inf and set the weights of rows with no allowed key to 0"
)
FULLY_MASKED_NAN = (
    "a fully masked row (a query that may attend to no key) gives nan: all its "
    "scores are -inf, so the max subtraction computes -inf - (-inf) = nan (or "
    "the sum is 0 and you divide 0 / 0). Return zero weights and a zero output "
    "for such rows, as torch's scaled_dot_product_attention does"
)
NO_MAX = (
    "your result has nan or inf for large scores (here up to {max_score:.0f}): "
    "np.exp overflows to inf and inf / inf is nan. Subtract the max score of "
    "each row before exponentiating (softmax is unchanged by the shift)"
)
GLOBAL_MAX = (
    "you subtracted the largest score of the whole array, not of each row: in a "
    "row whose scores are all far below that global max, every exp underflows "
    "to 0 (and 0 / 0 is nan). Take the max along the keys, "
    "scores.max(axis=-1, keepdims=True)"
)
OUTPUT_TRANSPOSED = (
    "your output is transposed, (d_v, n) instead of (n, d_v): compute "
    "output = weights @ V, (n, m) @ (m, d_v)"
)
PRODUCT_ORDER_HINT = (
    "check the order of the matrix products and which matrix you transpose: "
    "scores = Q @ K^T is (..., n, m) and output = weights @ V is (..., n, d_v). "
    "For batched inputs transpose only the last two axes, "
    "np.swapaxes(K, -1, -2); K.T reverses all of them"
)


def pick_scale(scale, rule, Q, K, V):
    """The factor a (possibly wrong) implementation multiplies the scores by.

    ``Q`` (..., n, d_k) or one query (d_k,); ``K`` (..., m, d_k); ``V`` (..., m, d_v).
    """
    if rule == "none":  # forgot to scale
        return 1.0
    if rule == "ignored":  # always 1/sqrt(d_k), even when scale is given
        return 1.0 / math.sqrt(Q.shape[-1])
    if scale is not None:
        return scale
    size = {
        "right": Q.shape[-1],
        "d_k": Q.shape[-1] ** 2,  # divided by d_k, not its square root
        "d_v": V.shape[-1],
        "m": K.shape[-2],
        "n": Q.shape[-2] if Q.ndim > 1 else 1,
    }
    if rule == "times_sqrt":  # multiplied by sqrt(d_k) instead of dividing
        return math.sqrt(Q.shape[-1])
    return 1.0 / math.sqrt(size[rule])


def shifted_softmax(x, axis=-1, *, max_axis=-1, sign=1, use_exp=True):
    """A softmax with a slip in its shift: another axis, the wrong sign, no exp."""
    shifted = sign * (x - x.max(axis=max_axis, keepdims=True))
    e = np.exp(shifted) if use_exp else shifted
    return e / e.sum(axis=axis, keepdims=True)


def no_exp_softmax(x, axis=-1):
    """The scores divided by their sum: the exp forgotten, and the shift too."""
    return x / x.sum(axis=axis, keepdims=True)


def naive_softmax(x, axis=-1):
    """Softmax without any max subtraction: overflows for large x."""
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def global_max_softmax(x, axis=-1):
    """Softmax shifted by the max of the whole array instead of each row's."""
    e = np.exp(x - x.max())
    return e / e.sum(axis=axis, keepdims=True)


def masked_softmax(scores, mask, mode="before", axis=-1):
    """Softmax of the scores with the mask applied the right or a wrong way."""
    if mask is None:
        return anp.softmax(scores, axis)
    if mode == "before":
        return anp.softmax(np.where(mask, scores, -np.inf), axis)
    if mode == "flipped":
        return anp.softmax(np.where(mask, -np.inf, scores), axis)
    if mode == "after":
        return anp.softmax(scores, axis) * mask
    if mode == "unguarded":  # max-subtracted, but fully masked rows become nan
        scores = np.where(mask, scores, -np.inf)
        e = np.exp(scores - scores.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)
    if mode == "fill":  # -1e9 instead of -inf: fully masked rows become uniform
        return anp.softmax(np.where(mask, scores, -1e9), axis)
    if mode == "added":  # the boolean mask added to the scores as 0/1
        return anp.softmax(scores + mask, axis)
    raise ValueError(mode)


def _normalised_along(weights, axis):
    return bool(np.allclose(weights.sum(axis), 1.0))


def diagnose_weights(case, got, expected):
    """Name a mistake from the weights (``got[1]``): rows sum to 1, mask obeyed.

    Works for single-head weights (..., n, m) and per-head weights
    (batch, num_heads, n, m) alike; the output (``got[0]``) may have any shape.
    """
    output, weights = (g.astype(np.float64) for g in got[:2])
    if weights.shape != expected[1].shape or weights.ndim < 2:
        return None
    mask = case.kwargs.get("mask")
    allowed = None if mask is None else np.broadcast_to(mask, weights.shape)
    empty = np.zeros(weights.shape[:-1], bool) if mask is None else ~allowed.any(-1)
    bad = ~np.isfinite(weights).all(-1)  # (..., n): rows with nan or inf
    good = ~bad & ~empty
    if allowed is not None and good.any():
        on_allowed = np.where(allowed, weights, 0.0)[good]
        on_blocked = np.where(allowed, 0.0, weights)[good]
        if np.allclose(on_allowed, 0.0) and not np.allclose(on_blocked, 0.0):
            return MASK_FLIPPED
    if bad.any():
        if not (bad & ~empty).any():
            return FULLY_MASKED_NAN
        if case.large:
            return NO_MAX
        return (
            "your weights contain nan or inf where the reference is finite "
            f"({int(bad.sum())} rows of queries)"
        )
    if not np.isfinite(output).all():
        return "your weights are finite but your output contains nan or inf"
    dead = (weights == 0).all(-1) & ~empty  # rows where every exp underflowed
    if case.large and dead.any():
        return GLOBAL_MAX
    if not np.allclose(weights.sum(-1)[~empty], 1.0):
        for axis in range(weights.ndim - 1):
            if _normalised_along(weights, axis):
                if axis == weights.ndim - 2:
                    return COLUMNS_SUM_TO_1
                return BATCH_AXIS.replace("{a}", str(axis))
        if allowed is not None and np.allclose(weights[~allowed], 0.0):
            return MASK_AFTER
        return ROWS_NOT_NORMALISED
    if allowed is not None:
        if not np.allclose(np.where(allowed, 0.0, weights)[good], 0.0):
            return MASK_IGNORED
        if empty.any() and not np.allclose(weights[empty], 0.0):
            return FULLY_MASKED_UNIFORM
    return None
