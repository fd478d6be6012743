"""helpers.explorers: the explorer classes and their engine, driven directly.

Assertions are on data (the computed dicts, the artists' data, the decoded PNG
frames, the export bundle), never on pixels; a widget's repr is compared only
where it is itself the output (the export bundle's text/plain). The maths is tested
in test_maths.py. The repo conftest selects the Agg backend.
"""

import base64
import html
import io
import math

import numpy as np
import pytest
from PIL import Image

from helpers import attention_np as anp
from helpers import explorers
from helpers.explorers import maths, render, widgets

SCORES = np.array([1.0, 3.0, -0.5, 2.0, 0.0])

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png(explorer):
    """The PNG bytes shown (ipywidgets stores them as a memoryview)."""
    data = bytes(explorer.image.value)
    assert data.startswith(PNG_MAGIC)
    return data


def _png_shape(data):
    return np.asarray(Image.open(io.BytesIO(data))).shape


def test_png_bytes_round_trip():
    rgb = np.random.default_rng(0).integers(0, 256, (7, 5, 3), dtype=np.uint8)
    decoded = np.asarray(Image.open(io.BytesIO(render.png_bytes(rgb))))
    np.testing.assert_array_equal(decoded, rgb)
    with pytest.raises(ValueError, match="uint8"):
        render.png_bytes(rgb.astype(float))


def test_png_bytes_from_an_rgba_view_round_trips():
    """What the explorers pass: the RGB planes of the canvas's RGBA buffer."""
    rgba = np.random.default_rng(1).integers(0, 256, (6, 9, 4), dtype=np.uint8)
    view = rgba[..., :3]  # strided, not contiguous
    decoded = np.asarray(Image.open(io.BytesIO(render.png_bytes(view))))
    np.testing.assert_array_equal(decoded, view)
    assert render.png_bytes(view) == render.png_bytes(np.ascontiguousarray(view))


# the explorers --------------------------------------------------------------------


def _check_explorer_shell(explorer, names):
    """Controls named as the values; a fixed-size frame; an exportable bundle."""
    assert set(explorer.sliders) == set(explorer.values) == set(names)
    for name, grid in explorer.slider_grid().items():
        assert explorer.values[name] in grid, name  # the value is on its grid
    height, width, _ = _png_shape(_png(explorer))
    assert explorer.image.layout.height == f"{height}px"  # fixed: no flicker
    assert explorer.image.layout.width == f"{width}px"
    bundle, metadata = explorer._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == (
        explorer.widget.model_id
    )
    assert base64.b64decode(bundle["image/png"]) == _png(explorer)
    first, *rest, description = bundle["text/plain"].splitlines()
    assert first == repr(explorer)
    assert "\n".join(rest) == explorer.readout_text()
    assert "<" not in explorer.readout_text()  # plain text: no tags left
    # the frame is described: text, the img's title, its alt without the widget
    assert description == explorer.description and len(description) > 80
    assert type(explorer).__name__ not in description
    assert explorer.image.tooltip == description
    assert metadata == {"image/png": {"alt": description}}
    assert f'alt="{html.escape(description)}"' in bundle["text/html"]
    assert bundle["image/png"] in bundle["text/html"]
    assert 'aria-live="polite"' in explorer.caption.value


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
    _check_explorer_shell(explorer, ["seq_len", "d_k", "scaled", "seed", "sigma"])
    expected = widgets.attention_stats(16, 64, True, 0)
    np.testing.assert_array_equal(explorer.data["weights"], expected["weights"])
    assert explorer.values == {
        "seq_len": 16,
        "d_k": 64,
        "scaled": True,
        "seed": 0,
        "sigma": 1.0,
    }
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
        # solid: this row's predicted spread; dashed: the population's
        for line, key in (
            (explorer.curve, "row_predicted_std"),
            (explorer.population, "predicted_std"),
        ):
            std = data[key]
            assert line.get_ydata().max() == pytest.approx(
                1 / (std * math.sqrt(2 * math.pi)), rel=1e-3
            )


@pytest.mark.parametrize(
    "name, values",
    [
        ("d_k", [1, 8, 128, 512]),
        ("seq_len", [2, 40, 128, 512]),
        ("seed", [1, 2, 3]),
        ("scaled", [False, True]),
        ("sigma", [0.25, 2.0, 4.0]),
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


def test_explorer_background_cache_is_bounded(monkeypatch):
    # Each d_k has axis limits of its own, so each draws a new background. The
    # bound is lowered to 3 so that five of them overflow it (the ten d_k
    # choices never reach the real bound of 16: they could not show a leak).
    monkeypatch.setattr(render, "MAX_BACKGROUNDS", 3)
    explorer = widgets.AttentionExplorer(seq_len=64, d_k=1, scaled=False)
    for d_k in widgets.D_K_CHOICES[:5]:
        explorer.update(d_k=d_k)
    assert explorer.cached_backgrounds == 3


def test_temperature_explorer_rejects_bad_labels():
    with pytest.raises(ValueError, match="labels has 2 labels .* 5 keys"):
        widgets.TemperatureExplorer(SCORES, labels=["a", "b"])


def test_heads_explorer_images_hold_each_head():
    explorer = widgets.HeadsExplorer(num_heads=2, d_model=8, seq_len=6, seed=0)
    _check_explorer_shell(
        explorer,
        ["num_heads", "d_model", "seq_len", "seed", "scale", "sigma", "projections"],
    )
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


def test_the_explorers_maths_is_one_set_of_functions():
    """Lessons call explorers.attention_stats etc.: maths' functions, re-exported."""
    for name in (
        "entropy",
        "attention_stats",
        "temperature_weights",
        "heads_weights",
        "checkpoint_weights",
    ):
        assert getattr(explorers, name) is getattr(maths, name)
        assert getattr(widgets, name) is getattr(maths, name)


# issue 11.3 / 11.4: the input scale and an honest spread readout ------------------


def test_attention_explorer_readout_separates_the_row_from_the_population():
    explorer = widgets.AttentionExplorer(seq_len=16, d_k=1, scaled=True, seed=0)
    data = explorer.data
    assert data["score_std"] < 0.2  # seed 0, d_k = 1: a nearly flat row
    text = explorer.readout_text()
    assert f"score std in this row {data['score_std']:.2f}" in text
    assert f"this row's prediction σ‖q‖/√d_k = {data['row_predicted_std']:.2f}" in (
        text
    )
    assert "over random q, k: σ² = 1.00" in text
    explorer.update(scaled=False, d_k=64, sigma=2.0)
    assert "over random q, k: σ²√d_k = 32.00" in explorer.readout_text()


def test_attention_explorer_sigma_control_shows_the_scale_does_not_adapt():
    explorer = widgets.AttentionExplorer(seq_len=64, d_k=64, seed=1)
    assert explorer.slider_grid()["sigma"] == list(widgets.SIGMA_CHOICES)
    calm = explorer.data["entropy"]
    explorer.sliders["sigma"].value = 4.0  # the slider drives update()
    assert explorer.data["sigma"] == 4.0
    expected = maths.attention_stats(64, 64, True, 1, sigma=4.0)
    np.testing.assert_array_equal(explorer.data["scores"], expected["scores"])
    assert explorer.data["entropy"] < calm - 1.0
    assert explorer.data["predicted_std"] == 16.0


# issue 11.10: what makes heads differ ---------------------------------------------


def test_heads_explorer_seed_003_preset_makes_identical_then_saturated_heads():
    explorer = widgets.HeadsExplorer(num_heads=4, d_model=8, seq_len=6, seed=0)
    assert not explorer.data["identical"]
    assert "heads identical no" in explorer.readout_text()
    explorer.sliders["projections"].value = "ones"
    assert explorer.data["identical"]
    assert "heads identical yes" in explorer.readout_text()
    expected = maths.heads_weights(4, 8, 6, 0, dtype=np.float32, projections="ones")
    for image, w in zip(explorer.images, expected, strict=True):
        np.testing.assert_array_equal(np.asarray(image.get_array()), w)
    explorer.sliders["sigma"].value = 4.0
    assert explorer.data["saturated"] == 4
    assert "saturated heads 4 of 4" in explorer.readout_text()
    explorer.update(projections="random", sigma=1.0)
    assert not explorer.data["identical"] and explorer.data["saturated"] == 0


def test_heads_explorer_scale_choice_and_title():
    explorer = widgets.HeadsExplorer(num_heads=8, d_model=64, seq_len=16, sigma=2.0)
    sharp = explorer.data["entropy"].mean()
    assert "scores / √8" in explorer.figure.get_suptitle()
    explorer.sliders["scale"].value = "d_model"
    assert "scores / √d_model = √64" in explorer.figure.get_suptitle()
    expected = maths.heads_weights(
        8, 64, 16, 0, dtype=np.float32, scale="d_model", sigma=2.0
    )
    np.testing.assert_array_equal(explorer.data["weights"], expected)
    assert explorer.data["entropy"].mean() > sharp  # flatter
    assert explorer.slider_grid()["scale"] == ["d_k", "d_model"]
    assert explorer.slider_grid()["num_heads"] == [1, 2, 4, 8, 16, 32, 64]


def test_old_constructor_calls_keep_working():
    assert widgets.HeadsExplorer(2, 8, 6, 0).values["projections"] == "random"
    assert widgets.AttentionExplorer(16, 64, True, 0).values["sigma"] == 1.0


# issue 12.5: the temperature slider starts where the code says --------------------


@pytest.mark.parametrize("temperature", [1.0, 0.5, 2.0])
def test_temperature_slider_starts_exactly_at_the_given_value(temperature):
    explorer = widgets.TemperatureExplorer(SCORES, temperature=temperature)
    assert explorer.sliders["temperature"].value == temperature  # exactly
    assert temperature in explorer.slider_grid()["temperature"]
    assert f"temperature {temperature:.3g} " in explorer.readout_text()


def test_temperature_default_key_labels_count_from_zero():
    explorer = widgets.TemperatureExplorer(SCORES)
    ticks = [t.get_text() for t in explorer.ax.get_xticklabels()]
    assert ticks == [f"$k_{{{s}}}$" for s in range(5)]


# exports (issue 12.3): a frame per slider value -----------------------------------


def test_render_png_draws_the_frame_of_those_values_and_keeps_the_state():
    explorer = widgets.TemperatureExplorer(SCORES, temperature=1.0)
    live = _png(explorer)
    cold = explorer.render_png(temperature=0.1)
    assert cold != live and _png_shape(cold) == _png_shape(live)
    assert explorer.values == {"temperature": 1.0} and _png(explorer) == live
    explorer.update(temperature=0.1)
    assert _png(explorer) == cold  # the same frame the live explorer shows
    with pytest.raises(TypeError, match="unknown value"):
        explorer.render_png(d_k=3)
    assert explorer.values == {"temperature": 0.1}


def test_render_frame_gives_the_picture_and_the_readout_of_those_values():
    explorer = widgets.AttentionExplorer(seq_len=16, d_k=64)
    live = (_png(explorer), explorer.readout.value)
    frame = explorer.render_frame(d_k=512, scaled=False)
    assert frame["values"] == {**explorer.values, "d_k": 512, "scaled": False}
    expected = maths.attention_stats(16, 512, False, 0)
    assert f"max weight {expected['max_weight']:.3f}" in frame["readout_text"]
    assert frame["readout_html"] != live[1] and frame["png"] != live[0]
    assert (_png(explorer), explorer.readout.value) == live  # state kept


def test_slider_grid_lists_every_control_value():
    grid = widgets.AttentionExplorer(seq_len=16, d_k=64).slider_grid()
    assert grid["seq_len"] == list(range(2, 513))
    assert grid["d_k"] == list(widgets.D_K_CHOICES)
    assert grid["scaled"] == [False, True]
    assert grid["seed"] == list(range(100))
    explorer = widgets.AttentionExplorer(seq_len=16, d_k=64)
    for d_k in grid["d_k"][:3]:  # every grid value is a valid frame
        assert _png_shape(explorer.render_png(d_k=d_k)) == _png_shape(_png(explorer))


def test_make_control_rejects_unknown_options():
    with pytest.raises(TypeError, match="unknown option"):
        render.make_control("x", 1, low=0, high=3, colour="red")


@pytest.mark.parametrize(
    "x, limit", [(0.0, 1.0), (0.95, 1.0), (1.01, 1.5), (7.0, 8.0), (8.5, 10.0)]
)
def test_nice_ceil(x, limit):
    assert render.nice_ceil(x) == pytest.approx(limit)
