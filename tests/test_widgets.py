"""helpers.widgets: the pure functions, and the explorers' callbacks called directly.

Assertions are on data (the computed dicts, the artists' data, the PNG bytes
changing), never on pixels. The repo conftest selects the Agg backend.
"""

import ast
import io
import math
import subprocess
import sys
from pathlib import Path

import ipywidgets
import numpy as np
import pytest
from PIL import Image

from helpers import attention_np as anp
from helpers import widgets

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png(explorer):
    """The PNG bytes shown (ipywidgets stores them as a memoryview)."""
    data = bytes(explorer.image.value)
    assert data.startswith(PNG_MAGIC)
    return data


def _png_shape(data):
    return np.asarray(Image.open(io.BytesIO(data))).shape


# attention_stats ------------------------------------------------------------------


@pytest.mark.parametrize("seq_len, d_k", [(2, 1), (16, 64), (100, 7), (512, 512)])
@pytest.mark.parametrize("scaled", [True, False])
def test_attention_stats_shapes_and_consistency(seq_len, d_k, scaled):
    data = widgets.attention_stats(seq_len, d_k, scaled, seed=3)
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
    data = widgets.attention_stats(5, 8, scaled=False, seed=11)
    rng = np.random.default_rng(11)
    q = rng.standard_normal(8)
    K = rng.standard_normal((5, 8))
    np.testing.assert_allclose(data["scores"], K @ q)
    scaled = widgets.attention_stats(5, 8, scaled=True, seed=11)
    np.testing.assert_allclose(scaled["scores"], K @ q / math.sqrt(8))


def test_attention_stats_is_pure_and_seeded():
    a = widgets.attention_stats(32, 16, True, 5)
    b = widgets.attention_stats(32, 16, True, 5)
    c = widgets.attention_stats(32, 16, True, 6)
    np.testing.assert_array_equal(a["scores"], b["scores"])
    assert not np.allclose(a["scores"], c["scores"])
    # A longer sequence keeps the same query and the same first keys.
    longer = widgets.attention_stats(64, 16, True, 5)
    np.testing.assert_array_equal(longer["scores"][:32], a["scores"])


@pytest.mark.parametrize("scaled", [True, False])
@pytest.mark.parametrize("d_k", [1, 16, 256])
def test_score_std_matches_the_prediction_on_average(scaled, d_k):
    stds = [
        widgets.attention_stats(512, d_k, scaled, s)["score_std"] for s in range(30)
    ]
    predicted = widgets.attention_stats(2, d_k, scaled, 0)["predicted_std"]
    assert np.mean(stds) == pytest.approx(predicted, rel=0.2)


def _mean(key, seq_len, d_k, scaled, seeds=range(20)):
    return np.mean(
        [widgets.attention_stats(seq_len, d_k, scaled, s)[key] for s in seeds]
    )


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
        widgets.attention_stats(**kwargs)


# temperature_weights --------------------------------------------------------------


SCORES = np.array([1.0, 3.0, -0.5, 2.0, 0.0])


def test_temperature_one_is_plain_softmax_and_rows_sum_to_one():
    np.testing.assert_allclose(
        widgets.temperature_weights(SCORES, 1.0), anp.softmax(SCORES)
    )
    for t in (0.05, 0.3, 1.0, 2.0, 5.0):
        w = widgets.temperature_weights(SCORES, t)
        np.testing.assert_allclose(w.sum(), 1.0)
        np.testing.assert_allclose(w, anp.softmax(SCORES / t))


def test_low_temperature_approaches_one_hot_and_high_approaches_uniform():
    cold = widgets.temperature_weights(SCORES, 0.01)
    np.testing.assert_allclose(cold, np.eye(5)[np.argmax(SCORES)], atol=1e-12)
    hot = widgets.temperature_weights(SCORES, 1e4)
    np.testing.assert_allclose(hot, np.full(5, 0.2), atol=1e-3)
    temps = [0.05, 0.2, 1.0, 5.0, 50.0]
    entropies = [widgets.entropy(widgets.temperature_weights(SCORES, t)) for t in temps]
    assert all(a < b for a, b in zip(entropies, entropies[1:], strict=False))


def test_temperature_weights_accepts_torch_scores():
    torch = pytest.importorskip("torch")
    scores = torch.tensor(SCORES, requires_grad=True)
    np.testing.assert_allclose(
        widgets.temperature_weights(scores, 0.5), anp.softmax(SCORES / 0.5)
    )


@pytest.mark.parametrize("t", [0.0, -1.0, float("nan"), float("inf")])
def test_temperature_must_be_positive(t):
    with pytest.raises(ValueError, match="temperature must be a positive"):
        widgets.temperature_weights(SCORES, t)


def test_temperature_scores_must_be_one_finite_row():
    with pytest.raises(ValueError, match=r"shape \(m,\)"):
        widgets.TemperatureExplorer(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="NaN or inf"):
        widgets.temperature_weights([1.0, np.nan], 1.0)


# heads_weights --------------------------------------------------------------------


@pytest.mark.parametrize(
    "num_heads, d_model, seq_len", [(1, 4, 3), (2, 8, 6), (4, 8, 1)]
)
def test_heads_weights_shape_and_rows_sum_to_one(num_heads, d_model, seq_len):
    w = widgets.heads_weights(num_heads, d_model, seq_len, seed=0)
    assert w.shape == (num_heads, seq_len, seq_len)
    assert w.dtype == np.float64  # the documented default
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)
    assert (w >= 0).all()
    w32 = widgets.heads_weights(num_heads, d_model, seq_len, seed=0, dtype="float32")
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
    got = widgets.heads_weights(num_heads, d_model, seq_len, seed=4)
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
    got = widgets.heads_weights(num_heads, d_model, seq_len, seed=9)
    np.testing.assert_allclose(got, expected[0], rtol=1e-10, atol=1e-15)
    got32 = widgets.heads_weights(num_heads, d_model, seq_len, 9, dtype=np.float32)
    np.testing.assert_allclose(got32, expected[0], rtol=1e-5, atol=1e-6)


def test_heads_weights_dtype_must_be_float32_or_float64():
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        widgets.heads_weights(2, 8, 4, seed=0, dtype=np.float16)
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        widgets.heads_weights(2, 8, 4, seed=0, dtype=int)


def test_heads_weights_seeded_and_prefix_stable():
    a = widgets.heads_weights(2, 8, 6, seed=1)
    np.testing.assert_array_equal(a, widgets.heads_weights(2, 8, 6, seed=1))
    assert not np.allclose(a, widgets.heads_weights(2, 8, 6, seed=2))
    # More tokens: the first tokens keep their mutual scores (softmax renormalises).
    longer = widgets.heads_weights(2, 8, 9, seed=1)
    ratio = longer[:, :6, :6] / longer[:, :6, :6].sum(-1, keepdims=True)
    np.testing.assert_allclose(ratio, a, rtol=1e-10)


def test_heads_weights_rejects_a_non_divisor():
    with pytest.raises(ValueError, match="d_model=8 is not divisible by num_heads=3"):
        widgets.heads_weights(3, 8, 4, seed=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_entropy_equals_entropy_and_keeps_the_dtype(dtype):
    w = widgets.heads_weights(4, 16, 50, seed=2, dtype=dtype)
    w[0, 0] = np.eye(50)[3]  # a one-hot row: 0 log 0 = 0, entropy 0
    got = widgets._row_entropy(w)
    assert got.shape == (4, 50) and got.dtype == dtype
    np.testing.assert_allclose(got, widgets.entropy(w), rtol=1e-5, atol=1e-6)
    assert got[0, 0] == 0.0


def test_entropy_handles_zeros():
    assert widgets.entropy([1.0, 0.0, 0.0]) == 0.0
    np.testing.assert_allclose(
        widgets.entropy(np.full((2, 4), 0.25)), [math.log(4)] * 2
    )


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
    got = widgets._block_max(w, k)
    np.testing.assert_array_equal(got, _block_max_by_loops(w, k))
    assert got.dtype == w.dtype
    np.testing.assert_array_equal(widgets._block_max(w, 1), w)


def test_png_bytes_round_trip():
    rgb = np.random.default_rng(0).integers(0, 256, (7, 5, 3), dtype=np.uint8)
    decoded = np.asarray(Image.open(io.BytesIO(widgets.png_bytes(rgb))))
    np.testing.assert_array_equal(decoded, rgb)
    with pytest.raises(ValueError, match="uint8"):
        widgets.png_bytes(rgb.astype(float))


def test_png_bytes_from_an_rgba_view_round_trips():
    """What the explorers pass: the RGB planes of the canvas's RGBA buffer."""
    rgba = np.random.default_rng(1).integers(0, 256, (6, 9, 4), dtype=np.uint8)
    view = rgba[..., :3]  # strided, not contiguous
    decoded = np.asarray(Image.open(io.BytesIO(widgets.png_bytes(view))))
    np.testing.assert_array_equal(decoded, view)
    assert widgets.png_bytes(view) == widgets.png_bytes(np.ascontiguousarray(view))


# the explorers --------------------------------------------------------------------


def _check_explorer_shell(explorer, names):
    assert isinstance(explorer.widget, ipywidgets.VBox)
    assert isinstance(explorer.image, ipywidgets.Image)
    assert isinstance(explorer.readout, ipywidgets.HTML)
    assert set(explorer.sliders) == set(names)
    children = explorer.widget.children
    assert explorer.readout in children and explorer.image in children
    assert set(explorer.sliders.values()) <= set(children[0].children)
    height, width, _ = _png_shape(_png(explorer))
    assert explorer.image.layout.height == f"{height}px"  # fixed: no flicker
    assert explorer.image.layout.width == f"{width}px"
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == (
        explorer.widget.model_id
    )
    assert bundle["text/plain"] == repr(explorer)
    assert repr(explorer).startswith(type(explorer).__name__ + "(")


def _sweep(explorer, name, values):
    """Update over ``values``; each step must change the data, image and readout."""
    for value in values:
        before, png, readout = explorer.data, _png(explorer), explorer.readout.value
        data = explorer.update(**{name: value})
        assert data is explorer.data and data is not before
        assert explorer.values[name] == value
        assert explorer.sliders[name].value == value  # sliders follow update()
        assert _png(explorer) != png
        assert explorer.readout.value != readout


def test_attention_explorer_initial_state():
    explorer = widgets.AttentionExplorer(seq_len=16, d_k=64, scaled=True, seed=0)
    _check_explorer_shell(explorer, ["seq_len", "d_k", "scaled", "seed"])
    expected = widgets.attention_stats(16, 64, True, 0)
    np.testing.assert_array_equal(explorer.data["weights"], expected["weights"])
    assert explorer.values == {"seq_len": 16, "d_k": 64, "scaled": True, "seed": 0}
    assert f"{expected['entropy']:.3f}" in explorer.readout.value
    assert f"{expected['max_weight']:.3f}" in explorer.readout.value
    assert f"{math.log(16):.3f}" in explorer.readout.value


def test_attention_explorer_artists_hold_the_new_data():
    explorer = widgets.AttentionExplorer(seq_len=16, d_k=4, scaled=False, seed=0)
    for d_k in (4, 64, 512):
        data = explorer.update(d_k=d_k, seq_len=128)
        expected = widgets.attention_stats(128, d_k, False, 0)
        np.testing.assert_array_equal(data["scores"], expected["scores"])
        heights, edges, _ = explorer.hist.get_data()
        assert heights.sum() * (edges[1] - edges[0]) == pytest.approx(1.0)  # density
        assert edges[0] <= data["scores"].min() and data["scores"].max() <= edges[-1]
        counts, _ = np.histogram(data["scores"], bins=edges)
        np.testing.assert_allclose(heights, counts / counts.sum() / np.diff(edges))
        bar_heights, _, _ = explorer.bars.get_data()
        np.testing.assert_array_equal(bar_heights, np.sort(data["weights"])[::-1])
        assert explorer.ax_weights.get_ylim() == (0.0, 1.0)
        std = data["predicted_std"]
        assert explorer.curve.get_ydata().max() == pytest.approx(
            1 / (std * math.sqrt(2 * math.pi)), rel=1e-3
        )


@pytest.mark.parametrize(
    "name, values",
    [
        ("d_k", [1, 8, 128, 512]),
        ("seq_len", [2, 40, 128, 512]),
        ("seed", [1, 2, 3]),
        ("scaled", [False, True]),
    ],
)
def test_attention_explorer_sweeps_change_everything(name, values):
    explorer = widgets.AttentionExplorer(seq_len=32, d_k=64)
    _sweep(explorer, name, values)


def test_attention_explorer_slider_triggers_an_update():
    explorer = widgets.AttentionExplorer(seq_len=16, d_k=64)
    png = _png(explorer)
    explorer.sliders["d_k"].value = 128
    assert explorer.data["d_k"] == 128 and explorer.values["d_k"] == 128
    expected = widgets.attention_stats(16, 128, True, 0)
    np.testing.assert_array_equal(explorer.data["scores"], expected["scores"])
    assert _png(explorer) != png
    explorer.sliders["scaled"].value = False
    assert explorer.data["scaled"] is False
    assert explorer.data["predicted_std"] == pytest.approx(math.sqrt(128))
    explorer.sliders["seq_len"].value = 100
    assert explorer.data["weights"].shape == (100,)


def test_attention_explorer_accepts_values_off_the_slider_grid():
    explorer = widgets.AttentionExplorer(seq_len=16, d_k=10)
    assert explorer.sliders["d_k"].value == 10
    explorer.update(d_k=100.0)
    assert explorer.sliders["d_k"].value == 100
    assert type(explorer.values["d_k"]) is int
    assert explorer.data["predicted_std"] == 1.0


def test_explorer_update_rejects_unknown_or_bad_values_without_changing_state():
    explorer = widgets.AttentionExplorer(seq_len=16, d_k=64)
    data, png = explorer.data, _png(explorer)
    with pytest.raises(TypeError, match="unknown value.*'temperature'"):
        explorer.update(temperature=2.0)
    with pytest.raises(ValueError, match="seq_len"):
        explorer.update(seq_len=0)
    assert explorer.data is data and _png(explorer) == png
    assert explorer.values["seq_len"] == 16


def test_temperature_explorer_bars_follow_the_slider():
    explorer = widgets.TemperatureExplorer(SCORES, temperature=1.0)
    _check_explorer_shell(explorer, ["temperature"])
    np.testing.assert_allclose(explorer.bar_heights(), anp.softmax(SCORES))
    assert len(explorer.bars) == SCORES.size
    assert explorer.ax.get_ylim() == (0.0, 1.0)
    explorer.sliders["temperature"].value = 0.1
    assert explorer.data["temperature"] == pytest.approx(0.1)
    np.testing.assert_allclose(explorer.bar_heights(), anp.softmax(SCORES / 0.1))
    assert explorer.data["max_weight"] > 0.99
    assert f"{explorer.data['entropy']:.3f}" in explorer.readout.value


def test_temperature_explorer_sweep_and_labels():
    explorer = widgets.TemperatureExplorer(SCORES, labels=list("abcde"))
    ticks = [t.get_text() for t in explorer.ax.get_xticklabels()]
    assert ticks == list("abcde")
    _sweep(explorer, "temperature", [0.05, 0.5, 2.0, 5.0])
    entropies = []
    for t in (0.05, 0.5, 2.0, 5.0):
        entropies.append(explorer.update(temperature=t)["entropy"])
    assert entropies == sorted(entropies)
    explorer.update(temperature=20.0)  # beyond the slider: the slider stretches
    assert explorer.sliders["temperature"].value == pytest.approx(20.0)


def test_temperature_explorer_with_many_keys_draws_one_outline():
    scores = np.random.default_rng(0).standard_normal(widgets.MAX_BARS + 1)
    explorer = widgets.TemperatureExplorer(scores, temperature=0.5)
    np.testing.assert_allclose(explorer.bar_heights(), anp.softmax(scores / 0.5))
    _sweep(explorer, "temperature", [0.1, 3.0])
    np.testing.assert_allclose(explorer.bar_heights(), anp.softmax(scores / 3.0))


def test_explorer_background_cache_is_bounded():
    explorer = widgets.AttentionExplorer(seq_len=64, d_k=1, scaled=False)
    for d_k in widgets.D_K_CHOICES * 3:
        explorer.update(d_k=d_k)
    assert 1 < len(explorer._backgrounds) <= widgets._MAX_BACKGROUNDS


def test_temperature_explorer_rejects_bad_labels():
    with pytest.raises(ValueError, match="labels has 2 labels for 5 scores"):
        widgets.TemperatureExplorer(SCORES, labels=["a", "b"])


def test_heads_explorer_images_hold_each_head():
    explorer = widgets.HeadsExplorer(num_heads=2, d_model=8, seq_len=6, seed=0)
    _check_explorer_shell(explorer, ["num_heads", "d_model", "seq_len", "seed"])
    assert list(explorer.sliders["num_heads"].options) == [1, 2, 4, 8]
    expected = widgets.heads_weights(2, 8, 6, 0, dtype=np.float32)  # what it shows
    assert explorer.data["weights"].dtype == np.float32
    assert len(explorer.images) == 2
    assert explorer.display_block == 1  # 6 tokens: every weight has its own cell
    for image, w in zip(explorer.images, expected, strict=True):
        np.testing.assert_array_equal(np.asarray(image.get_array()), w)
        assert image.get_clim() == (0.0, 1.0)
        assert image.get_cmap().name == "viridis"
    exact = widgets.heads_weights(2, 8, 6, 0)  # float64: float32 only rounds
    np.testing.assert_allclose(explorer.data["weights"], exact, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(
        explorer.data["entropy"], widgets.entropy(exact).mean(-1), rtol=1e-5
    )
    np.testing.assert_allclose(
        explorer.data["max_weight"], exact.max(axis=(-2, -1)), rtol=1e-6
    )
    assert "reduced resolution" not in explorer.readout.value


def test_heads_explorer_changes_heads_and_length():
    explorer = widgets.HeadsExplorer(num_heads=2, d_model=8, seq_len=6, seed=0)
    _sweep(explorer, "seq_len", [3, 20, 128])
    axes_before = [image.axes for image in explorer.images]
    explorer.update(seed=5)
    assert [image.axes for image in explorer.images] == axes_before  # in place
    _sweep(explorer, "num_heads", [4, 8, 1])
    explorer.sliders["num_heads"].value = 4
    assert len(explorer.images) == 4
    expected = widgets.heads_weights(4, 8, 128, 5, dtype=np.float32)
    assert explorer.panel_pixels >= 128 and explorer.display_block == 1
    for image, w in zip(explorer.images, expected, strict=True):
        np.testing.assert_array_equal(np.asarray(image.get_array()), w)
        assert image.get_extent() == [-0.5, 127.5, 127.5, -0.5]


def _padded_block_max(w, k):
    """Reference for the explorer: pad to a multiple of k with 0, reshape, max."""
    h, n, _ = w.shape
    size = -(-n // k) * k
    padded = np.zeros((h, size, size), w.dtype)  # weights >= 0: 0 never wins
    padded[:, :n, :n] = w
    return padded.reshape(h, size // k, k, size // k, k).max(axis=(2, 4))


@pytest.mark.parametrize("num_heads, seq_len", [(8, 512), (8, 511), (4, 300)])
def test_heads_explorer_shows_long_sequences_at_reduced_resolution(num_heads, seq_len):
    explorer = widgets.HeadsExplorer(num_heads=num_heads, d_model=64, seq_len=8)
    assert explorer.display_block == 1
    data = explorer.update(seq_len=seq_len, seed=3)
    weights = widgets.heads_weights(num_heads, 64, seq_len, 3, dtype=np.float32)
    np.testing.assert_array_equal(data["weights"], weights)  # the data: full size
    # The panel size is the drawn size of each (square) panel in pixels.
    box = explorer.images[0].axes.get_window_extent()
    assert explorer.panel_pixels == math.floor(min(box.width, box.height))
    # k: the smallest block that fits every weight into the panel's pixels.
    pixels, k = explorer.panel_pixels, explorer.display_block
    assert k >= 2
    assert math.ceil(seq_len / k) <= pixels < math.ceil(seq_len / (k - 1))
    shown = _padded_block_max(weights, k)
    end = shown.shape[-1] * k - 0.5
    for image, w in zip(explorer.images, shown, strict=True):
        np.testing.assert_array_equal(np.asarray(image.get_array()), w)
        assert image.get_extent() == [-0.5, end, end, -0.5]
        assert image.axes.get_xlim() == (-0.5, seq_len - 0.5)  # tokens, unchanged
        assert image.axes.get_ylim() == (seq_len - 0.5, -0.5)
    assert "reduced resolution" in explorer.readout.value
    assert f"{k}×{k} block" in explorer.readout.value
    # Back to a short sequence: full resolution, no note.
    data = explorer.update(seq_len=20)
    assert explorer.display_block == 1
    for image, w in zip(explorer.images, data["weights"], strict=True):
        np.testing.assert_array_equal(np.asarray(image.get_array()), w)
        assert image.axes.get_xlim() == (-0.5, 19.5)
    assert "reduced resolution" not in explorer.readout.value


def test_heads_explorer_d_model_change_keeps_num_heads_a_divisor():
    explorer = widgets.HeadsExplorer(num_heads=4, d_model=8, seq_len=5, seed=0)
    explorer.sliders["d_model"].value = 6
    assert explorer.values["d_model"] == 6
    assert explorer.values["num_heads"] == 3  # the largest divisor of 6 <= 4
    assert list(explorer.sliders["num_heads"].options) == [1, 2, 3, 6]
    assert explorer.data["weights"].shape == (3, 5, 5)
    assert explorer.data["d_k"] == 2
    with pytest.raises(ValueError, match="not divisible"):
        explorer.update(num_heads=4)
    assert explorer.values["num_heads"] == 3


def test_explorers_use_their_own_figure_not_pyplot():
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    widgets.AttentionExplorer()
    widgets.TemperatureExplorer(SCORES)
    widgets.HeadsExplorer()
    assert plt.get_fignums() == before


def test_widgets_module_never_imports_torch():
    path = Path(widgets.__file__)
    tree = ast.parse(path.read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert "torch" not in imported and "matplotlib" in imported
    code = "import sys, helpers.widgets; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr
