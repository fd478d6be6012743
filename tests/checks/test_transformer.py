"""The checkers of lesson 10 (helpers.checks.transformer) against wrong answers.

check_rope, check_grouped_query_attention and check_decode_step: each known
mistake must be rejected with its own diagnosis, the right answer accepted, and
anything broken (None, an exception, a wrong shape) reported as a failed check,
never as a crash inside the checker. The references themselves are checked
against torch in tests/attention/test_properties.py and the lesson.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers import attention_np as anp
from helpers.checks import (
    check_decode_step,
    check_grouped_query_attention,
    check_rope,
)
from tests.checks.catalogue import right, topic_tests, wrong

# --------------------------------------------------------------------------
# RoPE
# --------------------------------------------------------------------------


def rope_interleaved(x, positions, exponent=2.0, sign=1.0):
    n, d = x.shape
    angles = np.asarray(positions, float)[:, None] * 10000.0 ** (
        -exponent * np.arange(d // 2) / d
    )
    cos, sin = np.cos(angles), sign * np.sin(angles)
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * cos - x[:, 1::2] * sin
    out[:, 1::2] = x[:, 0::2] * sin + x[:, 1::2] * cos
    return out


def rope_halves(x, positions):
    n, d = x.shape
    angles = np.asarray(positions, float)[:, None] * 10000.0 ** (
        -2 * np.arange(d // 2) / d
    )
    a, b = x[:, : d // 2], x[:, d // 2 :]
    return np.concatenate(
        [
            a * np.cos(angles) - b * np.sin(angles),
            a * np.sin(angles) + b * np.cos(angles),
        ],
        -1,
    )


# --------------------------------------------------------------------------
# Grouped-query attention
# --------------------------------------------------------------------------


def gqa_right(Q, K, V):
    g = Q.shape[1] // K.shape[1]
    return anp.scaled_dot_product_attention(
        Q, np.repeat(K, g, axis=1), np.repeat(V, g, axis=1)
    )[0]


def gqa_tile(Q, K, V):
    g = Q.shape[1] // K.shape[1]
    return anp.scaled_dot_product_attention(
        Q, np.tile(K, (1, g, 1, 1)), np.tile(V, (1, g, 1, 1))
    )[0]


def test_gqa_reference_equals_torch_enable_gqa():
    rng = np.random.default_rng(3)
    Q, K, V = rng.standard_normal((2, 6, 3, 4)), *rng.standard_normal((2, 2, 3, 5, 4))
    fused = F.scaled_dot_product_attention(
        *map(torch.from_numpy, (Q, K, V)), enable_gqa=True
    )
    np.testing.assert_allclose(gqa_right(Q, K, V), fused.numpy(), rtol=1e-10)


# --------------------------------------------------------------------------
# A decode step with a KV cache
# --------------------------------------------------------------------------


def step_right(q, k, v, K_cache, V_cache):
    K_cache, V_cache = np.vstack([K_cache, k]), np.vstack([V_cache, v])
    return (
        anp.scaled_dot_product_attention(q[None], K_cache, V_cache)[0][0],
        K_cache,
        V_cache,
    )


def step_before_append(q, k, v, K_cache, V_cache):
    if len(K_cache):
        y = anp.scaled_dot_product_attention(q[None], K_cache, V_cache)[0][0]
    else:
        y = np.zeros_like(v)
    return y, np.vstack([K_cache, k]), np.vstack([V_cache, v])


def step_no_scale(q, k, v, K_cache, V_cache):
    K_cache, V_cache = np.vstack([K_cache, k]), np.vstack([V_cache, v])
    y = anp.scaled_dot_product_attention(q[None], K_cache, V_cache, scale=1.0)[0][0]
    return y, K_cache, V_cache


def step_forgets(q, k, v, K_cache, V_cache):
    y = anp.scaled_dot_product_attention(q[None], k[None], v[None])[0][0]
    return y, K_cache, V_cache


RIGHT = [
    right(check_rope, rope_interleaved),
    right(check_grouped_query_attention, gqa_right),
    right(check_decode_step, step_right),
]

WRONG = [
    *wrong(
        check_rope,
        [
            (rope_halves, "i with i + d/2", "halves"),
            (
                lambda x, p: rope_interleaved(x, p, exponent=1.0),
                "fall too slowly",
                "slow",
            ),
            (
                lambda x, p: rope_interleaved(x, p, exponent=-2.0),
                "grow with i",
                "growing",
            ),
            (
                lambda x, p: rope_interleaved(x, p, sign=-1.0),
                "rotate the wrong way",
                "direction",
            ),
            (lambda x, p: x.copy(), "equals the input", "identity"),
        ],
    ),
    *wrong(check_grouped_query_attention, [(gqa_tile, "np.tile")]),
    *wrong(
        check_decode_step,
        [
            (step_before_append, "before appending"),
            (step_no_scale, None),  # a mistake with no name still fails cleanly
            (step_forgets, "K_cache holds 0 rows"),
        ],
    ),
]

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


def boom(*args):
    raise IndexError("too many indices for array")


def not_implemented(*args):
    raise NotImplementedError("Exercise: replace this line")


BROKEN = {
    "None": lambda *args: None,
    "raises": boom,
    "stub": not_implemented,
    "string": lambda *args: "x",
    "NaN": lambda x, *rest: np.full_like(x, np.nan),
    "wrong shape": lambda x, *rest: np.zeros(3),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
@pytest.mark.parametrize(
    "checker", [check_rope, check_grouped_query_attention, check_decode_step]
)
def test_checkers_never_crash(checker, name):
    with pytest.raises(AssertionError) as failure:
        checker(BROKEN[name])
    assert len(failure.value._render_traceback_()) <= 8
