"""check_split_heads and check_multi_head_attention (helpers.checks.heads), lesson 07.

The wrong multi-head attentions come from one reshape-based implementation
with one mistake switched on at a time (``mha_with``), and from a few written
out whole.
"""

import math

import numpy as np
import pytest

from helpers import attention_np as anp
from helpers.checks import CheckFailed, check_multi_head_attention, check_split_heads
from tests.checks.catalogue import (
    right,
    simple_sdpa,
    simple_softmax,
    topic_tests,
    wrong,
)

# --------------------------------------------------------------------------
# Right answers
# --------------------------------------------------------------------------


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
    Q = simple_split(X @ W_Q, num_heads)
    K = simple_split(kv @ W_K, num_heads)
    V = simple_split(kv @ W_V, num_heads)
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    weights = simple_softmax(scores)
    heads = weights @ V  # (batch, H, n, d_k)
    merged = heads.transpose(0, 2, 1, 3).reshape(X.shape)
    return merged @ W_O, weights


def mha_wrong_axis(X, W_Q, W_K, W_V, W_O, num_heads, mask=None, kv=None):
    """The issue's crash: the softmax runs over the queries (axis -2)."""
    source = X if kv is None else kv
    batch, n, d_model = X.shape
    d_k = d_model // num_heads

    def split(t):
        return t.reshape(batch, t.shape[1], num_heads, d_k).transpose(0, 2, 1, 3)

    s = split(X @ W_Q) @ np.swapaxes(split(source @ W_K), -1, -2) / math.sqrt(d_k)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = anp.softmax(s, axis=-2)
    merged = (w @ split(source @ W_V)).transpose(0, 2, 1, 3).reshape(batch, n, d_model)
    return merged @ W_O, w


def stacked_split(x, num_heads):
    """The heads' column blocks, stacked along a new axis 1."""
    d_k = x.shape[-1] // num_heads
    return np.stack([x[..., h * d_k : (h + 1) * d_k] for h in range(num_heads)], 1)


def mha_by_hand(X, W_Q, W_K, W_V, W_O, num_heads, mask=None, kv=None):
    """The batched form, written out (the course's helpers are refused)."""
    kv = X if kv is None else kv
    batch, n, d_model = X.shape
    Q, K, V = (stacked_split(t, num_heads) for t in (X @ W_Q, kv @ W_K, kv @ W_V))
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(d_model // num_heads)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = anp.softmax(scores)  # allowed by the exercise
    merged = np.concatenate(list(np.moveaxis(weights @ V, 1, 0)), axis=-1)
    return merged @ W_O, weights


def split_with_helper(x, num_heads):
    return anp.split_heads(x, num_heads)


def mha_with_helper(X, W_Q, W_K, W_V, W_O, num_heads, mask=None, kv=None):
    return anp.multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads, mask, kv)


def mha_with_merge_helper(X, W_Q, W_K, W_V, W_O, num_heads, mask=None, kv=None):
    kv = X if kv is None else kv
    Q, K, V = (simple_split(t, num_heads) for t in (X @ W_Q, kv @ W_K, kv @ W_V))
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = anp.softmax(scores)
    return anp.merge_heads(weights @ V) @ W_O, weights


def mha_values_from_x(X, W_Q, W_K, W_V, W_O, num_heads, mask=None, kv=None):
    source = X if kv is None else kv
    Q = simple_split(X @ W_Q, num_heads)
    K = simple_split(source @ W_K, num_heads)
    V = simple_split(X @ W_V, num_heads)
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = anp.softmax(scores)
    merged = (weights @ V).transpose(0, 2, 1, 3).reshape(X.shape)
    return merged @ W_O, weights


def mha_flipped_mask(X, W_Q, W_K, W_V, W_O, num_heads, mask=None, kv=None):
    kv = X if kv is None else kv
    Q, K, V = (simple_split(t, num_heads) for t in (X @ W_Q, kv @ W_K, kv @ W_V))
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    weights = anp.softmax(scores)
    merged = (weights @ V).transpose(0, 2, 1, 3).reshape(X.shape)
    return merged @ W_O, weights


def mha_kv_overwritten(X, W_Q, W_K, W_V, W_O, num_heads, mask=None, kv=None):
    kv = X
    Q, K, V = (simple_split(t, num_heads) for t in (X @ W_Q, kv @ W_K, kv @ W_V))
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = anp.softmax(scores)
    merged = (weights @ V).transpose(0, 2, 1, 3).reshape(X.shape)
    return merged @ W_O, weights


RIGHT = [
    right(check_split_heads, stacked_split, id="split-stacked"),
    right(check_split_heads, simple_split, id="split-simple"),
    right(check_multi_head_attention, mha_by_hand, id="mha-by-hand"),
    right(check_multi_head_attention, loop_mha, id="mha-loop"),
]

WRONG = [
    *wrong(
        check_split_heads,
        [
            (split_no_transpose, "without the transpose"),
            (split_interleaved, "heads are interleaved"),
            (split_forgot_transpose_shape, "should be (batch, num_heads, n, d_k)"),
            (split_wrong_axes, "has shape (2, 3, 4, 5) = (batch, num_heads, d_k, n)"),
            (split_with_helper, "you called anp.split_heads"),
        ],
    ),
    *wrong(
        check_multi_head_attention,
        [
            (
                mha_with(divide_by="sqrt_d_model"),
                "scaled the scores by sqrt(d_model)",
            ),
            (mha_with(divide_by="d_model"), "divided the scores by d_model"),
            (mha_with(divide_by="d_k"), "not its square root"),
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
            (mha_wrong_axis, "columns sum to 1"),  # issue 11.12: its crash, named
            (mha_with_helper, "you called anp.multi_head_attention"),
            (mha_with_merge_helper, "you called anp.merge_heads"),
            (mha_values_from_x, "your keys come from kv but your values from X"),
        ],
    ),
]

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


def test_the_second_message_keeps_the_ellipsis():
    from helpers import checks

    for _ in range(2):
        with pytest.raises(CheckFailed) as info:
            checks.check_split_heads(split_interleaved)
    assert "h + 2 * num_heads, ... of each token. Why:" in str(info.value)


def test_the_ellipsis_survives_a_second_failure_of_any_symptom():
    ending = ck_mistake("features h, h + 2, ...")
    err = CheckFailed("check_x", ending)
    err.show(2)
    assert err.diagnosis == "features h, h + 2, ... Why: w"
    plain = CheckFailed("check_x", ck_mistake("a symptom."))
    plain.show(2)
    assert plain.diagnosis == "a symptom. Why: w"


def ck_mistake(symptom):
    from helpers.checks import _engine as ck

    return ck.Mistake(symptom=symptom, why="w", fix="f")


@pytest.mark.parametrize(
    ("fn", "line"),
    [
        (mha_flipped_mask, "scores = np.where(mask, -np.inf, scores)"),
        (mha_kv_overwritten, "kv = X"),
        (mha_values_from_x, "V = simple_split(X @ W_V, num_heads)"),
        (mha_with_helper, "return anp.multi_head_attention("),
        (split_with_helper, "return anp.split_heads(x, num_heads)"),
    ],
)
def test_look_at_quotes_the_line_that_holds_the_mistake(fn, line):
    checker = (
        check_split_heads if fn is split_with_helper else check_multi_head_attention
    )
    with pytest.raises(CheckFailed) as info:
        checker(fn)
    assert line in info.value.where
    assert "Refused" not in str(info.value)


def test_the_helpers_are_back_after_a_refusal():
    with pytest.raises(CheckFailed):
        check_multi_head_attention(mha_with_helper)
    assert anp.merge_heads.__module__ == "helpers.attention_np"
    assert anp.split_heads(np.zeros((1, 2, 4)), 2).shape == (1, 2, 2, 2)
