"""check_ring_buffer_step (helpers.checks.ring_buffer).

Lesson 13's exercise 13.4, one decoding step of a sliding-window cache kept in
a ring buffer. Each wrong answer is written the way a learner would write it;
the checker must reject it with its diagnosis (a keyword of the symptom). A
step that hands the work to the course's own ring_buffer_decode is refused too.
"""

import math

import numpy as np

from helpers import attention_np as anp
from helpers import kv_cache
from helpers.checks import check_ring_buffer_step
from tests.checks.catalogue import right, topic_tests, wrong

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


def ring_slice_short(q, k, v, K_buf, V_buf, t):
    """Writes first, then attends over the rows of the tokens before t only."""
    window = K_buf.shape[0]
    K_buf[t % window], V_buf[t % window] = k, v
    filled = min(t, window)
    return anp.scaled_dot_product_attention(q[None], K_buf[:filled], V_buf[:filled])[0][
        0
    ]


def ring_slice_short_guarded(q, k, v, K_buf, V_buf, t):
    """The same, with t = 0 (no rows) answered by its own value."""
    window = K_buf.shape[0]
    K_buf[t % window], V_buf[t % window] = k, v
    if t == 0:
        return v
    f = min(t, window)
    return anp.scaled_dot_product_attention(q[None], K_buf[:f], V_buf[:f])[0][0]


def ring_rolled(q, k, v, K_buf, V_buf, t):
    """A shift buffer built with np.roll: rebinds the names, the caller's stay."""
    K_buf = np.roll(K_buf, -1, axis=0)
    V_buf = np.roll(V_buf, -1, axis=0)
    K_buf[-1], V_buf[-1] = k, v
    f = min(t + 1, K_buf.shape[0])
    return anp.scaled_dot_product_attention(q[None], K_buf[-f:], V_buf[-f:])[0][0]


def ring_unscaled(q, k, v, K_buf, V_buf, t):
    window = K_buf.shape[0]
    K_buf[t % window], V_buf[t % window] = k, v
    filled = min(t + 1, window)
    scores = K_buf[:filled] @ q  # (filled,), no 1/sqrt(d_k)
    weights = np.exp(scores - scores.max())
    return (weights / weights.sum()) @ V_buf[:filled]


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


def ring_by_reference(q, k, v, K_buf, V_buf, t):
    """Re-decodes the buffers with the reference decoder."""
    window = len(K_buf)
    K_buf[t % window], V_buf[t % window] = k, v
    return kv_cache.ring_buffer_decode(q[None], k[None], v[None], window)[0]


RING_PRINTS = r"✓ check_ring_buffer_step: 4 sequences decoded token for token"

RIGHT = [
    right(check_ring_buffer_step, ring_right, prints=RING_PRINTS),
    right(check_ring_buffer_step, ring_with_helper, prints=RING_PRINTS),
]

REFERENCE = "the course's own ring_buffer_decode"

WRONG = [
    *wrong(
        check_ring_buffer_step,
        [
            (ring_all_slots, "no token has filled"),
            (ring_before_write, "before token t's k and v went in"),
            (ring_slice_short, "stop before the row it went into"),
            (ring_slice_short_guarded, "stop before the row it went into"),
            (ring_no_modulo, "one past the last"),
            (ring_rolled, "exactly as they were"),
            (ring_unscaled, "unscaled scores"),
            (ring_one_short, "keys 1..2 (2 keys)"),
            (ring_appends, "exactly as they were"),
            (ring_stub, "not implemented yet"),
            (ring_by_reference, REFERENCE),
        ],
    ),
]

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)
