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
    CheckFailed,
    _hints,
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


def step_attends_old_cache(q, k, v, K_cache, V_cache):
    # no special case: at step 0 the helper refuses an empty cache
    y = anp.scaled_dot_product_attention(q[None], K_cache, V_cache)[0][0]
    return y, np.vstack([K_cache, k]), np.vstack([V_cache, v])


def step_alone_at_first(q, k, v, K_cache, V_cache):
    if len(K_cache) == 0:  # t = 0 special-cased: the token alone
        return v, np.vstack([K_cache, k]), np.vstack([V_cache, v])
    y = anp.scaled_dot_product_attention(q[None], K_cache, V_cache)[0][0]
    return y, np.vstack([K_cache, k]), np.vstack([V_cache, v])


def step_prepends(q, k, v, K_cache, V_cache):
    K_cache, V_cache = np.vstack([k, K_cache]), np.vstack([v, V_cache])
    y = anp.scaled_dot_product_attention(q[None], K_cache, V_cache)[0][0]
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
            (step_before_append, "before its own key and value are appended"),
            (step_attends_old_cache, "does not see itself", "crashes-at-step-0"),
            (step_alone_at_first, "does not see itself", "alone-at-step-0"),
            (step_no_scale, "not divided by the square root of d_k"),
            (step_prepends, "hold the new row first", "prepended"),
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


def test_a_step_that_crashes_on_the_empty_cache_is_told_why_it_fails():
    _hints.reset()
    with pytest.raises(CheckFailed) as info:
        check_decode_step(step_attends_old_cache)
    err = info.value
    assert err.mistake is not None and "does not see itself" in err.diagnosis
    assert "ValueError" not in str(err) and "vstack" not in str(err)
    assert "anp.scaled_dot_product_attention" in err.where  # the learner's line
    with pytest.raises(CheckFailed, match="Why: the new token must see itself"):
        check_decode_step(step_attends_old_cache)
    _hints.reset()


def test_an_unrecognised_crash_gets_no_why():
    def crashes(q, k, v, K_cache, V_cache):
        raise ValueError("shapes do not align")

    with pytest.raises(CheckFailed, match="raised ValueError") as info:
        check_decode_step(crashes)
    assert info.value.mistake is None


def test_the_messages_use_the_exercise_names():
    def off(q, k, v, K_cache, V_cache):
        y, K_cache, V_cache = step_right(q, k, v, K_cache, V_cache)
        return y + (len(K_cache) == 3), K_cache, V_cache  # step 2 is off

    with pytest.raises(CheckFailed) as info:
        check_decode_step(off)
    text = str(info.value)
    assert "y at step 2 is wrong in coordinate 0" in text
    assert "q and k (4,), v (6,) at each step" in text
    assert "outputs" not in text and "Q (5, 4)" not in text


def test_a_cache_with_the_rows_in_another_order_is_refused():
    def shuffled(q, k, v, K_cache, V_cache):
        y, K_cache, V_cache = step_right(q, k, v, K_cache, V_cache)
        return y, K_cache[::-1], V_cache[::-1]

    with pytest.raises(CheckFailed) as info:
        check_decode_step(shuffled)
    assert "hold the new row first" in str(info.value)

    # a reversed cache of three rows is neither appended nor prepended
    def middle(q, k, v, K_cache, V_cache):
        y, K_cache, V_cache = step_right(q, k, v, K_cache, V_cache)
        order = [0, *range(2, len(K_cache)), 1] if len(K_cache) > 2 else slice(None)
        return y, K_cache[order], V_cache[order]

    with pytest.raises(CheckFailed, match="earlier rows, in order"):
        check_decode_step(middle)
