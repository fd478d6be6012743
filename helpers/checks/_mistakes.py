"""Mistakes shared by several attention checkers: their messages and their maths.

``checks.attention`` (one query, all queries, self-attention) and
``checks.heads`` (multi-head attention) name the same slips in the same words:
a missing or wrong scale, a softmax over the wrong axis, a mask applied the
wrong way. Each is a :class:`~helpers.checks._engine.Mistake` (symptom, why,
fix: the steps a learner is told it in), whose parts are ``str.format_map``
templates over the case's sizes and facts (``{d_k}``, ``{d_v}``, ``{max_score}``).
"""

import math

import numpy as np

from helpers import attention_np as anp
from helpers.checks._engine import Mistake

NO_SCALE = Mistake(
    symptom="your scores are not scaled: they equal the raw dot products <q, k_s>",
    why="with d_k features a dot product of random vectors has variance d_k, so "
    "unscaled scores grow with d_k and the softmax saturates",
    fix="score_s = <q, k_s> / sqrt(d_k): divide the dot products by "
    "math.sqrt(d_k), d_k being the size of a query or key",
    line=r"@|dot|einsum",
)
SCALE_D_K = Mistake(
    symptom="you divided the scores by d_k = {d_k}, not by its square root",
    why="the scale keeps the scores' variance at 1: a dot product of d_k "
    "unit-variance features has variance d_k, so its standard deviation is sqrt(d_k)",
    fix="divide by sqrt(d_k) = {sqrt_d_k:.4g} instead (math.sqrt(d_k))",
    line=r"/",
)
SCALE_D_V = Mistake(
    symptom="you divided the scores by sqrt(d_v) = sqrt({d_v}), the size of a value",
    why="the scale belongs to the dot product q . k, whose length is d_k = {d_k}; "
    "the values never enter the scores",
    fix="divide by math.sqrt(d_k), with d_k the size of a key, K.shape[-1]",
    line=r"sqrt",
)
SCALE_TIMES_SQRT = Mistake(
    symptom="you multiplied the scores by sqrt(d_k) = {sqrt_d_k:.4g}",
    why="the scale shrinks the scores' spread back to about 1; multiplying grows "
    "it to d_k and the softmax saturates",
    fix="divide by it instead: scores / math.sqrt(d_k)",
    line=r"sqrt",
)
SCALE_N = Mistake(
    symptom="you divided by the square root of n = {n}, the number of queries "
    "(Q.shape[-2])",
    why="the scale depends on the length of each dot product, d_k, not on how "
    "many queries there are",
    fix="d_k is the size of a query or key, the last axis: math.sqrt(Q.shape[-1])",
    line=r"sqrt|shape|len",
)
SCALE_M = Mistake(
    symptom="you divided by the square root of m = {m}, the number of keys (len(K))",
    why="the scale depends on the length of each dot product, d_k, not on how "
    "many keys there are",
    fix="d_k is the size of a query or key, the last axis: math.sqrt(K.shape[-1])",
    line=r"sqrt|shape|len",
)
SCALE_IGNORED = Mistake(
    symptom="you ignored the `scale` argument (this call passed scale={scale})",
    why="a caller who passes a scale wants exactly that factor, not 1 / sqrt(d_k)",
    fix="use `scale` instead of 1 / sqrt(d_k) when it is not None",
    line=r"sqrt",
)
SCALE_DIVIDED = Mistake(
    symptom="you divided the scores by `scale` (this call passed scale={scale})",
    why="`scale` is the factor the scores are multiplied by: by default 1 / sqrt(d_k), "
    "so scale={scale} makes the scores {scale} times the dot products",
    fix="multiply: scores = scale * (K @ q), with scale = 1 / math.sqrt(d_k) when it "
    "is None",
    line=r"/\s*scale\b",
)
COLUMNS_SUM_TO_1 = Mistake(
    symptom="your weights' columns sum to 1, not its rows: the softmax ran over the "
    "queries (axis 0 / axis -2)",
    why="each query's weights over the m keys must sum to 1: the softmax "
    "normalises along the keys, the last axis",
    fix="softmax(scores, axis=-1)",
    line=r"axis|softmax",
)
BATCH_AXIS = Mistake(
    symptom="your weights sum to 1 over axis {a}, the batch axis (or a head axis)",
    why="each query's weights over the keys must sum to 1, and the keys are the "
    "last axis whatever the batch axes in front",
    fix="take the softmax over the last axis (the keys), axis=-1, so it works with "
    "any batch axes",
    line=r"axis|softmax",
)
MAX_AXIS = Mistake(
    symptom="you subtracted the max along another axis than the one you sum over",
    why="the shift must be one number per row (per query), so that it cancels "
    "between e^x and Z",
    fix="take both the max and the sum along the keys, with keepdims=True",
    line=r"max",
)
EXP_SIGN = Mistake(
    symptom="you exponentiated max - x instead of x - max",
    why="e^(max - x) gives the largest weight to the smallest score",
    fix="np.exp(x - max)",
    line=r"exp",
)
NO_EXP = Mistake(
    symptom="you forgot np.exp: your weights are the (shifted) scores divided by "
    "their sum",
    why="the softmax's weights are e^x / Z: only the exponential makes every "
    "weight positive and lets a larger score win by a factor",
    fix="e = np.exp(x - max); weights = e / e.sum(axis=-1, keepdims=True)",
    line=r"sum",
)
ROWS_NOT_NORMALISED = Mistake(
    symptom="the rows of your weights do not sum to 1",
    why="each query's weights over the keys are a distribution: they must sum to 1",
    fix="softmax(scores, axis=-1): divide each row's exponentials by their sum",
)
MASK_AFTER = Mistake(
    symptom="the blocked weights are zero but the rows no longer sum to 1: you "
    "applied the mask after the softmax",
    why="zeroing weights after normalising throws their share away; masking the "
    "scores first lets the allowed keys share the whole weight",
    fix="mask the scores instead (blocked -> -inf, np.where(mask, scores, "
    "-np.inf)), then take the softmax",
    line=r"mask",
)
MASK_FLIPPED = Mistake(
    symptom="your mask polarity is flipped: yours blocks the True positions",
    why="in this course masks are boolean with True = may attend",
    fix="block the positions where the mask is False: np.where(mask, scores, -np.inf)",
    line=r"mask",
)
MASK_ADDED = Mistake(
    symptom="you added the boolean mask to the scores (scores + mask adds 0 or 1)",
    why="adding 1 to a score only multiplies its weight by e; a mask must "
    "select, sending blocked scores to -inf",
    fix="np.where(mask, scores, -np.inf)",
    line=r"mask",
)
MASK_IGNORED = Mistake(
    symptom="your weights are not zero where the mask is False: the mask was not "
    "applied to the scores",
    why="a blocked key must get exactly zero weight, so its score must be -inf "
    "before the softmax",
    fix="np.where(mask, scores, -np.inf) before the softmax",
)
FULLY_MASKED_UNIFORM = Mistake(
    symptom="a fully masked row (a query that may attend to no key) spreads the "
    "weight evenly (1/m each), but it must give zero weights and a zero output",
    why="filling with a finite number like -1e9 makes all its scores equal, and "
    "the softmax of equal scores is uniform",
    fix="fill with -np.inf and set the weights of rows with no allowed key to 0",
    line=r"1e9|1e\+?\d",
)
FULLY_MASKED_NAN = Mistake(
    symptom="a fully masked row (a query that may attend to no key) gives nan",
    why="all its scores are -inf, so the max subtraction computes -inf - (-inf) = "
    "nan (or the sum is 0 and you divide 0 / 0)",
    fix="return zero weights and a zero output for such rows, as torch's "
    "scaled_dot_product_attention does: shift by 0 where the max is -inf, divide "
    "by 1 where the sum is 0",
    line=r"max|sum",
)
NO_MAX = Mistake(
    symptom="your result has nan or inf for large scores (here up to "
    "{max_score:.0f}): np.exp overflows",
    why="e^x is inf above x = 709, and inf / inf is nan",
    fix="subtract the max score of each row before exponentiating (softmax is "
    "unchanged by the shift)",
    line=r"exp",
)
GLOBAL_MAX = Mistake(
    symptom="you subtracted the largest score of the whole array, not of each row",
    why="in a row whose scores are all far below that global max, every exp "
    "underflows to 0 (and 0 / 0 is nan)",
    fix="take the max along the keys, scores.max(axis=-1, keepdims=True)",
    line=r"max",
)
OUTPUT_TRANSPOSED = Mistake(
    symptom="your output is transposed, (d_v, n) instead of (n, d_v)",
    why="each query's output is a row: a weighted sum of the value rows",
    fix="output = weights @ V, (n, m) @ (m, d_v)",
    line=r"@|\.T\b|transpose|swapaxes",
)
PRODUCT_ORDER_HINT = Mistake(  # run(hint=...): the words at once, the code on request
    symptom="check the order of the matrix products and which axes a transpose "
    "swaps: the scores are (..., n, m) and the output (..., n, d_v), and with "
    "batch axes only the last two axes of K trade places",
    fix="scores = Q @ np.swapaxes(K, -1, -2) is (..., n, m) and output = "
    "weights @ V is (..., n, d_v); K.T reverses all the axes, batch ones too",
)


def pick_scale(scale, rule, Q, K, V):
    """The factor a (possibly wrong) implementation multiplies the scores by.

    ``Q`` (..., n, d_k) or one query (d_k,); ``K`` (..., m, d_k); ``V`` (..., m, d_v).
    """
    if rule == "none":  # forgot to scale
        return 1.0
    if rule == "ignored":  # always 1/sqrt(d_k), even when scale is given
        return 1.0 / math.sqrt(Q.shape[-1])
    if rule == "divided":  # scale taken as a divisor; default sqrt(d_k)
        return 1.0 / (math.sqrt(Q.shape[-1]) if scale is None else scale)
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
