"""rope(x, positions=None, base=10000.0) in helpers.attention_np and attention_torch."""

import math

import numpy as np
import pytest
import torch


def test_rope_turns_each_interleaved_pair_by_position_times_its_frequency(attn):
    d, base = 4, 100.0
    x = np.tile(np.array([1.0, 0.0, 1.0, 0.0]), (3, 1))  # (n=3, d): unit x-axis pairs
    got = attn.np(attn.rope(attn.arr(x), base=base))  # (3, d)
    for position in range(3):
        for i in range(d // 2):
            angle = position * base ** (-2 * i / d)
            np.testing.assert_allclose(
                got[position, 2 * i : 2 * i + 2],
                [math.cos(angle), math.sin(angle)],
                atol=1e-15,
            )


def test_rope_default_positions_are_0_to_n_minus_1(attn):
    x = np.random.default_rng(0).standard_normal((2, 5, 6))
    np.testing.assert_array_equal(
        attn.np(attn.rope(attn.arr(x))),
        attn.np(attn.rope(attn.arr(x), positions=attn.arr(np.arange(5)))),
    )


def test_rope_one_position_for_a_kv_cache_step_equals_the_full_sequence_row(attn):
    x = np.random.default_rng(1).standard_normal((7, 8))  # (n, d)
    full = attn.np(attn.rope(attn.arr(x)))
    step = attn.np(attn.rope(attn.arr(x[6:]), positions=attn.arr(np.array([6]))))
    np.testing.assert_allclose(step, full[6:], rtol=1e-15, atol=1e-15)


def test_rope_positions_broadcast_over_batch_and_heads(attn):
    x = np.random.default_rng(2).standard_normal((2, 3, 4, 6))  # (batch, H, n, d)
    per_batch = np.array([[0, 1, 2, 3], [10, 11, 12, 13]])[:, None, :]  # (2, 1, n)
    got = attn.np(attn.rope(attn.arr(x), positions=attn.arr(per_batch)))
    for b in range(2):
        expected = attn.np(
            attn.rope(attn.arr(x[b]), positions=attn.arr(per_batch[b, 0]))
        )
        np.testing.assert_allclose(got[b], expected, rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rope_keeps_the_float_dtype_and_does_not_modify_x(attn, dtype):
    x = attn.arr(np.random.default_rng(3).standard_normal((4, 6)), dtype=dtype)
    before = attn.np(x).copy()
    out = attn.rope(x)
    assert attn.dtype_name(out) == np.dtype(dtype).name
    np.testing.assert_array_equal(attn.np(x), before)


def test_rope_integer_input_is_computed_in_floating_point(attn):
    out = attn.rope(attn.arr(np.ones((3, 4), dtype=np.int64)))
    assert "float" in attn.dtype_name(out)


@pytest.mark.parametrize(
    ("shape", "pattern"),
    [
        ((4, 5), r"even, non-zero last axis d .*got d=5 in shape \(4, 5\)"),
        ((6,), r"x must have shape \(\.\.\., n, d\); got shape \(6,\)"),
    ],
)
def test_rope_shape_errors(attn, shape, pattern):
    with pytest.raises(ValueError, match=pattern):
        attn.rope(attn.arr(np.ones(shape)))


def test_rope_positions_and_base_errors(attn):
    x = attn.arr(np.ones((2, 4, 6)))
    with pytest.raises(ValueError, match=r"positions of shape \(3,\) do not broadcast"):
        attn.rope(x, positions=attn.arr(np.arange(3)))
    with pytest.raises(ValueError, match="positions contains 1 non-finite"):
        attn.rope(x, positions=attn.arr(np.array([0.0, 1.0, np.nan, 3.0])))
    for base in (1.0, 0.0, -5.0, float("inf")):
        with pytest.raises(ValueError, match="base must be a finite number > 1"):
            attn.rope(x, base=base)


def test_rope_is_differentiable_in_torch():
    from helpers import attention_torch as atn

    x = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(atn.rope, (x,))
