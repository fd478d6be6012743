"""The checkers of lesson 13 (helpers.checks.kv_cache) against wrong answers.

Each wrong answer is written the way a learner would write it; the checker must
reject it with its diagnosis (a keyword of the symptom) and accept the right
answers: ``RIGHT_ANSWERS`` holds (checker, fns), ``WRONG_ANSWERS`` (checker, fns,
says). This file runs its own two tests over them.
"""

import math
import re

import numpy as np
import pytest

from helpers import attention_np as anp
from helpers import checks
from helpers.checks import CheckFailed

# --------------------------------------------------------------------------
# 13.1: the sliding-window mask
# --------------------------------------------------------------------------


def mask_right(n, m, window):
    i = np.arange(n)[:, None] + (m - n)  # absolute position of each query
    j = np.arange(m)[None, :]
    return (i - j >= 0) & (i - j < window)


def mask_tril_triu(n, m, window):
    ones = np.ones((n, m), dtype=bool)
    return np.tril(ones, k=m - n) & np.triu(ones, k=m - n - window + 1)


def mask_plus_one(n, m, window):
    i, j = np.arange(n)[:, None] + (m - n), np.arange(m)[None, :]
    return (i - j >= 0) & (i - j <= window)


def mask_minus_one(n, m, window):
    i, j = np.arange(n)[:, None] + (m - n), np.arange(m)[None, :]
    return (j <= i) & (j > i - window + 1)


def mask_upper_left(n, m, window):
    i, j = np.arange(n)[:, None], np.arange(m)[None, :]
    return (i - j >= 0) & (i - j < window)


def mask_both_sides(n, m, window):
    i, j = np.arange(n)[:, None] + (m - n), np.arange(m)[None, :]
    return np.abs(i - j) < window


def mask_flipped(n, m, window):
    return ~mask_right(n, m, window)


def mask_no_window(n, m, window):
    return np.tril(np.ones((n, m), dtype=bool), k=m - n)


def mask_ints(n, m, window):
    return mask_right(n, m, window).astype(int)


# --------------------------------------------------------------------------
# 13.2: the sink logit
# --------------------------------------------------------------------------


def sink_right(Q, K, V, sink):
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])  # (..., n, m)
    sink = np.asarray(sink, dtype=float)[..., None, None]  # (..., 1, 1)
    top = np.maximum(scores.max(axis=-1, keepdims=True), sink)
    e = np.exp(scores - top)
    weights = e / (e.sum(axis=-1, keepdims=True) + np.exp(sink - top))
    return weights @ V, weights


def sink_by_concatenation(Q, K, V, sink):
    """As gpt-oss writes it: a sink column, a softmax, the column dropped."""
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])  # (..., n, m)
    column = np.broadcast_to(
        np.asarray(sink, dtype=float)[..., None, None], scores.shape[:-1] + (1,)
    )
    weights = anp.softmax(np.concatenate([scores, column], axis=-1))[..., :-1]
    return weights @ V, weights


def sink_ignored(Q, K, V, sink):
    return anp.scaled_dot_product_attention(Q, K, V)


def sink_not_exponentiated(Q, K, V, sink):
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    sink = np.asarray(sink, dtype=float)[..., None, None]
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - top)
    weights = e / (e.sum(axis=-1, keepdims=True) + sink)
    return weights @ V, weights


def sink_naive(Q, K, V, sink):
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    e = np.exp(scores)
    sink = np.asarray(sink, dtype=float)[..., None, None]
    weights = e / (e.sum(axis=-1, keepdims=True) + np.exp(sink))
    return weights @ V, weights


def sink_unscaled(Q, K, V, sink):
    return sink_right(Q * math.sqrt(Q.shape[-1]), K, V, sink)


def sink_column_kept(Q, K, V, sink):
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    column = np.broadcast_to(
        np.asarray(sink, dtype=float)[..., None, None], scores.shape[:-1] + (1,)
    )
    weights = anp.softmax(np.concatenate([scores, column], axis=-1))
    return weights[..., :-1] @ V, weights


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


# --------------------------------------------------------------------------
# 13.4: the ring-buffer step
# --------------------------------------------------------------------------


def ring_right(q, k, v, K_buf, V_buf, t):
    window = K_buf.shape[0]
    K_buf[t % window], V_buf[t % window] = k, v
    filled = min(t + 1, window)
    scores = K_buf[:filled] @ q / math.sqrt(q.shape[0])  # (filled,)
    weights = np.exp(scores - scores.max())
    return (weights / weights.sum()) @ V_buf[:filled]  # (d_v,)


def ring_with_helper(q, k, v, K_buf, V_buf, t):
    window = len(K_buf)
    K_buf[t % window] = k
    V_buf[t % window] = v
    f = min(t + 1, window)
    return anp.scaled_dot_product_attention(q[None], K_buf[:f], V_buf[:f])[0][0]


def ring_all_slots(q, k, v, K_buf, V_buf, t):
    window = K_buf.shape[0]
    K_buf[t % window], V_buf[t % window] = k, v
    return anp.scaled_dot_product_attention(q[None], K_buf, V_buf)[0][0]


def ring_before_write(q, k, v, K_buf, V_buf, t):
    window = K_buf.shape[0]
    filled = min(t, window)
    if filled:
        y = anp.scaled_dot_product_attention(q[None], K_buf[:filled], V_buf[:filled])
        y = y[0][0]
    else:
        y = np.zeros(V_buf.shape[1])
    K_buf[t % window], V_buf[t % window] = k, v
    return y


def ring_no_modulo(q, k, v, K_buf, V_buf, t):
    K_buf[t], V_buf[t] = k, v
    return anp.scaled_dot_product_attention(q[None], K_buf[: t + 1], V_buf[: t + 1])[0][
        0
    ]


def ring_one_short(q, k, v, K_buf, V_buf, t):
    window = K_buf.shape[0]
    K_buf[t % window], V_buf[t % window] = k, v
    filled = min(t + 1, window - 1) if window > 1 else 1
    start = (t % window) - filled + 1
    rows = [(start + i) % window for i in range(filled)]
    return anp.scaled_dot_product_attention(q[None], K_buf[rows], V_buf[rows])[0][0]


ring_list_state = []


def ring_appends(q, k, v, K_buf, V_buf, t):
    """Keeps its own list and never uses the buffers."""
    if t == 0:
        ring_list_state.clear()
    ring_list_state.append((k, v))
    K = np.array([kv[0] for kv in ring_list_state])
    V = np.array([kv[1] for kv in ring_list_state])
    return anp.scaled_dot_product_attention(q[None], K, V)[0][0]


def ring_stub(q, k, v, K_buf, V_buf, t):
    raise NotImplementedError("write the step")


RIGHT_ANSWERS = [
    pytest.param(checks.check_sliding_window_mask, (mask_right,), id="mask"),
    pytest.param(checks.check_sliding_window_mask, (mask_tril_triu,), id="tril"),
    pytest.param(checks.check_sink_attention, (sink_right,), id="sink"),
    pytest.param(checks.check_sink_attention, (sink_by_concatenation,), id="concat"),
    pytest.param(checks.check_mla_absorption, (absorb_right,), id="absorb"),
    pytest.param(checks.check_ring_buffer_step, (ring_right,), id="ring"),
    pytest.param(checks.check_ring_buffer_step, (ring_with_helper,), id="ring_sdpa"),
]

WRONG_ANSWERS = [
    pytest.param(checks.check_sliding_window_mask, (mask_plus_one,), "one more"),
    pytest.param(checks.check_sliding_window_mask, (mask_minus_one,), "one fewer"),
    pytest.param(checks.check_sliding_window_mask, (mask_upper_left,), "upper-left"),
    pytest.param(checks.check_sliding_window_mask, (mask_both_sides,), "after its own"),
    pytest.param(checks.check_sliding_window_mask, (mask_flipped,), "exactly where"),
    pytest.param(
        checks.check_sliding_window_mask, (mask_no_window,), "changes nothing"
    ),
    pytest.param(checks.check_sliding_window_mask, (mask_ints,), "must be boolean"),
    pytest.param(checks.check_sink_attention, (sink_ignored,), "sum to exactly 1"),
    pytest.param(
        checks.check_sink_attention, (sink_not_exponentiated,), "logit itself"
    ),
    pytest.param(checks.check_sink_attention, (sink_naive,), "nan or inf"),
    pytest.param(checks.check_sink_attention, (sink_unscaled,), "unscaled"),
    pytest.param(checks.check_sink_attention, (sink_column_kept,), "has shape"),
    pytest.param(checks.check_mla_absorption, (absorb_swapped,), "wrong side"),
    pytest.param(checks.check_mla_absorption, (absorb_mixed_heads,), "every head"),
    pytest.param(checks.check_mla_absorption, (absorb_transposed,), "transposed"),
    pytest.param(checks.check_mla_absorption, (absorb_interleaved,), "every H-th"),
    pytest.param(checks.check_mla_absorption, (absorb_vo_rows,), "wrong rows"),
    pytest.param(
        checks.check_ring_buffer_step, (ring_all_slots,), "no token has filled"
    ),
    pytest.param(
        checks.check_ring_buffer_step, (ring_before_write,), "leaves out token t"
    ),
    pytest.param(checks.check_ring_buffer_step, (ring_no_modulo,), "t % window"),
    pytest.param(
        checks.check_ring_buffer_step, (ring_one_short,), "keys 1..2 (2 keys)"
    ),
    pytest.param(checks.check_ring_buffer_step, (ring_appends,), "does not hold"),
    pytest.param(checks.check_ring_buffer_step, (ring_stub,), "not implemented yet"),
]


@pytest.mark.parametrize(("checker", "fns"), RIGHT_ANSWERS)
def test_accepts_a_right_answer(checker, fns, capsys):
    assert checker(*fns) is True
    printed = capsys.readouterr().out.strip().splitlines()
    assert len(printed) == 1 and printed[0].startswith(f"✓ {checker.__name__}")


@pytest.mark.parametrize(("checker", "fns", "says"), WRONG_ANSWERS)
def test_rejects_a_wrong_answer_with_its_diagnosis(checker, fns, says, capsys):
    with pytest.raises(CheckFailed, match=re.escape(says)) as info:
        checker(*fns)
    assert info.value.args[0].startswith(checker.__name__)
    assert "✓" not in capsys.readouterr().out


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(
    ("checker", "right"),
    [
        (checks.check_sliding_window_mask, mask_right),
        (checks.check_sink_attention, sink_right),
        (checks.check_mla_absorption, absorb_right),
        (checks.check_ring_buffer_step, ring_right),
    ],
)
def test_other_seeds_accept_the_right_answer(checker, right, seed):
    assert checker(right, seed=seed) is True


def test_known_mistakes_are_written_in_three_steps():
    from helpers.checks import kv_cache

    mistakes = [
        value
        for name, value in vars(kv_cache).items()
        if name.startswith("_") and isinstance(value, checks._engine.Mistake)
    ]
    assert len(mistakes) >= 15
    for mistake in mistakes:
        assert mistake.symptom and mistake.why and mistake.fix


def test_the_symptom_never_holds_the_fix():
    from helpers.checks import kv_cache

    for value in vars(kv_cache).values():
        if isinstance(value, checks._engine.Mistake):
            assert value.fix not in value.symptom
            assert "np." not in value.symptom and "= " not in value.symptom
