"""Lesson 09's build checker (helpers.checks.recall) against wrong answers.

``check_recall_attention``, the model's attention layer with several heads
written by hand, is tested against right answers (vectorised, and one head and
one memory at a time), learner-style wrong ones, and answers that call the
course's attention helpers, which the exercise refuses.
"""

import math

import numpy as np
import pytest

from helpers import attention_np as anp
from helpers import checks
from helpers.attention_np import scaled_dot_product_attention
from helpers.checks import CheckFailed, _hints
from tests.checks.catalogue import right, topic_tests, wrong

# --------------------------------------------------------------------------
# 9.4: the multi-head recall layer
# --------------------------------------------------------------------------


def _softmax(scores):
    top = scores.max(-1, keepdims=True)
    e = np.exp(scores - top)
    return e / e.sum(-1, keepdims=True)


def recall_right(memory, asked, W_Q, W_K, W_V, num_heads, lengths):
    batch, m, _ = memory.shape
    n = asked.shape[1]

    def split(x):  # (batch, t, H d) -> (batch, H, t, d)
        return x.reshape(batch, x.shape[1], num_heads, -1).transpose(0, 2, 1, 3)

    Q, K, V = split(asked @ W_Q), split(memory @ W_K), split(memory @ W_V)
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])  # (b, H, n, m)
    real = np.arange(m)[None, :] < lengths[:, None]  # (batch, m)
    weights = _softmax(np.where(real[:, None, None, :], scores, -np.inf))
    y = (weights @ V).transpose(0, 2, 1, 3).reshape(batch, n, -1)
    return y, weights


def recall_loop(memory, asked, W_Q, W_K, W_V, num_heads, lengths):
    # one head and one memory at a time
    batch, m, _ = memory.shape
    d_k, d_v = W_Q.shape[1] // num_heads, W_V.shape[1] // num_heads
    ys, ws = [], []
    for b in range(batch):
        heads, weights = [], []
        for h in range(num_heads):
            q = asked[b] @ W_Q[:, h * d_k : (h + 1) * d_k]
            k = memory[b, : lengths[b]] @ W_K[:, h * d_k : (h + 1) * d_k]
            v = memory[b, : lengths[b]] @ W_V[:, h * d_v : (h + 1) * d_v]
            w = _softmax(q @ k.T / math.sqrt(d_k))
            heads.append(w @ v)
            weights.append(np.pad(w, ((0, 0), (0, m - lengths[b]))))
        ys.append(np.concatenate(heads, axis=-1))
        ws.append(np.stack(weights))
    return np.stack(ys), np.stack(ws)


def _variant(**change):
    def my_recall_attention(memory, asked, W_Q, W_K, W_V, num_heads, lengths):
        batch, m, _ = memory.shape
        n = asked.shape[1]

        def split(x):
            if change.get("split") == "reshape":
                return x.reshape(batch, num_heads, x.shape[1], -1)
            return x.reshape(batch, x.shape[1], num_heads, -1).transpose(0, 2, 1, 3)

        Q, K, V = split(asked @ W_Q), split(memory @ W_K), split(memory @ W_V)
        d = W_Q.shape[1] if change.get("scale") == "width" else Q.shape[-1]
        scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(d)
        slots = np.arange(m)[None, :]
        real = (
            slots <= lengths[:, None]
            if change.get("mask") == "<="
            else (slots < lengths[:, None])
        )
        if change.get("mask") == "none":
            weights = _softmax(scores)
        elif change.get("mask") == "after":
            weights = _softmax(scores) * real[:, None, None, :]
        elif change.get("mask") == "times":
            weights = _softmax(scores * real[:, None, None, :])
        elif change.get("mask") in (">=", ">=-1e9"):
            pad = slots >= lengths[:, None]  # True on the padding: flipped
            fill = -1e9 if change["mask"] == ">=-1e9" else -np.inf
            weights = _softmax(np.where(pad[:, None, None, :], scores, fill))
        else:
            weights = _softmax(np.where(real[:, None, None, :], scores, -np.inf))
        heads = weights @ V
        if change.get("merge") == "reshape":
            return heads.reshape(batch, n, -1), weights
        return heads.transpose(0, 2, 1, 3).reshape(batch, n, -1), weights

    return my_recall_attention


RIGHT = [
    right(checks.check_recall_attention, recall_right),
    right(checks.check_recall_attention, recall_loop),
]

WRONG = wrong(
    checks.check_recall_attention,
    [
        (_variant(scale="width"), "full width", "scale-width"),
        (_variant(mask="none"), "padding was not masked", "no-mask"),
        (_variant(mask="<="), "see one padding slot", "off-by-one"),
        (_variant(mask="after"), "after the softmax", "mask-after"),
        (_variant(mask=">="), "your mask blocks the real slots", "flipped-inf"),
        (_variant(mask=">=-1e9"), "your mask blocks the real slots", "flipped-1e9"),
        (_variant(mask="times"), "multiplied by the 0/1 mask", "times-mask"),
        (_variant(split="reshape"), "without moving the heads axis", "split"),
        (_variant(merge="reshape"), "merged with a reshape alone", "merge"),
    ],
)

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


def test_a_recall_mistake_is_told_in_steps(capsys):
    _hints.reset()
    fn = _variant(scale="width")
    with pytest.raises(CheckFailed) as first:
        checks.check_recall_attention(fn)
    fix = first.value.mistake.fix
    assert "full width" in first.value.diagnosis and fix not in str(first.value)
    with pytest.raises(CheckFailed, match="Why: each head's score"):
        checks.check_recall_attention(fn)
    checks.hint("recall_attention")
    assert f"Fix: {fix}" in capsys.readouterr().out
    _hints.reset()


def recall_with_helpers(memory, asked, W_Q, W_K, W_V, num_heads, lengths):
    m = memory.shape[1]
    Q = anp.split_heads(asked @ W_Q, num_heads)  # (batch, H, n, d_k)
    K = anp.split_heads(memory @ W_K, num_heads)  # (batch, H, m, d_k)
    V = anp.split_heads(memory @ W_V, num_heads)  # (batch, H, m, d_v)
    real = np.arange(m)[None, :] < lengths[:, None]  # (batch, m)
    y, weights = anp.scaled_dot_product_attention(Q, K, V, mask=real[:, None, None])
    return anp.merge_heads(y), weights


def recall_with_imported_sdpa(memory, asked, W_Q, W_K, W_V, num_heads, lengths):
    batch, m, _ = memory.shape

    def split(x):
        return x.reshape(batch, x.shape[1], num_heads, -1).transpose(0, 2, 1, 3)

    real = np.arange(m)[None, :] < lengths[:, None]  # (batch, m)
    heads, weights = scaled_dot_product_attention(
        split(asked @ W_Q),
        split(memory @ W_K),
        split(memory @ W_V),
        real[:, None, None],
    )
    return heads.transpose(0, 2, 1, 3).reshape(batch, asked.shape[1], -1), weights


def test_the_course_helpers_are_refused_and_named():
    originals = {n: getattr(anp, n) for n in dir(anp)}
    _hints.reset()
    with pytest.raises(CheckFailed) as info:
        checks.check_recall_attention(recall_with_helpers)
    err = info.value
    for name in ("split_heads", "scaled_dot_product_attention", "merge_heads"):
        assert f"`anp.{name}`" in err.diagnosis
    assert "written by hand" in err.diagnosis
    assert "anp.split_heads(asked @ W_Q" in err.where  # the learner's line
    assert "np.arange(m)" in err.mistake.fix and err.mistake.fix not in str(err)
    with pytest.raises(CheckFailed, match="Why: 9.4 is the build"):
        checks.check_recall_attention(recall_with_helpers)
    # a name imported from the module is caught too, under its own name
    with pytest.raises(CheckFailed, match="`scaled_dot_product_attention`"):
        checks.check_recall_attention(recall_with_imported_sdpa)
    # and everything is put back, whatever happened
    assert {n: getattr(anp, n) for n in dir(anp)} == originals
    assert scaled_dot_product_attention is originals["scaled_dot_product_attention"]
    assert globals()["scaled_dot_product_attention"] is scaled_dot_product_attention
    _hints.reset()


def test_the_helpers_are_restored_when_the_layer_raises():
    originals = {n: getattr(anp, n) for n in dir(anp)}

    def crashes(memory, *rest):
        anp.softmax(memory)
        raise ValueError("boom")

    with pytest.raises(CheckFailed, match="raised ValueError"):
        checks.check_recall_attention(crashes)
    assert {n: getattr(anp, n) for n in dir(anp)} == originals
