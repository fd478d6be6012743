"""The attention checkers (helpers.checks.attention), lessons 01 and 02.

check_attention_one_query, check_attention, check_scaled_dot_product_attention
and check_shuffle_keys_and_values. Every wrong implementation here is written
the way a learner might write it, independently of the variants inside the
checkers; each must be rejected with a message that names the mistake.
"""

import math

import numpy as np
import pytest

from helpers import attention_np as anp
from helpers.checks import (
    CheckFailed,
    check_attention,
    check_attention_one_query,
    check_scaled_dot_product_attention,
    check_shuffle_keys_and_values,
)
from tests.checks.catalogue import (
    right,
    simple_sdpa,
    simple_softmax,
    stable_rows,
    topic_tests,
    wrong,
)

# --------------------------------------------------------------------------
# Right answers
# --------------------------------------------------------------------------


def simple_one_query(q, K, V, scale=None):
    scale = 1 / math.sqrt(len(q)) if scale is None else scale
    scores = np.array([np.dot(q, k) * scale for k in K])  # (m,)
    exps = np.exp(scores)
    Z = exps.sum()
    y = sum(e / Z * v for e, v in zip(exps, V, strict=True))  # (d_v,)
    return y, exps / Z, Z


def attention(Q, K, V):
    w = simple_softmax(Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1]))
    return w @ V, w


def shuffle(K, V, rng):
    perm = rng.permutation(len(K))
    return K[perm], V[perm], perm


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


def one_query_divides_by_scale(q, K, V, scale=None):
    scale = math.sqrt(len(q)) if scale is None else scale
    return one_query(q, K, V, 1 / scale)  # scores / scale


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


def one_query_sqrt_d_v(q, K, V, scale=None):
    scale = 1 / math.sqrt(V.shape[1]) if scale is None else scale
    w = simple_softmax(K @ q * scale)
    return w @ V, w, np.exp(K @ q * scale).sum()


# --------------------------------------------------------------------------
# attention (lesson 02 exercise 1: scale and batch axes only): wrong answers
# --------------------------------------------------------------------------


def attention_columns(Q, K, V):
    s = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    e = np.exp(s - s.max(axis=-2, keepdims=True))
    w = e / e.sum(axis=-2, keepdims=True)
    return w @ V, w


def attention_np_sqrt(Q, K, V):
    """Right in float64; np.sqrt turns float32 inputs into float64 (NumPy 2)."""
    w = simple_softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))
    return w @ V, w


def attention_sqrt_d_v(Q, K, V):
    w = simple_softmax(Q @ np.swapaxes(K, -1, -2) / math.sqrt(V.shape[-1]))
    return w @ V, w


def attention_K_T(Q, K, V):
    w = simple_softmax(Q @ K.T / math.sqrt(Q.shape[-1]))
    return w @ V, w


def attention_unscaled(Q, K, V):
    w = simple_softmax(Q @ np.swapaxes(K, -1, -2))
    return w @ V, w


def attention_times_sqrt(Q, K, V):
    w = simple_softmax(Q @ np.swapaxes(K, -1, -2) * math.sqrt(Q.shape[-1]))
    return w @ V, w


def attention_sqrt_n(Q, K, V):
    w = simple_softmax(Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-2]))
    return w @ V, w


def attention_no_exp(Q, K, V):
    s = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    w = s / s.sum(axis=-1, keepdims=True)
    return w @ V, w


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


def sdpa_divides_by_scale(Q, K, V, mask=None, scale=None):
    scale = math.sqrt(Q.shape[-1]) if scale is None else scale
    return sdpa(Q, K, V, mask, 1 / scale)  # scores / scale


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


def sdpa_sqrt_d_v(Q, K, V, mask=None, scale=None):
    scale = 1 / math.sqrt(V.shape[-1]) if scale is None else scale
    return simple_sdpa(Q, K, V, mask=mask, scale=scale)


def sdpa_calls_the_helper(Q, K, V, mask=None, scale=None):
    return anp.scaled_dot_product_attention(Q, K, V, mask=mask, scale=scale)


def sdpa_helper_softmax(Q, K, V, mask=None, scale=None):
    scale = 1 / math.sqrt(Q.shape[-1]) if scale is None else scale
    scores = Q @ np.swapaxes(K, -1, -2) * scale
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = anp.softmax(scores)
    return weights @ V, weights


def one_query_loops_the_helper(q, K, V, scale=None):
    return anp.attention_one_query(q, K, V, scale=scale)


def attention_calls_the_helper(Q, K, V):
    return anp.scaled_dot_product_attention(Q, K, V)


def shuffle_values_only(K, V, rng):
    perm = rng.permutation(len(K))
    return K, V[perm], perm


def sdpa_global_max(Q, K, V, mask=None, scale=None):
    scale = 1 / math.sqrt(Q.shape[-1]) if scale is None else scale
    s = Q @ np.swapaxes(K, -1, -2) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max())
    total = e.sum(axis=-1, keepdims=True)
    w = e / np.where(total == 0, 1, total)
    return w @ V, w


# --------------------------------------------------------------------------
# shuffle_keys_and_values (lesson 02 exercise 3): wrong answers
# --------------------------------------------------------------------------


def shuffle_keys_only(K, V, rng):
    perm = rng.permutation(len(K))
    return K[perm], V, perm


def shuffle_two_perms(K, V, rng):
    perm = rng.permutation(len(K))
    return K[perm], V[rng.permutation(len(V))], perm


def shuffle_in_place(K, V, rng):
    perm = rng.permutation(len(K))
    K[:] = K[perm]
    V[:] = V[perm]
    return K, V, perm


RIGHT = [
    right(check_attention_one_query, anp.attention_one_query, id="one-helper"),
    right(check_attention_one_query, simple_one_query, id="one-simple"),
    right(check_attention, attention),
    right(
        check_scaled_dot_product_attention,
        anp.scaled_dot_product_attention,
        id="sdpa-helper",
    ),
    right(check_scaled_dot_product_attention, simple_sdpa, id="sdpa-simple"),
    right(check_shuffle_keys_and_values, shuffle),
]

WRONG = [
    *wrong(
        check_attention_one_query,
        [
            (one_query_no_scale, "scores are not scaled"),
            (one_query_divides_by_d_k, "divided the scores by d_k"),
            (one_query_ignores_scale, "ignored the `scale` argument"),
            (one_query_divides_by_scale, "divided the scores by `scale`"),
            (one_query_no_normaliser, "forgot the 1/Z"),
            (one_query_y_without_1_over_z, "forgot the 1/Z in"),
            (one_query_shifted_z, "after subtracting the max"),
            (one_query_z_is_weight_sum, "your Z is 1"),
            (one_query_z_of_scores, "y and weights are right but Z is"),
            (one_query_y_per_key, "instead of over the keys"),
            (one_query_sums_keys, "keys K instead of the values V"),
            (one_query_swapped, "return them in the order (y, weights, Z)"),
            (one_query_returns_y_only, "it must return 3 values"),
            (one_query_sqrt_d_v, "sqrt(d_v)"),  # issue 11.13, in the older checkers
            (one_query_loops_the_helper, "you called anp.attention_one_query"),
        ],
    ),
    *wrong(
        check_attention,
        [
            # lesson 02 exercise 1: scale and batch axes only
            (attention_columns, "columns sum to 1"),
            (attention_sqrt_d_v, "sqrt(d_v)"),
            (attention_K_T, "only the last two axes of K trade places"),
            (attention_unscaled, "not scaled"),
            (attention_np_sqrt, "turned them into float64"),
            # slips inside the formula
            (attention_times_sqrt, "multiplied the scores by sqrt"),
            (attention_sqrt_n, "number of queries"),
            (attention_no_exp, "forgot np.exp"),
            (attention_calls_the_helper, "you called anp.scaled_dot_product_attention"),
        ],
    ),
    *wrong(
        check_scaled_dot_product_attention,
        [
            (sdpa_axis_0, "columns sum to 1, not its rows"),
            (sdpa_axis_1, "columns sum to 1, not its rows"),
            (sdpa_batch_axis, "the batch axis"),
            (sdpa_no_scale, "scores are not scaled"),
            (sdpa_divides_by_d_k, "divided the scores by d_k"),
            (sdpa_ignores_scale, "ignored the `scale` argument"),
            (sdpa_divides_by_scale, "divided the scores by `scale`"),
            (sdpa_values_first, "order of the matrix products"),
            (sdpa_k_not_transposed, "order of the matrix products"),
            (sdpa_k_dot_t, "only the last two axes of K trade places"),
            (sdpa_transposed_output, "output is transposed"),
            (sdpa_swapped_outputs, "return them in the order (output, weights)"),
            (sdpa_mask_after_softmax, "applied the mask after the softmax"),
            (sdpa_mask_after_renormalised, "fully masked row"),
            (sdpa_flipped_mask, "mask polarity is flipped"),
            (sdpa_flipped_mask_nan, "mask polarity is flipped"),
            (sdpa_mask_added, "added the boolean mask"),
            (sdpa_additive_convention, "mask polarity is flipped"),
            (sdpa_minus_1e9, "spreads the weight evenly (1/m each)"),
            (sdpa_no_max, "nan or inf for large scores"),
            (
                sdpa_fully_masked_nan,
                "a fully masked row (a query that may attend to no key) gives nan",
            ),
            (sdpa_mask_ignored, "the mask was not applied"),
            # issue 11.13: sqrt(d_v) and the global max in the older checkers
            (sdpa_sqrt_d_v, "sqrt(d_v)"),
            (sdpa_global_max, "whole array"),
            (sdpa_calls_the_helper, "you called anp.scaled_dot_product_attention"),
            (sdpa_helper_softmax, "you called anp.softmax"),
        ],
    ),
    *wrong(
        check_shuffle_keys_and_values,
        [
            # lesson 02 exercise 3
            (shuffle_keys_only, "not the values"),
            (shuffle_two_perms, "second permutation"),
            (shuffle_in_place, "in place"),
            (shuffle_values_only, "the values but not the keys"),
        ],
    ),
]

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


def test_cases_cover_the_shapes_the_exercises_promise():
    calls = []

    def recording(Q, K, V, mask=None, scale=None):
        calls.append((Q.shape, K.shape, V.shape, mask, scale))
        return simple_sdpa(Q, K, V, mask=mask, scale=scale)

    check_scaled_dot_product_attention(recording)
    assert any(q[-2] != k[-2] for q, k, *_ in calls)  # n != m
    assert any(k[-1] != v[-1] for _, k, v, *_ in calls)  # d_k != d_v
    assert any(len(q) == 3 for q, *_ in calls)  # a batch axis
    assert any(s is not None for *_, s in calls)  # an explicit scale
    masks = [mk for *_, mk, _ in calls if mk is not None]
    assert masks and all(mk.dtype == np.bool_ for mk in masks)
    assert any((~mk.any(axis=-1)).any() for mk in masks)  # a fully masked row


def test_a_mask_mistake_points_at_the_line_that_uses_the_mask():
    """Not at the `if mask is not None:` above it (learner report 0003)."""
    for fn in (sdpa_flipped_mask_nan, sdpa_mask_after_softmax):
        with pytest.raises(CheckFailed) as info:
            check_scaled_dot_product_attention(fn)
        look = str(info.value).split("Look at:")[1].splitlines()[0]
        assert "mask" in look and "if mask" not in look, look
