"""The exercise checkers accept right answers and name each known mistake.

Every wrong implementation below is written here, independently of the
variants inside ``helpers.checks``, the way a learner might write it. Each must
be rejected with an AssertionError whose message contains the diagnosis.
"""

import math
import re

import numpy as np
import pytest

from helpers import attention_np as anp
from helpers import checks

# --------------------------------------------------------------------------
# Right answers written independently of helpers.attention_np
# --------------------------------------------------------------------------


def simple_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def simple_one_query(q, K, V, scale=None):
    scale = 1 / math.sqrt(len(q)) if scale is None else scale
    scores = np.array([np.dot(q, k) * scale for k in K])  # (m,)
    exps = np.exp(scores)
    Z = exps.sum()
    y = sum(e / Z * v for e, v in zip(exps, V, strict=True))  # (d_v,)
    return y, exps / Z, Z


def stable_rows(scores):
    """Softmax over the last axis; rows that are all -inf give zeros."""
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def simple_sdpa(Q, K, V, mask=None, scale=None):
    scale = 1 / math.sqrt(Q.shape[-1]) if scale is None else scale
    scores = Q @ np.swapaxes(K, -1, -2) * scale  # (..., n, m)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = stable_rows(scores)
    return weights @ V, weights


def simple_causal(n, m):
    i = np.arange(n)[:, None]  # (n, 1) query positions
    j = np.arange(m)[None, :]  # (1, m) key positions
    return j <= i + (m - n)


def simple_split(x, num_heads):
    batch, n, d_model = x.shape
    x = x.reshape(batch, n, num_heads, d_model // num_heads)
    return x.transpose(0, 2, 1, 3)


def loop_mha(X, W_Q, W_K, W_V, W_O, num_heads, mask=None, kv=None):
    """One head at a time, slicing the columns of the projection matrices."""
    kv = X if kv is None else kv
    batch, n, d_model = X.shape
    m = kv.shape[1]
    d_k = d_model // num_heads
    full_mask = None
    if mask is not None:
        full_mask = np.broadcast_to(mask, (batch, num_heads, n, m))
    outs, weights = [], []
    for h in range(num_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        head_mask = None if full_mask is None else full_mask[:, h]
        out, w = simple_sdpa(
            X @ W_Q[:, cols], kv @ W_K[:, cols], kv @ W_V[:, cols], mask=head_mask
        )
        outs.append(out)
        weights.append(w)
    return np.concatenate(outs, axis=-1) @ W_O, np.stack(weights, axis=1)


def list_causal(n, m):
    """A mask as nested lists of bools is array-like too."""
    return [[j <= i + (m - n) for j in range(m)] for i in range(n)]


RIGHT = [
    pytest.param(checks.check_softmax, anp.softmax, id="softmax-helper"),
    pytest.param(checks.check_softmax, simple_softmax, id="softmax-simple"),
    pytest.param(
        checks.check_attention_one_query, anp.attention_one_query, id="one-helper"
    ),
    pytest.param(checks.check_attention_one_query, simple_one_query, id="one-simple"),
    pytest.param(
        checks.check_scaled_dot_product_attention,
        anp.scaled_dot_product_attention,
        id="sdpa-helper",
    ),
    pytest.param(
        checks.check_scaled_dot_product_attention, simple_sdpa, id="sdpa-simple"
    ),
    pytest.param(checks.check_causal_mask, anp.causal_mask, id="causal-helper"),
    pytest.param(checks.check_causal_mask, simple_causal, id="causal-simple"),
    pytest.param(checks.check_causal_mask, list_causal, id="causal-lists"),
    pytest.param(checks.check_split_heads, anp.split_heads, id="split-helper"),
    pytest.param(checks.check_split_heads, simple_split, id="split-simple"),
    pytest.param(
        checks.check_multi_head_attention, anp.multi_head_attention, id="mha-helper"
    ),
    pytest.param(checks.check_multi_head_attention, loop_mha, id="mha-loop"),
]


@pytest.mark.parametrize(("checker", "fn"), RIGHT)
def test_accepts_a_right_answer(checker, fn, capsys):
    assert checker(fn) is True
    printed = capsys.readouterr().out.strip().splitlines()
    assert len(printed) == 1
    assert re.fullmatch(rf"✓ {checker.__name__}: \d+ cases passed", printed[0])


# --------------------------------------------------------------------------
# softmax: wrong answers
# --------------------------------------------------------------------------


def softmax_axis_0(x, axis=-1):
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def softmax_ignores_axis(x, axis=-1):
    return simple_softmax(x, -1)


def softmax_no_max(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def softmax_not_normalised(x, axis=-1):
    return np.exp(x - x.max(axis=axis, keepdims=True))


def softmax_divides_by_max(x, axis=-1):
    e = np.exp(x)
    return e / e.max(axis=axis, keepdims=True)


def softmax_flattened(x, axis=-1):
    return simple_softmax(x, axis).ravel()


def softmax_no_keepdims(x, axis=-1):
    e = np.exp(x - x.max(axis=axis))
    return e / e.sum(axis=axis)


def softmax_in_place(x, axis=-1):
    x -= x.max(axis=axis, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=axis, keepdims=True)
    return x


def softmax_no_return(x, axis=-1):
    simple_softmax(x, axis)


def softmax_returns_z_too(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    Z = e.sum(axis=axis)
    return e / Z[..., None], Z


def softmax_returns_text(x, axis=-1):
    return str(simple_softmax(x, axis))


WRONG_SOFTMAX = [
    (softmax_axis_0, "normalises over the wrong axis"),
    (softmax_ignores_axis, "normalises over the wrong axis"),
    (softmax_no_max, "Subtract the max along the axis"),
    (softmax_not_normalised, "do not sum to 1"),
    (softmax_divides_by_max, "do not sum to 1"),
    (softmax_flattened, "has shape"),
    (softmax_no_keepdims, "keepdims=True"),
    (softmax_in_place, "changed its input `x` in place"),
    (softmax_no_return, "did you forget `return`"),
    (softmax_returns_z_too, "not an array of numbers"),
    (softmax_returns_text, "not an array of numbers"),
]

# --------------------------------------------------------------------------
# attention_one_query: wrong answers
# --------------------------------------------------------------------------


def one_query(q, K, V, scale=None, *, divide_by=None, y_sum_axis=0, values=None):
    """A loop-free one-query attention with knobs a learner might get wrong."""
    d_k = len(q)
    if scale is None:
        scale = 1 / (math.sqrt(d_k) if divide_by is None else divide_by(d_k))
    exps = np.exp(K @ q * scale)  # (m,)
    Z = exps.sum()
    weights = exps / Z
    values = V if values is None else values(K, V)
    y = (weights[:, None] * values).sum(axis=y_sum_axis)
    return y, weights, Z


def one_query_no_scale(q, K, V, scale=None):
    return one_query(q, K, V, scale=1.0)


def one_query_divides_by_d_k(q, K, V, scale=None):
    return one_query(q, K, V, scale, divide_by=lambda d_k: d_k)


def one_query_ignores_scale(q, K, V, scale=None):
    return one_query(q, K, V)


def one_query_no_normaliser(q, K, V, scale=None):
    exps = np.exp(K @ q / math.sqrt(len(q)))
    return exps @ V, exps, exps.sum()


def one_query_y_without_1_over_z(q, K, V, scale=None):
    y, weights, Z = one_query(q, K, V, scale)
    return weights * Z @ V, weights, Z


def one_query_shifted_z(q, K, V, scale=None):
    scores = K @ q / math.sqrt(len(q))
    exps = np.exp(scores - scores.max())
    Z = exps.sum()
    return exps / Z @ V, exps / Z, Z


def one_query_z_is_weight_sum(q, K, V, scale=None):
    y, weights, _ = one_query(q, K, V, scale)
    return y, weights, weights.sum()


def one_query_z_of_scores(q, K, V, scale=None):
    y, weights, _ = one_query(q, K, V, scale)
    return y, weights, (K @ q).sum() / math.sqrt(len(q))


def one_query_y_per_key(q, K, V, scale=None):
    return one_query(q, K, V, scale, y_sum_axis=1)


def one_query_sums_keys(q, K, V, scale=None):
    return one_query(q, K, V, scale, values=lambda K, V: K)


def one_query_swapped(q, K, V, scale=None):
    y, weights, Z = one_query(q, K, V, scale)
    return weights, y, Z


def one_query_returns_y_only(q, K, V, scale=None):
    return one_query(q, K, V, scale)[0]


WRONG_ONE_QUERY = [
    (one_query_no_scale, "scores are not scaled"),
    (one_query_divides_by_d_k, "divided the scores by d_k"),
    (one_query_ignores_scale, "ignored the `scale` argument"),
    (one_query_no_normaliser, "forgot the 1/Z"),
    (one_query_y_without_1_over_z, "forgot the 1/Z in"),
    (one_query_shifted_z, "after subtracting the max"),
    (one_query_z_is_weight_sum, "your Z is 1"),
    (one_query_z_of_scores, "y and weights are right but Z is"),
    (one_query_y_per_key, "instead of over the keys"),
    (one_query_sums_keys, "keys K instead of the values V"),
    (one_query_swapped, "return them in the order (y, weights, Z)"),
    (one_query_returns_y_only, "it must return 3 values"),
]

# --------------------------------------------------------------------------
# scaled_dot_product_attention: wrong answers
# --------------------------------------------------------------------------


def sdpa(Q, K, V, mask=None, scale=None, *, axis=-1, divide_by=None, fill=-np.inf):
    """A direct implementation with knobs a learner might get wrong."""
    d_k = Q.shape[-1]
    if scale is None:
        scale = 1 / (math.sqrt(d_k) if divide_by is None else divide_by(d_k))
    scores = Q @ np.swapaxes(K, -1, -2) * scale
    if mask is not None:
        scores = np.where(mask, scores, fill)
    if axis == -1:
        weights = stable_rows(scores)
    else:
        weights = simple_softmax(scores, axis)
    return weights @ V, weights


def sdpa_axis_0(Q, K, V, mask=None, scale=None):
    return sdpa(Q, K, V, mask, scale, axis=0)


def sdpa_axis_1(Q, K, V, mask=None, scale=None):
    return sdpa(Q, K, V, mask, scale, axis=1)  # right for 2-D, wrong with a batch


def sdpa_batch_axis(Q, K, V, mask=None, scale=None):
    return sdpa(Q, K, V, mask, scale, axis=0 if Q.ndim == 3 else -1)


def sdpa_no_scale(Q, K, V, mask=None, scale=None):
    return sdpa(Q, K, V, mask, scale=1.0)


def sdpa_divides_by_d_k(Q, K, V, mask=None, scale=None):
    return sdpa(Q, K, V, mask, scale, divide_by=lambda d_k: d_k)


def sdpa_ignores_scale(Q, K, V, mask=None, scale=None):
    return sdpa(Q, K, V, mask)


def sdpa_values_first(Q, K, V, mask=None, scale=None):
    _, weights = sdpa(Q, K, V, mask, scale)
    return V @ weights, weights


def sdpa_k_not_transposed(Q, K, V, mask=None, scale=None):
    weights = stable_rows(Q @ K / math.sqrt(Q.shape[-1]))
    return weights @ V, weights


def sdpa_k_dot_t(Q, K, V, mask=None, scale=None):
    weights = stable_rows(Q @ K.T / math.sqrt(Q.shape[-1]))
    return weights @ V, weights


def sdpa_transposed_output(Q, K, V, mask=None, scale=None):
    _, weights = sdpa(Q, K, V, mask, scale)
    return np.swapaxes(V, -1, -2) @ np.swapaxes(weights, -1, -2), weights


def sdpa_swapped_outputs(Q, K, V, mask=None, scale=None):
    output, weights = sdpa(Q, K, V, mask, scale)
    return weights, output


def sdpa_mask_after_softmax(Q, K, V, mask=None, scale=None):
    _, weights = sdpa(Q, K, V, None, scale)
    if mask is not None:
        weights = weights * mask
    return weights @ V, weights


def sdpa_mask_after_renormalised(Q, K, V, mask=None, scale=None):
    _, weights = sdpa(Q, K, V, None, scale)
    if mask is not None:
        weights = weights * mask
        weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights @ V, weights


def sdpa_flipped_mask(Q, K, V, mask=None, scale=None):
    return sdpa(Q, K, V, None if mask is None else ~mask, scale)


def sdpa_flipped_mask_nan(Q, K, V, mask=None, scale=None):
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    if scale is not None:
        scores = Q @ np.swapaxes(K, -1, -2) * scale
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    weights = simple_softmax(scores)  # nan for rows with no allowed key
    return weights @ V, weights


def sdpa_mask_added(Q, K, V, mask=None, scale=None):
    scale = 1 / math.sqrt(Q.shape[-1]) if scale is None else scale
    scores = Q @ np.swapaxes(K, -1, -2) * scale
    if mask is not None:
        scores = scores + mask
    weights = simple_softmax(scores)
    return weights @ V, weights


def sdpa_minus_1e9(Q, K, V, mask=None, scale=None):
    return sdpa(Q, K, V, mask, scale, fill=-1e9)


def sdpa_additive_convention(Q, K, V, mask=None, scale=None):
    """seed 003's additive mask, but with True read as 1 = blocked."""
    scale = 1 / math.sqrt(Q.shape[-1]) if scale is None else scale
    scores = Q @ np.swapaxes(K, -1, -2) * scale
    if mask is not None:
        scores = scores + mask * -1e9
    weights = simple_softmax(scores)
    return weights @ V, weights


def sdpa_no_max(Q, K, V, mask=None, scale=None):
    scale = 1 / math.sqrt(Q.shape[-1]) if scale is None else scale
    scores = Q @ np.swapaxes(K, -1, -2) * scale
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores)
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ V, weights


def sdpa_fully_masked_nan(Q, K, V, mask=None, scale=None):
    scale = 1 / math.sqrt(Q.shape[-1]) if scale is None else scale
    scores = Q @ np.swapaxes(K, -1, -2) * scale
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = simple_softmax(scores)  # -inf - (-inf) = nan in empty rows
    return weights @ V, weights


def sdpa_mask_ignored(Q, K, V, mask=None, scale=None):
    return sdpa(Q, K, V, None, scale)


WRONG_SDPA = [
    (sdpa_axis_0, "columns sum to 1, not its rows"),
    (sdpa_axis_1, "columns sum to 1, not its rows"),
    (sdpa_batch_axis, "the batch axis"),
    (sdpa_no_scale, "scores are not scaled"),
    (sdpa_divides_by_d_k, "divided the scores by d_k"),
    (sdpa_ignores_scale, "ignored the `scale` argument"),
    (sdpa_values_first, "order of the matrix products"),
    (sdpa_k_not_transposed, "order of the matrix products"),
    (sdpa_k_dot_t, "K.T reverses all of them"),
    (sdpa_transposed_output, "output is transposed"),
    (sdpa_swapped_outputs, "return them in the order (output, weights)"),
    (sdpa_mask_after_softmax, "applied the mask after the softmax"),
    (sdpa_mask_after_renormalised, "fully masked row"),
    (sdpa_flipped_mask, "mask polarity is flipped"),
    (sdpa_flipped_mask_nan, "mask polarity is flipped"),
    (sdpa_mask_added, "added the boolean mask"),
    (sdpa_additive_convention, "mask polarity is flipped"),
    (sdpa_minus_1e9, "spreads the weight evenly (1/m each)"),
    (sdpa_no_max, "Subtract the max score of each row"),
    (
        sdpa_fully_masked_nan,
        "a fully masked row (a query that may attend to no key) gives nan",
    ),
    (sdpa_mask_ignored, "the mask was not applied"),
]

# --------------------------------------------------------------------------
# causal_mask: wrong answers
# --------------------------------------------------------------------------


def ones(n, m):
    return np.ones((n, m), dtype=bool)


WRONG_CAUSAL = [
    (lambda n, m: np.triu(ones(n, m), k=m - n + 1), "mask polarity is flipped"),
    (lambda n, m: ~simple_causal(n, m), "mask polarity is flipped"),
    (lambda n, m: np.triu(ones(n, m)), "upper triangle (np.triu)"),
    (lambda n, m: np.tril(ones(n, m)), "aligned lower-right"),
    (
        lambda n, m: np.arange(m)[None, :] <= np.arange(n)[:, None],
        "aligned lower-right",
    ),
    (lambda n, m: np.tril(ones(n, m), k=n - m), "shifted the diagonal the wrong way"),
    (lambda n, m: np.tril(np.ones((n, m)), k=m - n), "must be boolean"),
    (lambda n, m: simple_causal(n, m).astype(int), "must be boolean"),
    (lambda n, m: np.tril(ones(n, n)), "one column per key"),
    (lambda n, m: simple_causal(m, n), "has shape (5, 3) = (m, n)"),
]

# --------------------------------------------------------------------------
# split_heads: wrong answers
# --------------------------------------------------------------------------


def split_no_transpose(x, num_heads):
    batch, n, d_model = x.shape
    return x.reshape(batch, num_heads, n, d_model // num_heads)


def split_interleaved(x, num_heads):
    batch, n, d_model = x.shape
    x = x.reshape(batch, n, d_model // num_heads, num_heads)  # (b, n, d_k, H)
    return np.moveaxis(x, -1, 1)


def split_forgot_transpose_shape(x, num_heads):
    batch, n, d_model = x.shape
    return x.reshape(batch, n, num_heads, d_model // num_heads)


def split_wrong_axes(x, num_heads):
    return simple_split(x, num_heads).swapaxes(-1, -2)


WRONG_SPLIT = [
    (split_no_transpose, "without the transpose"),
    (split_interleaved, "heads are interleaved"),
    (split_forgot_transpose_shape, "should be (batch, num_heads, n, d_k)"),
    (split_wrong_axes, "has shape (2, 3, 4, 5) = (batch, num_heads, d_k, n)"),
]

# --------------------------------------------------------------------------
# multi_head_attention: wrong answers
# --------------------------------------------------------------------------


def mha(X, W_Q, W_K, W_V, W_O, num_heads, mask=None, kv=None, **bug):
    """Reshape-based multi-head attention; ``bug`` switches one mistake on."""
    batch, n, d_model = X.shape
    d_k = d_model // num_heads
    if bug.get("transpose_W"):
        W_Q, W_K, W_V, W_O = W_Q.T, W_K.T, W_V.T, W_O.T
    source = X if kv is None or bug.get("ignore_kv") else kv

    def split(x):
        if bug.get("split_without_transpose"):
            return x.reshape(batch, num_heads, -1, d_k)
        return x.reshape(batch, -1, num_heads, d_k).transpose(0, 2, 1, 3)

    Q, K, V = split(X @ W_Q), split(source @ W_K), split(source @ W_V)
    divisor = {
        None: math.sqrt(d_k),
        "sqrt_d_model": math.sqrt(d_model),
        "d_model": d_model,
        "d_k": d_k,
        "nothing": 1.0,
    }[bug.get("divide_by")]
    scores = Q @ K.transpose(0, 1, 3, 2) / divisor  # (batch, H, n, m)
    if mask is not None and bug.get("mask_mode") == "flipped":
        scores = np.where(mask, -np.inf, scores)
    elif mask is not None and bug.get("mask_mode") != "after":
        scores = np.where(mask, scores, -np.inf)
    weights = simple_softmax(scores)
    if mask is not None and bug.get("mask_mode") == "after":
        weights = weights * mask
    heads = weights @ V  # (batch, H, n, d_k)
    if bug.get("merge_without_transpose"):
        merged = heads.reshape(batch, n, d_model)
    else:
        merged = heads.transpose(0, 2, 1, 3).reshape(batch, n, d_model)
    output = merged if bug.get("skip_W_O") else merged @ W_O
    if bug.get("weights") == "averaged":
        weights = weights.mean(axis=1)
    if bug.get("weights") == "flat":
        weights = weights.reshape(-1, *weights.shape[2:])
    return output, weights


def mha_with(**bug):
    def wrong(X, W_Q, W_K, W_V, W_O, num_heads, mask=None, kv=None):
        return mha(X, W_Q, W_K, W_V, W_O, num_heads, mask=mask, kv=kv, **bug)

    wrong.__name__ = "mha_" + "_".join(
        k if v is True else f"{k}_{v}" for k, v in bug.items()
    )
    return wrong


def mha_mask_added(X, W_Q, W_K, W_V, W_O, num_heads, mask=None, kv=None):
    """Adds the boolean mask to the scores, through anp's attention per head."""
    kv = X if kv is None else kv
    Q = anp.split_heads(X @ W_Q, num_heads)
    K = anp.split_heads(kv @ W_K, num_heads)
    V = anp.split_heads(kv @ W_V, num_heads)
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    weights = simple_softmax(scores)
    return anp.merge_heads(weights @ V) @ W_O, weights


WRONG_MHA = [
    (
        mha_with(divide_by="sqrt_d_model"),
        "scaled the scores by sqrt(d_model)",
    ),
    (mha_with(divide_by="d_model"), "divided the scores by d_model"),
    (mha_with(divide_by="d_k"), "divide by its square root"),
    (mha_with(divide_by="nothing"), "scores are not scaled"),
    (mha_with(split_without_transpose=True), "split without the transpose"),
    (
        mha_with(split_without_transpose=True, merge_without_transpose=True),
        "split without the transpose",
    ),
    (mha_with(merge_without_transpose=True), "merged without the transpose"),
    (mha_with(skip_W_O=True), "skips the output projection"),
    (mha_with(transpose_W=True), "X @ W.T"),
    (mha_with(mask_mode="after"), "applied the mask after the softmax"),
    (mha_with(mask_mode="flipped"), "mask polarity is flipped"),
    (mha_mask_added, "added the boolean mask"),
    (mha_with(weights="averaged"), "averaged over the heads"),
    (mha_with(weights="flat"), "(batch, num_heads, n, m)"),
    (mha_with(ignore_kv=True), "kv was given (cross-attention)"),
]

# --------------------------------------------------------------------------
# Every wrong answer is rejected with its diagnosis
# --------------------------------------------------------------------------

WRONG = [
    pytest.param(checker, fn, keyword, id=f"{short}-{i}-{getattr(fn, '__name__', '')}")
    for checker, short, table in [
        (checks.check_softmax, "softmax", WRONG_SOFTMAX),
        (checks.check_attention_one_query, "one", WRONG_ONE_QUERY),
        (checks.check_scaled_dot_product_attention, "sdpa", WRONG_SDPA),
        (checks.check_causal_mask, "causal", WRONG_CAUSAL),
        (checks.check_split_heads, "split", WRONG_SPLIT),
        (checks.check_multi_head_attention, "mha", WRONG_MHA),
    ]
    for i, (fn, keyword) in enumerate(table)
]


@pytest.mark.parametrize(("checker", "fn", "keyword"), WRONG)
def test_rejects_a_wrong_answer_with_its_diagnosis(checker, fn, keyword, capsys):
    with pytest.raises(AssertionError, match=re.escape(keyword)) as info:
        checker(fn)
    assert info.value.args[0].startswith(checker.__name__)  # says which check
    assert "✓" not in capsys.readouterr().out  # no success line on failure


SEEDED = [p for p in WRONG if p.values[0] is not checks.check_causal_mask]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize(("checker", "fn", "keyword"), SEEDED)
def test_diagnosis_does_not_depend_on_the_seed(checker, fn, keyword, seed):
    with pytest.raises(AssertionError, match=re.escape(keyword)):
        checker(fn, seed=seed)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize(("checker", "fn"), [p for p in RIGHT if "causal" not in p.id])
def test_accepts_a_right_answer_for_other_seeds(checker, fn, seed):
    assert checker(fn, seed=seed) is True


# --------------------------------------------------------------------------
# Unfinished exercises, crashes, and the rest of the contract
# --------------------------------------------------------------------------

ALL_CHECKERS = [
    checks.check_softmax,
    checks.check_attention_one_query,
    checks.check_scaled_dot_product_attention,
    checks.check_causal_mask,
    checks.check_split_heads,
    checks.check_multi_head_attention,
]


@pytest.mark.parametrize("checker", ALL_CHECKERS, ids=lambda c: c.__name__)
def test_a_stub_says_not_implemented_yet(checker):
    def my_function(*args, **kwargs):
        raise NotImplementedError("compute the scores, then ...")

    expected = (
        "my_function is not implemented yet: replace the "
        "`raise NotImplementedError(...)` line with your code"
    )
    with pytest.raises(AssertionError, match=re.escape(expected)):
        checker(my_function)


@pytest.mark.parametrize("checker", ALL_CHECKERS, ids=lambda c: c.__name__)
def test_a_crash_is_reported_with_its_type_message_and_inputs(checker):
    def broken(*args, **kwargs):
        return 1 / 0

    with pytest.raises(AssertionError) as info:
        checker(broken)
    message = str(info.value)
    assert "ZeroDivisionError: division by zero" in message
    assert "inputs: " in message
    assert isinstance(info.value.__cause__, ZeroDivisionError)  # traceback kept


def test_a_crash_names_the_input_shapes():
    def broken(Q, K, V, mask=None, scale=None):
        raise ValueError("boom")

    with pytest.raises(AssertionError, match=re.escape("Q (4, 3), K (6, 3), V (6, 5)")):
        checks.check_scaled_dot_product_attention(broken)


def test_a_missing_argument_quotes_the_signature():
    def no_scale_argument(q, K, V):
        return anp.attention_one_query(q, K, V)

    with pytest.raises(AssertionError, match=re.escape("attention_one_query(q, K, V")):
        checks.check_attention_one_query(no_scale_argument)


def test_something_that_is_not_a_function_is_refused():
    with pytest.raises(AssertionError, match="needs your function itself"):
        checks.check_softmax(anp.softmax(np.zeros(3)))


def test_checkers_leave_the_global_random_state_alone():
    np.random.seed(123)  # noqa: NPY002 (the global state is what is tested)
    before = np.random.random()  # noqa: NPY002
    np.random.seed(123)  # noqa: NPY002
    checks.check_softmax(simple_softmax)
    checks.check_multi_head_attention(loop_mha)
    assert np.random.random() == before  # noqa: NPY002


def test_cases_are_the_same_every_time():
    seen = []

    def recording(x, axis=-1):
        seen.append(x.copy())
        return simple_softmax(x, axis)

    checks.check_softmax(recording)
    first = seen[:]
    seen.clear()
    checks.check_softmax(recording)
    assert len(first) == len(seen) >= 5
    for a, b in zip(first, seen, strict=True):
        np.testing.assert_array_equal(a, b)


def test_cases_cover_the_shapes_the_exercises_promise():
    calls = []

    def recording(Q, K, V, mask=None, scale=None):
        calls.append((Q.shape, K.shape, V.shape, mask, scale))
        return anp.scaled_dot_product_attention(Q, K, V, mask=mask, scale=scale)

    checks.check_scaled_dot_product_attention(recording)
    assert any(q[-2] != k[-2] for q, k, *_ in calls)  # n != m
    assert any(k[-1] != v[-1] for _, k, v, *_ in calls)  # d_k != d_v
    assert any(len(q) == 3 for q, *_ in calls)  # a batch axis
    assert any(s is not None for *_, s in calls)  # an explicit scale
    masks = [mk for *_, mk, _ in calls if mk is not None]
    assert masks and all(mk.dtype == np.bool_ for mk in masks)
    assert any((~mk.any(axis=-1)).any() for mk in masks)  # a fully masked row
