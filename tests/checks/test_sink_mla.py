"""check_sink_attention and check_mla_absorption (helpers.checks.sink_mla).

Lesson 13's exercises 13.2 and 13.3. Each wrong answer is written the way a
learner would write it; the checker must reject it with its diagnosis (a keyword
of the symptom). Handing back the checker's reference (kv_cache.sink_attention,
kv_cache.absorb), as an object, a partial or a function that calls it, is
refused too.
"""

import functools
import math

import numpy as np

from helpers import attention_np as anp
from helpers import kv_cache
from helpers.checks import check_mla_absorption, check_sink_attention
from tests.checks.catalogue import right, topic_tests, wrong

# --------------------------------------------------------------------------
# 13.2: the sink logit
# --------------------------------------------------------------------------


def sink_right(Q, K, V, sink, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])  # (..., n, m)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    sink = np.asarray(sink, dtype=float)[..., None, None]  # (..., 1, 1)
    top = np.maximum(scores.max(axis=-1, keepdims=True), sink)
    e = np.exp(scores - top)
    weights = e / (e.sum(axis=-1, keepdims=True) + np.exp(sink - top))
    return weights @ V, weights


def sink_by_concatenation(Q, K, V, sink, mask=None):
    """As gpt-oss writes it: a sink column, a softmax, the column dropped."""
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])  # (..., n, m)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    column = np.broadcast_to(
        np.asarray(sink, dtype=float)[..., None, None], scores.shape[:-1] + (1,)
    )
    weights = anp.softmax(np.concatenate([scores, column], axis=-1))[..., :-1]
    return weights @ V, weights


def sink_masked_after_exp(Q, K, V, sink, mask=None):
    """Zeroes the masked exponentials instead of the scores: also right."""
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    keep = np.ones(scores.shape, dtype=bool) if mask is None else mask
    scores = np.where(keep, scores, -1e9)  # finite, so the max is finite too
    sink = np.asarray(sink, dtype=float)[..., None, None]
    top = np.maximum(scores.max(axis=-1, keepdims=True), sink)
    e = np.where(keep, np.exp(scores - top), 0.0)
    weights = e / (e.sum(axis=-1, keepdims=True) + np.exp(sink - top))
    return weights @ V, weights


def sink_ignored(Q, K, V, sink, mask=None):
    return anp.scaled_dot_product_attention(Q, K, V, mask=mask)


def sink_not_exponentiated(Q, K, V, sink, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    sink = np.asarray(sink, dtype=float)[..., None, None]
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - top)
    weights = e / (e.sum(axis=-1, keepdims=True) + sink)
    return weights @ V, weights


def sink_naive(Q, K, V, sink, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    e = np.exp(scores)
    sink = np.asarray(sink, dtype=float)[..., None, None]
    weights = e / (e.sum(axis=-1, keepdims=True) + np.exp(sink))
    return weights @ V, weights


def sink_unshifted(Q, K, V, sink, mask=None):
    """Shifts the scores by the row max, adds exp(sink) as it is."""
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    sink = np.asarray(sink, dtype=float)[..., None, None]
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / (e.sum(axis=-1, keepdims=True) + np.exp(sink))
    return weights @ V, weights


def sink_unshifted_top_with_sink(Q, K, V, sink, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    sink = np.asarray(sink, dtype=float)[..., None, None]
    top = np.maximum(scores.max(axis=-1, keepdims=True), sink)
    e = np.exp(scores - top)
    weights = e / (e.sum(axis=-1, keepdims=True) + np.exp(sink))
    return weights @ V, weights


def sink_sign_flipped(Q, K, V, sink, mask=None):
    return sink_right(Q, K, V, -np.asarray(sink, dtype=float), mask)


def sink_shift_flipped(Q, K, V, sink, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    sink = np.asarray(sink, dtype=float)[..., None, None]
    top = np.maximum(scores.max(axis=-1, keepdims=True), sink)
    e = np.exp(scores - top)
    weights = e / (e.sum(axis=-1, keepdims=True) + np.exp(top - sink))
    return weights @ V, weights


def sink_unscaled(Q, K, V, sink, mask=None):
    return sink_right(Q * math.sqrt(Q.shape[-1]), K, V, sink, mask)


def sink_column_kept(Q, K, V, sink, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    column = np.broadcast_to(
        np.asarray(sink, dtype=float)[..., None, None], scores.shape[:-1] + (1,)
    )
    weights = anp.softmax(np.concatenate([scores, column], axis=-1))
    return weights[..., :-1] @ V, weights


def sink_mask_ignored(Q, K, V, sink, mask=None):
    return sink_right(Q, K, V, sink)


def sink_mask_after(Q, K, V, sink, mask=None):
    _, weights = sink_right(Q, K, V, sink)
    if mask is not None:
        weights = weights * mask
    return weights @ V, weights


def sink_top_of_scores(Q, K, V, sink, mask=None):
    """The max of the scores alone: -inf in a row whose keys are all masked."""
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    sink = np.asarray(sink, dtype=float)[..., None, None]
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - top)
    weights = e / (e.sum(axis=-1, keepdims=True) + np.exp(sink - top))
    return weights @ V, weights


def sink_one_axis(Q, K, V, sink, mask=None):
    """A per-head sink given one new axis, (num_heads, 1): it meets the n axis."""
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    sink = np.asarray(sink, dtype=float)[..., None]
    top = np.maximum(scores.max(axis=-1, keepdims=True), sink)
    e = np.exp(scores - top)
    weights = e / (e.sum(axis=-1, keepdims=True) + np.exp(sink - top))
    return weights @ V, weights


def sink_by_reference(Q, K, V, sink, mask=None):
    return kv_cache.sink_attention(Q, K, V, sink, mask=mask)


# --------------------------------------------------------------------------
# 13.3: MLA absorption
# --------------------------------------------------------------------------


def absorb_right(W_Q, W_UK, W_UV, W_O, num_heads):
    H = num_heads
    W_QK, W_VO = [], []
    d_k, d_v = W_Q.shape[1] // H, W_UV.shape[1] // H
    for h in range(H):
        q_cols, v_cols = slice(h * d_k, (h + 1) * d_k), slice(h * d_v, (h + 1) * d_v)
        W_QK.append(W_Q[:, q_cols] @ W_UK[:, q_cols].T)  # (d_model, d_c)
        W_VO.append(W_UV[:, v_cols] @ W_O[v_cols])  # (d_c, d_model)
    return np.stack(W_QK), np.stack(W_VO)


def absorb_swapped(W_Q, W_UK, W_UV, W_O, num_heads):
    return absorb_right(W_Q, W_UV, W_UK, W_O, num_heads)


def absorb_mixed_heads(W_Q, W_UK, W_UV, W_O, num_heads):
    _, W_VO = absorb_right(W_Q, W_UK, W_UV, W_O, num_heads)
    return np.stack([W_Q @ W_UK.T] * num_heads), W_VO


def absorb_transposed(W_Q, W_UK, W_UV, W_O, num_heads):
    W_QK, W_VO = absorb_right(W_Q, W_UK, W_UV, W_O, num_heads)
    return W_QK.transpose(0, 2, 1), W_VO


def absorb_interleaved(W_Q, W_UK, W_UV, W_O, num_heads):
    H = num_heads
    W_QK = np.stack([W_Q[:, h::H] @ W_UK[:, h::H].T for h in range(H)])
    W_VO = np.stack([W_UV[:, h::H] @ W_O[h::H] for h in range(H)])
    return W_QK, W_VO


def absorb_vo_rows(W_Q, W_UK, W_UV, W_O, num_heads):
    H = num_heads
    W_QK, _ = absorb_right(W_Q, W_UK, W_UV, W_O, H)
    d_v = W_UV.shape[1] // H
    W_VO = [W_UV[:, h * d_v : (h + 1) * d_v] @ W_O[h::H] for h in range(H)]
    return W_QK, np.stack(W_VO)


def absorb_vo_columns(W_Q, W_UK, W_UV, W_O, num_heads):
    """Takes head h's block of W_O's columns, transposed to fit the shapes."""
    H = num_heads
    W_QK, _ = absorb_right(W_Q, W_UK, W_UV, W_O, H)
    d_v = W_UV.shape[1] // H
    blocks = [W_O[:, h * d_v : (h + 1) * d_v].T for h in range(H)]  # (d_v, H d_v)
    W_VO = [W_UV[:, h * d_v : (h + 1) * d_v] @ blocks[h] for h in range(H)]
    return W_QK, np.stack(W_VO)


def absorb_no_transpose(W_Q, W_UK, W_UV, W_O, num_heads):
    """Reshapes (rows, H d) straight to (H, rows, d): blocks of rows, not heads."""
    H = num_heads
    W_Q_h = W_Q.reshape(H, W_Q.shape[0], -1)  # (H, d_model, d_k)
    W_UK_h = W_UK.reshape(H, W_UK.shape[0], -1)  # (H, d_c, d_k)
    W_UV_h = W_UV.reshape(H, W_UV.shape[0], -1)  # (H, d_c, d_v)
    W_O_h = W_O.reshape(H, -1, W_O.shape[1])  # (H, d_v, d_model)
    return W_Q_h @ W_UK_h.transpose(0, 2, 1), W_UV_h @ W_O_h


def absorb_by_reference(W_Q, W_UK, W_UV, W_O, num_heads):
    return kv_cache.absorb(W_Q, W_UK, W_UV, W_O, num_heads)


RIGHT = [
    right(check_sink_attention, sink_right),
    right(check_sink_attention, sink_by_concatenation),
    right(check_sink_attention, sink_masked_after_exp),
    right(check_mla_absorption, absorb_right),
]

REFERENCE = "the checker's reference"

WRONG = [
    *wrong(
        check_sink_attention,
        [
            (sink_ignored, "sum to exactly 1"),
            (sink_not_exponentiated, "logit itself"),
            (sink_naive, "nan or inf"),
            (sink_unscaled, "unscaled"),
            (sink_unshifted, "unshifted"),
            (sink_unshifted_top_with_sink, "unshifted"),
            (sink_sign_flipped, "opposite sign"),
            (sink_shift_flipped, "opposite sign"),
            (sink_mask_ignored, "the mask was not applied"),
            (sink_mask_after, "not renormalised"),
            (sink_top_of_scores, "all masked your weights are nan"),
            (sink_one_axis, "does not line up with the heads axis"),
            (sink_column_kept, "has shape"),
            (kv_cache.sink_attention, REFERENCE, "kv_cache.sink_attention"),
            (functools.partial(kv_cache.sink_attention), REFERENCE, "partial_sink"),
            (sink_by_reference, REFERENCE),
        ],
    ),
    *wrong(
        check_mla_absorption,
        [
            (absorb_swapped, "wrong side"),
            (absorb_mixed_heads, "every head"),
            (absorb_transposed, "transposed"),
            (absorb_interleaved, "every H-th"),
            (absorb_vo_rows, "wrong rows"),
            (absorb_vo_columns, "from its columns"),
            (absorb_no_transpose, "a block of rows"),
            (kv_cache.absorb, REFERENCE, "kv_cache.absorb"),
            (functools.partial(kv_cache.absorb), REFERENCE, "partial_absorb"),
            (absorb_by_reference, REFERENCE),
        ],
    ),
]

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


def test_known_mistakes_are_written_in_three_steps():
    from helpers.checks import ring_buffer, sink_mla, sliding_window

    for module, least in ((sliding_window, 12), (ring_buffer, 11), (sink_mla, 12)):
        mistakes = [
            value
            for name, value in vars(module).items()
            if name.startswith("_") and isinstance(value, sink_mla.ck.Mistake)
        ]
        assert len(mistakes) >= least, module.__name__
        for mistake in mistakes:
            assert mistake.symptom and mistake.why and mistake.fix
            assert mistake.fix not in mistake.symptom
            assert "np." not in mistake.symptom and "= " not in mistake.symptom
