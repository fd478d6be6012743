"""helpers.explorers.maths: the explorers' maths, tested without ipywidgets.

Every function is pure and seeded; assertions compare against references written
out here (loops, the course's softmax and multi_head_attention).
"""

import math
import subprocess
import sys

import numpy as np
import pytest

from helpers import attention_np as anp
from helpers.explorers import maths


def test_maths_loads_neither_ipywidgets_nor_matplotlib():
    code = (
        "import sys, helpers.explorers.maths; "
        "print(sorted(m for m in ('ipywidgets', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr


# attention_stats ------------------------------------------------------------------


@pytest.mark.parametrize("seq_len, d_k", [(2, 1), (16, 64), (100, 7), (512, 512)])
@pytest.mark.parametrize("scaled", [True, False])
def test_attention_stats_shapes_and_consistency(seq_len, d_k, scaled):
    data = maths.attention_stats(seq_len, d_k, scaled, seed=3)
    scores, weights = data["scores"], data["weights"]
    assert scores.shape == weights.shape == (seq_len,)
    assert scores.dtype == weights.dtype == np.float64
    np.testing.assert_allclose(weights.sum(), 1.0)
    assert (weights >= 0).all()
    np.testing.assert_allclose(weights, anp.softmax(scores))
    assert data["max_weight"] == weights.max()
    np.testing.assert_allclose(data["entropy"], -(weights * np.log(weights)).sum())
    assert 0.0 <= data["entropy"] <= math.log(seq_len) + 1e-12
    assert data["max_entropy"] == pytest.approx(math.log(seq_len))
    assert data["score_std"] == pytest.approx(scores.std())
    assert data["predicted_std"] == (1.0 if scaled else pytest.approx(math.sqrt(d_k)))


def test_attention_stats_scores_are_dot_products_of_seeded_draws():
    data = maths.attention_stats(5, 8, scaled=False, seed=11)
    rng = np.random.default_rng(11)
    q = rng.standard_normal(8)
    K = rng.standard_normal((5, 8))
    np.testing.assert_allclose(data["scores"], K @ q)
    scaled = maths.attention_stats(5, 8, scaled=True, seed=11)
    np.testing.assert_allclose(scaled["scores"], K @ q / math.sqrt(8))


def test_attention_stats_is_pure_and_seeded():
    a = maths.attention_stats(32, 16, True, 5)
    b = maths.attention_stats(32, 16, True, 5)
    c = maths.attention_stats(32, 16, True, 6)
    np.testing.assert_array_equal(a["scores"], b["scores"])
    assert not np.allclose(a["scores"], c["scores"])
    # A longer sequence keeps the same query and the same first keys.
    longer = maths.attention_stats(64, 16, True, 5)
    np.testing.assert_array_equal(longer["scores"][:32], a["scores"])


@pytest.mark.parametrize("scaled", [True, False])
@pytest.mark.parametrize("d_k", [1, 16, 256])
def test_score_std_matches_the_prediction_on_average(scaled, d_k):
    stds = [maths.attention_stats(512, d_k, scaled, s)["score_std"] for s in range(30)]
    predicted = maths.attention_stats(2, d_k, scaled, 0)["predicted_std"]
    assert np.mean(stds) == pytest.approx(predicted, rel=0.2)


def _mean(key, seq_len, d_k, scaled, seeds=range(20)):
    return np.mean([maths.attention_stats(seq_len, d_k, scaled, s)[key] for s in seeds])


def test_unscaled_scores_saturate_the_softmax_as_d_k_grows():
    entropies = [_mean("entropy", 64, d_k, False) for d_k in (1, 16, 256)]
    assert entropies[0] > entropies[1] > entropies[2]
    assert entropies[2] < 0.5  # nearly one-hot: log(64) would be 4.16
    assert _mean("max_weight", 64, 256, False) > 0.8


def test_scaling_keeps_the_entropy_steady_across_d_k():
    entropies = [_mean("entropy", 64, d_k, True) for d_k in (1, 16, 256)]
    assert max(entropies) - min(entropies) < 0.4
    assert min(entropies) > 0.7 * math.log(64)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"seq_len": 0, "d_k": 4}, "seq_len must be a positive integer"),
        ({"seq_len": 4, "d_k": 2.5}, "d_k must be a positive integer"),
        ({"seq_len": 4, "d_k": 4, "seed": -1}, "seed"),
    ],
)
def test_attention_stats_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        maths.attention_stats(**kwargs)


# temperature_weights --------------------------------------------------------------


SCORES = np.array([1.0, 3.0, -0.5, 2.0, 0.0])


def test_temperature_one_is_plain_softmax_and_rows_sum_to_one():
    np.testing.assert_allclose(
        maths.temperature_weights(SCORES, 1.0), anp.softmax(SCORES)
    )
    for t in (0.05, 0.3, 1.0, 2.0, 5.0):
        w = maths.temperature_weights(SCORES, t)
        np.testing.assert_allclose(w.sum(), 1.0)
        np.testing.assert_allclose(w, anp.softmax(SCORES / t))


def test_low_temperature_approaches_one_hot_and_high_approaches_uniform():
    cold = maths.temperature_weights(SCORES, 0.01)
    np.testing.assert_allclose(cold, np.eye(5)[np.argmax(SCORES)], atol=1e-12)
    hot = maths.temperature_weights(SCORES, 1e4)
    np.testing.assert_allclose(hot, np.full(5, 0.2), atol=1e-3)
    temps = [0.05, 0.2, 1.0, 5.0, 50.0]
    entropies = [maths.entropy(maths.temperature_weights(SCORES, t)) for t in temps]
    assert all(a < b for a, b in zip(entropies, entropies[1:], strict=False))


def test_temperature_weights_accepts_torch_scores():
    torch = pytest.importorskip("torch")
    scores = torch.tensor(SCORES, requires_grad=True)
    np.testing.assert_allclose(
        maths.temperature_weights(scores, 0.5), anp.softmax(SCORES / 0.5)
    )


@pytest.mark.parametrize("t", [0.0, -1.0, float("nan"), float("inf")])
def test_temperature_must_be_positive(t):
    with pytest.raises(ValueError, match="temperature must be a positive"):
        maths.temperature_weights(SCORES, t)


def test_temperature_scores_must_be_finite_with_keys_on_the_last_axis():
    with pytest.raises(ValueError, match=r"shape \(\.\.\., m\)"):
        maths.temperature_weights(np.zeros((2, 0)), 1.0)
    with pytest.raises(ValueError, match="NaN or inf"):
        maths.temperature_weights([1.0, np.nan], 1.0)
    with pytest.raises(TypeError, match="real numbers"):
        maths.temperature_weights(np.array([True, False]), 1.0)
    rows = maths.temperature_weights(np.stack([SCORES, -SCORES]), 0.5)
    np.testing.assert_allclose(rows, anp.softmax(np.stack([SCORES, -SCORES]) / 0.5))


# heads_weights --------------------------------------------------------------------


@pytest.mark.parametrize(
    "num_heads, d_model, seq_len", [(1, 4, 3), (2, 8, 6), (4, 8, 1)]
)
def test_heads_weights_shape_and_rows_sum_to_one(num_heads, d_model, seq_len):
    w = maths.heads_weights(num_heads, d_model, seq_len, seed=0)
    assert w.shape == (num_heads, seq_len, seq_len)
    assert w.dtype == np.float64  # the documented default
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)
    assert (w >= 0).all()
    w32 = maths.heads_weights(num_heads, d_model, seq_len, seed=0, dtype="float32")
    assert w32.shape == w.shape and w32.dtype == np.float32
    np.testing.assert_allclose(w32.sum(axis=-1), 1.0, rtol=1e-6)
    assert (w32 >= 0).all()


def test_heads_weights_equal_a_per_head_reference():
    num_heads, d_model, seq_len = 2, 8, 5
    rng = np.random.default_rng(4)
    W_Q, W_K, _, _ = rng.standard_normal((4, d_model, d_model)) / math.sqrt(d_model)
    X = rng.standard_normal((seq_len, d_model))
    Q, K = X @ W_Q, X @ W_K  # (n, d_model)
    d_k = d_model // num_heads
    expected = [
        anp.softmax(
            Q[:, h * d_k : (h + 1) * d_k]
            @ K[:, h * d_k : (h + 1) * d_k].T
            / math.sqrt(d_k)
        )
        for h in range(num_heads)
    ]
    got = maths.heads_weights(num_heads, d_model, seq_len, seed=4)
    np.testing.assert_allclose(got, np.stack(expected), rtol=1e-10)


@pytest.mark.parametrize(
    "num_heads, d_model, seq_len",
    [(1, 4, 3), (2, 8, 6), (4, 8, 1), (8, 8, 5), (8, 64, 40), (3, 12, 17)],
)
def test_heads_weights_equal_multi_head_attention(num_heads, d_model, seq_len):
    """The einsum path gives the weights of the course's multi_head_attention."""
    rng = np.random.default_rng(9)
    W_Q, W_K, W_V, W_O = rng.standard_normal((4, d_model, d_model)) / math.sqrt(d_model)
    X = rng.standard_normal((1, seq_len, d_model))  # (batch=1, n, d_model)
    _, expected = anp.multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads)
    got = maths.heads_weights(num_heads, d_model, seq_len, seed=9)
    np.testing.assert_allclose(got, expected[0], rtol=1e-10, atol=1e-15)
    got32 = maths.heads_weights(num_heads, d_model, seq_len, 9, dtype=np.float32)
    np.testing.assert_allclose(got32, expected[0], rtol=1e-5, atol=1e-6)


def test_heads_weights_dtype_must_be_float32_or_float64():
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        maths.heads_weights(2, 8, 4, seed=0, dtype=np.float16)
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        maths.heads_weights(2, 8, 4, seed=0, dtype=int)


def test_heads_weights_seeded_and_prefix_stable():
    a = maths.heads_weights(2, 8, 6, seed=1)
    np.testing.assert_array_equal(a, maths.heads_weights(2, 8, 6, seed=1))
    assert not np.allclose(a, maths.heads_weights(2, 8, 6, seed=2))
    # More tokens: the first tokens keep their mutual scores (softmax renormalises).
    longer = maths.heads_weights(2, 8, 9, seed=1)
    ratio = longer[:, :6, :6] / longer[:, :6, :6].sum(-1, keepdims=True)
    np.testing.assert_allclose(ratio, a, rtol=1e-10)


def test_heads_weights_rejects_a_non_divisor():
    with pytest.raises(ValueError, match="d_model=8 is not divisible by num_heads=3"):
        maths.heads_weights(3, 8, 4, seed=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_entropy_equals_entropy_and_keeps_the_dtype(dtype):
    w = maths.heads_weights(4, 16, 50, seed=2, dtype=dtype)
    w[0, 0] = np.eye(50)[3]  # a one-hot row: 0 log 0 = 0, entropy 0
    got = maths.row_entropy(w)
    assert got.shape == (4, 50) and got.dtype == dtype
    np.testing.assert_allclose(got, maths.entropy(w), rtol=1e-5, atol=1e-6)
    assert got[0, 0] == 0.0


def test_entropy_handles_zeros():
    assert maths.entropy([1.0, 0.0, 0.0]) == 0.0
    np.testing.assert_allclose(maths.entropy(np.full((2, 4), 0.25)), [math.log(4)] * 2)


def _block_max_by_loops(w, k):
    """Reference: the max of each k x k block, one block at a time."""
    *lead, n, m = w.shape
    out = np.empty((*lead, -(-n // k), -(-m // k)), w.dtype)
    for i in range(out.shape[-2]):
        for j in range(out.shape[-1]):
            out[..., i, j] = w[..., i * k : (i + 1) * k, j * k : (j + 1) * k].max(
                axis=(-2, -1)
            )
    return out


@pytest.mark.parametrize(
    "shape, k", [((2, 12, 12), 3), ((2, 13, 11), 3), ((1, 7, 7), 7), ((3, 5, 9), 2)]
)
def test_block_max_equals_a_loop_over_blocks(shape, k):
    w = np.random.default_rng(1).random(shape, dtype=np.float32)
    got = maths.block_max(w, k)
    np.testing.assert_array_equal(got, _block_max_by_loops(w, k))
    assert got.dtype == w.dtype
    np.testing.assert_array_equal(maths.block_max(w, 1), w)


# the input scale sigma and the spread within one row (issue 11.3, 11.4) ---------


@pytest.mark.parametrize("scaled", [True, False])
@pytest.mark.parametrize("sigma", [0.5, 2.0])
def test_sigma_scales_q_and_k_so_scores_scale_by_sigma_squared(scaled, sigma):
    base = maths.attention_stats(24, 16, scaled, seed=7)
    data = maths.attention_stats(24, 16, scaled, seed=7, sigma=sigma)
    np.testing.assert_allclose(data["scores"], sigma**2 * base["scores"])
    np.testing.assert_allclose(data["weights"], anp.softmax(data["scores"]))
    assert data["sigma"] == sigma
    assert data["q_norm"] == pytest.approx(sigma * base["q_norm"])
    population = sigma**2 * (1.0 if scaled else 4.0)  # sqrt(16) = 4
    assert data["predicted_std"] == pytest.approx(population)


@pytest.mark.parametrize("scaled", [True, False])
@pytest.mark.parametrize("d_k, sigma", [(1, 1.0), (4, 0.5), (64, 2.0)])
def test_one_rows_spread_is_sigma_times_q_norm_over_sqrt_d_k(scaled, d_k, sigma):
    """Within one row q is fixed: the spread is sigma ||q|| / sqrt(d_k), not sigma^2."""
    for seed in range(3):
        data = maths.attention_stats(20_000, d_k, scaled, seed, sigma)
        expected = sigma * data["q_norm"] / (math.sqrt(d_k) if scaled else 1.0)
        assert data["row_predicted_std"] == pytest.approx(expected)
        assert data["score_std"] == pytest.approx(expected, rel=0.03)


def test_with_d_k_1_the_row_spread_varies_widely_from_query_to_query():
    """Issue 11.3: one row is not the population; seeds 0-9 range widely."""
    spreads = [
        maths.attention_stats(16, 1, True, seed)["score_std"] for seed in range(10)
    ]
    predicted = [
        maths.attention_stats(16, 1, True, seed)["row_predicted_std"]
        for seed in range(10)
    ]
    assert min(spreads) < 0.05 and max(spreads) > 2.0
    assert min(predicted) < 0.05 and max(predicted) > 1.5


def test_the_scale_does_not_adapt_to_the_input_size():
    """Scaled by 1/sqrt(d_k), larger inputs still saturate the softmax."""

    def mean_entropy(sigma):
        return np.mean(
            [
                maths.attention_stats(64, 64, True, s, sigma)["entropy"]
                for s in range(20)
            ]
        )

    entropies = [mean_entropy(sigma) for sigma in (0.5, 1.0, 2.0, 4.0)]
    assert all(a > b for a, b in zip(entropies, entropies[1:], strict=False))
    assert entropies[0] > 0.95 * math.log(64) and entropies[-1] < 1.0


@pytest.mark.parametrize("sigma", [0.0, -1.0, float("nan"), True])
def test_sigma_must_be_positive(sigma):
    with pytest.raises(ValueError, match="sigma must be a positive number"):
        maths.attention_stats(4, 4, sigma=sigma)


# heads_weights: what makes heads differ (issue 11.10) -----------------------------


def _heads_reference(num_heads, d_model, seq_len, seed, divisor, sigma, ones):
    rng = np.random.default_rng(seed)
    W_Q, W_K, _, _ = rng.standard_normal((4, d_model, d_model)) / math.sqrt(d_model)
    if ones:
        W_Q = W_K = np.ones((d_model, d_model))
    X = sigma * rng.standard_normal((seq_len, d_model))  # (n, d_model)
    Q, K = X @ W_Q, X @ W_K  # (n, d_model)
    d_k = d_model // num_heads
    return np.stack(
        [
            anp.softmax(
                Q[:, h * d_k : (h + 1) * d_k]
                @ K[:, h * d_k : (h + 1) * d_k].T
                / divisor
            )
            for h in range(num_heads)
        ]
    )  # (num_heads, n, n)


@pytest.mark.parametrize("scale", ["d_k", "d_model"])
@pytest.mark.parametrize("projections", ["random", "ones"])
@pytest.mark.parametrize("sigma", [0.25, 1.0, 3.0])
def test_heads_weights_scale_sigma_and_projections(scale, projections, sigma):
    got = maths.heads_weights(
        4, 16, 7, 3, scale=scale, sigma=sigma, projections=projections
    )
    divisor = math.sqrt(4 if scale == "d_k" else 16)
    expected = _heads_reference(4, 16, 7, 3, divisor, sigma, projections == "ones")
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_seed_003s_all_ones_projections_make_every_head_identical():
    ones = maths.heads_weights(4, 8, 6, 0, projections="ones")
    summary = maths.heads_summary(ones)
    assert summary["identical"]
    np.testing.assert_allclose(ones, np.broadcast_to(ones[:1], ones.shape), atol=1e-12)
    random = maths.heads_summary(maths.heads_weights(4, 8, 6, 0))
    assert not random["identical"] and random["saturated"] == 0


def test_large_inputs_saturate_all_ones_heads_and_small_ones_do_not():
    big = maths.heads_weights(2, 8, 6, 0, sigma=4.0, projections="ones")
    small = maths.heads_weights(2, 8, 6, 0, sigma=0.25, projections="ones")
    assert maths.heads_summary(big)["saturated"] == 2
    assert maths.heads_summary(small)["saturated"] == 0
    assert maths.heads_summary(small)["identical"]


def test_scaling_by_sqrt_d_model_flattens_the_weights():
    def mean_entropy(scale):
        w = maths.heads_weights(8, 64, 32, 1, scale=scale, sigma=2.0)
        return maths.entropy(w).mean()

    assert mean_entropy("d_model") > mean_entropy("d_k") + 0.1


def test_heads_summary_counts_from_the_weights():
    w = np.zeros((3, 2, 4))
    w[0] = [[1, 0, 0, 0], [0, 1, 0, 0]]  # saturated
    w[1] = 0.25  # uniform
    w[2] = [[0.97, 0.03, 0, 0], [0.5, 0.5, 0, 0]]  # mean largest 0.735
    summary = maths.heads_summary(w)
    assert summary["saturated"] == 1 and not summary["identical"]
    np.testing.assert_allclose(summary["max_weight"], [1.0, 0.25, 0.97])
    np.testing.assert_allclose(summary["entropy"], maths.entropy(w).mean(-1), atol=1e-6)
    assert maths.heads_summary(np.stack([w[1]] * 2))["identical"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"scale": "d_v"}, "scale must be one of"),
        ({"projections": "zeros"}, "projections must be one of"),
        ({"sigma": 0}, "sigma must be a positive number"),
    ],
)
def test_heads_weights_rejects_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        maths.heads_weights(2, 8, 4, **kwargs)


def test_divisors():
    assert maths.divisors(12) == [1, 2, 3, 4, 6, 12]
    assert maths.divisors(1) == [1]


CHECKPOINT_STEPS = [
    0,
    10,
    25,
    50,
    100,
    200,
]  # six checkpoints


def _checkpoint_weights(count=6, n=3, m=5, seed=0):
    """Weights that sharpen with the checkpoint: softmax of scores x (1 + 2 i)."""
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((n, m))  # (n, m)
    return np.stack([anp.softmax(scores * (1 + 2 * i)) for i in range(count)])


# checkpoint_weights ---------------------------------------------------------------


@pytest.mark.parametrize("step_index", range(len(CHECKPOINT_STEPS)))
def test_checkpoint_weights_returns_that_checkpoint(step_index):
    w = _checkpoint_weights()
    data = maths.checkpoint_weights(w, CHECKPOINT_STEPS, step_index)
    np.testing.assert_array_equal(data["weights"], w[step_index])
    assert data["step"] == CHECKPOINT_STEPS[step_index] and type(data["step"]) is int
    assert data["step_index"] == step_index
    assert data["num_checkpoints"] == len(CHECKPOINT_STEPS)
    np.testing.assert_array_equal(data["max_weight"], w[step_index].max(axis=-1))
    np.testing.assert_array_equal(data["top_key"], w[step_index].argmax(axis=-1))
    expected_entropy = -(w[step_index] * np.log(w[step_index])).sum(axis=-1)
    np.testing.assert_allclose(data["entropy"], expected_entropy)
    assert data["mean_max_weight"] == pytest.approx(w[step_index].max(-1).mean())
    assert data["mean_entropy"] == pytest.approx(expected_entropy.mean())


def test_checkpoint_weights_sharpening_shows_in_the_numbers():
    w = _checkpoint_weights()
    sharp = [
        maths.checkpoint_weights(w, CHECKPOINT_STEPS, i)["mean_max_weight"]
        for i in range(len(CHECKPOINT_STEPS))
    ]
    assert sharp == sorted(sharp) and sharp[-1] > sharp[0]


def test_checkpoint_weights_masked_keys_have_zero_entropy_contribution():
    w = np.zeros((2, 2, 4))
    w[:, :, :2] = 0.5  # two real keys, two masked (weight 0)
    data = maths.checkpoint_weights(w, [0, 1], 1)
    np.testing.assert_allclose(data["entropy"], [math.log(2)] * 2)


def test_checkpoint_weights_accepts_torch_tensors():
    torch = pytest.importorskip("torch")
    w = _checkpoint_weights()
    data = maths.checkpoint_weights(
        torch.tensor(w, requires_grad=True), torch.tensor(CHECKPOINT_STEPS), 2
    )
    np.testing.assert_allclose(data["weights"], w[2], rtol=1e-6)
    assert data["step"] == 25


@pytest.mark.parametrize(
    "step_index", [-1, len(CHECKPOINT_STEPS), 1.5, True, "2", None]
)
def test_bad_step_index_raises(step_index):
    with pytest.raises(ValueError, match=r"step_index must be an integer in \[0, 5\]"):
        maths.checkpoint_weights(_checkpoint_weights(), CHECKPOINT_STEPS, step_index)


@pytest.mark.parametrize(
    "weights, steps, error, match",
    [
        (
            np.full((6, 3), 0.5),
            CHECKPOINT_STEPS,
            ValueError,
            r"\(num_checkpoints, n, m\)",
        ),
        (
            _checkpoint_weights(),
            CHECKPOINT_STEPS[:-1],
            ValueError,
            "one training step per checkpoint",
        ),
        (
            _checkpoint_weights(),
            [0, 10, 10, 50, 100, 200],
            ValueError,
            "strictly increasing",
        ),
        (
            _checkpoint_weights(),
            [0, 1.5, 2, 3, 4, 5],
            ValueError,
            "steps must be integers",
        ),
        (
            _checkpoint_weights() * 3,
            CHECKPOINT_STEPS,
            ValueError,
            r"in \[0, 1\]",
        ),
        (np.full((6, 3, 5), np.nan), CHECKPOINT_STEPS, ValueError, "NaN or inf"),
        (
            _checkpoint_weights() > 0.2,
            CHECKPOINT_STEPS,
            TypeError,
            "real numbers",
        ),
    ],
)
def test_checkpoint_weights_rejects_bad_input(weights, steps, error, match):
    with pytest.raises(error, match=match):
        maths.checkpoint_weights(weights, steps, 0)
