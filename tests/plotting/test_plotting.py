"""helpers.plotting: the artists hold the data they were given (no pixel checks).

The repo conftest selects the Agg backend.
"""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.container import BarContainer
from matplotlib.image import AxesImage

from helpers import attention_np as anp
from helpers import plotting


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _weights(shape, seed=0):
    rng = np.random.default_rng(seed)
    return anp.softmax(rng.standard_normal(shape) * 2.0)


def _heights(bars):
    return np.array([bar.get_height() for bar in bars])


# plot_scores_and_weights ------------------------------------------------------


@pytest.mark.parametrize("m", [1, 5, 40])
def test_scores_and_weights_bars_hold_the_data(m):
    rng = np.random.default_rng(m)
    scores = rng.standard_normal(m)
    weights = anp.softmax(scores)
    score_bars, weight_bars = plotting.plot_scores_and_weights(scores, weights)
    assert isinstance(score_bars, BarContainer)
    assert isinstance(weight_bars, BarContainer)
    np.testing.assert_allclose(_heights(score_bars), scores)
    np.testing.assert_allclose(_heights(weight_bars), weights)
    ax_scores, ax_weights = score_bars[0].axes, weight_bars[0].axes
    assert ax_scores is not ax_weights
    assert ax_scores.figure is ax_weights.figure
    assert ax_weights.get_ylim() == (0.0, 1.0)
    assert any(line.get_ydata()[0] == 0 for line in ax_scores.get_lines())  # 0 line
    for ax in (ax_scores, ax_weights):
        assert ax.get_xlabel() == "key s"
        assert ax.get_title() and ax.get_ylabel()
        assert ax.title.get_fontsize() >= 12
        assert ax.xaxis.label.get_fontsize() >= 12


def test_scores_and_weights_default_and_given_labels():
    scores = np.array([1.0, 2.0, 0.5])
    weights = anp.softmax(scores)
    score_bars, _ = plotting.plot_scores_and_weights(scores, weights)
    ticks = [t.get_text() for t in score_bars[0].axes.get_xticklabels()]
    assert ticks == ["$k_{0}$", "$k_{1}$", "$k_{2}$"]  # keys count from 0
    _, weight_bars = plotting.plot_scores_and_weights(
        scores, weights, labels=["a", "b", "c"]
    )
    ticks = [t.get_text() for t in weight_bars[0].axes.get_xticklabels()]
    assert ticks == ["a", "b", "c"]


def test_scores_and_weights_uses_given_axes_and_forwards_kwargs():
    fig, axes = plt.subplots(1, 2)
    scores = np.array([0.0, 1.0])
    score_bars, weight_bars = plotting.plot_scores_and_weights(
        scores, anp.softmax(scores), axes=axes, color="red", alpha=0.5
    )
    assert score_bars[0].axes is axes[0] and weight_bars[0].axes is axes[1]
    assert len(fig.axes) == 2
    for bar in (*score_bars, *weight_bars):
        assert bar.get_alpha() == 0.5
        assert bar.get_facecolor()[:3] == (1.0, 0.0, 0.0)


def test_scores_and_weights_accepts_torch_tensors_with_grad():
    scores = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    weights = torch.softmax(scores, dim=-1)
    score_bars, weight_bars = plotting.plot_scores_and_weights(scores, weights)
    np.testing.assert_allclose(_heights(score_bars), scores.detach().numpy())
    np.testing.assert_allclose(_heights(weight_bars), weights.detach().numpy())


@pytest.mark.parametrize(
    "scores, weights, match",
    [
        (np.zeros(3), np.full(4, 0.25), "one entry per key"),
        (np.zeros((2, 2)), np.full((2, 2), 0.5), "1-D"),
        (np.array([3.0, -1.0]), np.array([3.0, -1.0]), r"\[0, 1\]"),
        (np.array([np.nan, 0.0]), np.array([0.5, 0.5]), "NaN"),
        (np.zeros(0), np.zeros(0), "empty"),
    ],
)
def test_scores_and_weights_rejects_bad_input(scores, weights, match):
    with pytest.raises(ValueError, match=match):
        plotting.plot_scores_and_weights(scores, weights)


def test_scores_and_weights_rejects_wrong_label_count():
    with pytest.raises(ValueError, match="2 labels .* 3 keys"):
        plotting.plot_scores_and_weights(np.zeros(3), np.full(3, 1 / 3), ["a", "b"])


# plot_attention -------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(1, 1), (4, 20), (6, 6), (3, 2)])
def test_plot_attention_image_holds_the_weights(shape):
    weights = _weights(shape)
    image = plotting.plot_attention(weights)
    assert isinstance(image, AxesImage)
    np.testing.assert_array_equal(np.asarray(image.get_array()), weights)
    assert image.get_clim() == (0.0, 1.0)
    assert image.get_cmap().name == "viridis"
    ax = image.axes
    assert ax.get_xlabel() == "keys (m)"
    assert ax.get_ylabel() == "queries (n)"
    assert ax.xaxis.label.get_fontsize() >= 12
    assert len(ax.figure.axes) == 2  # the heatmap and its colorbar
    assert ax.figure.axes[1].get_ylabel() == "attention weight"


def test_plot_attention_accepts_torch_and_float32():
    weights = torch.softmax(
        torch.randn(3, 5, generator=torch.Generator().manual_seed(0)), -1
    )
    image = plotting.plot_attention(weights)
    np.testing.assert_allclose(np.asarray(image.get_array()), weights.numpy())
    image = plotting.plot_attention(weights.numpy().astype(np.float32))
    np.testing.assert_allclose(np.asarray(image.get_array()), weights.numpy())


def test_plot_attention_labels_title_and_existing_axes():
    tokens = "the cat sat on the mat".split()
    fig, ax = plt.subplots()
    weights = _weights((6, 6))
    image = plotting.plot_attention(
        weights, tokens, tokens, ax=ax, colorbar=False, title="self-attention"
    )
    assert image.axes is ax
    assert len(fig.axes) == 1  # no colorbar asked for
    assert ax.get_title() == "self-attention"
    assert [t.get_text() for t in ax.get_xticklabels()] == tokens
    assert [t.get_text() for t in ax.get_yticklabels()] == tokens


def test_plot_attention_thins_long_label_lists():
    tokens = [f"t{i}" for i in range(100)]
    image = plotting.plot_attention(_weights((2, 100)), key_labels=tokens)
    shown = [t.get_text() for t in image.axes.get_xticklabels()]
    assert 1 < len(shown) <= plotting.MAX_TICK_LABELS
    assert set(shown) <= set(tokens)


def test_plot_attention_forwards_kwargs():
    image = plotting.plot_attention(_weights((3, 3)), cmap="magma", alpha=0.7)
    assert image.get_cmap().name == "magma"
    assert image.get_alpha() == 0.7
    assert image.get_clim() == (0.0, 1.0)


@pytest.mark.parametrize(
    "weights, match",
    [
        (np.full(4, 0.25), r"2-D.*\(4,\)"),
        (np.full((2, 3, 3), 1 / 3), r"2-D.*\(2, 3, 3\)"),
        (np.array([[2.0, -1.0]]), r"\(1, 2\).*\[0, 1\]"),
        (np.array([[0.5, np.inf]]), "NaN or inf"),
        (np.zeros((0, 3)), "empty"),
    ],
)
def test_plot_attention_rejects_bad_weights(weights, match):
    with pytest.raises(ValueError, match=match):
        plotting.plot_attention(weights)


def test_plot_attention_rejects_non_numbers_and_wrong_labels():
    with pytest.raises(TypeError, match="real numbers"):
        plotting.plot_attention(np.ones((2, 2), dtype=bool))
    with pytest.raises(ValueError, match="key_labels has 2 labels .* 3 keys"):
        plotting.plot_attention(_weights((2, 3)), key_labels=["a", "b"])


# plot_attention_grid --------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 4, 6, 6), (1, 1, 3, 5), (3, 2, 4, 7)])
def test_grid_returns_one_image_per_panel(shape):
    weights = _weights(shape)
    images = plotting.plot_attention_grid(weights)
    assert images.shape == shape[:2]
    assert images.dtype == object
    axes = set()
    for r in range(shape[0]):
        for c in range(shape[1]):
            image = images[r, c]
            assert isinstance(image, AxesImage)
            np.testing.assert_array_equal(np.asarray(image.get_array()), weights[r, c])
            assert image.get_clim() == (0.0, 1.0)
            axes.add(image.axes)
    assert len(axes) == shape[0] * shape[1]
    fig = images[0, 0].figure
    colorbars = [ax for ax in fig.axes if ax not in axes]
    assert len(colorbars) == 1  # one shared colorbar
    assert colorbars[0].get_ylabel() == "attention weight"


def test_grid_of_three_axes_is_one_row_with_labels():
    weights = _weights((4, 3, 5))  # (num_heads, n, m)
    heads = [f"head {h}" for h in range(4)]
    images = plotting.plot_attention_grid(
        weights, row_labels=["example 0"], col_labels=heads, title="4 heads"
    )
    assert images.shape == (1, 4)
    assert [images[0, c].axes.get_title() for c in range(4)] == heads
    assert "example 0" in images[0, 0].axes.get_ylabel()
    assert images[0, 0].figure.get_suptitle() == "4 heads"


def test_grid_uses_given_axes_and_forwards_kwargs():
    fig, axes = plt.subplots(2, 2)
    weights = _weights((2, 2, 3, 3))
    images = plotting.plot_attention_grid(
        weights, axes=axes, colorbar=False, cmap="cividis"
    )
    assert images[1, 0].axes is axes[1, 0]
    assert len(fig.axes) == 4
    assert all(image.get_cmap().name == "cividis" for image in images.ravel())


@pytest.mark.parametrize(
    "weights, kwargs, match",
    [
        (np.full((3, 3), 1 / 3), {}, r"\(rows, cols, n, m\).*\(3, 3\)"),
        (np.full((1, 1, 1, 2, 2), 0.5), {}, r"\(1, 1, 1, 2, 2\)"),
        (np.full((2, 2, 2), 3.0), {}, r"\[0, 1\]"),
        (np.full((2, 2, 2), 0.5), {"col_labels": ["a"]}, "col_labels has 1 labels"),
        (np.full((2, 2, 2), 0.5), {"row_labels": ["a", "b"]}, "row_labels has 2"),
    ],
)
def test_grid_rejects_bad_input(weights, kwargs, match):
    with pytest.raises(ValueError, match=match):
        plotting.plot_attention_grid(weights, **kwargs)


def test_grid_rejects_too_few_axes():
    _, axes = plt.subplots(1, 2)
    with pytest.raises(ValueError, match="rows x cols = 1 x 3"):
        plotting.plot_attention_grid(_weights((3, 2, 2)), axes=axes)


def test_plotting_never_calls_show(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("plt.show() called inside a helper")

    monkeypatch.setattr(plt, "show", fail)
    plotting.plot_scores_and_weights(np.zeros(2), np.full(2, 0.5))
    plotting.plot_attention(_weights((2, 2)))
    plotting.plot_attention_grid(_weights((2, 2, 2)))


# plot_heads -------------------------------------------------------------------


@pytest.mark.parametrize("num_heads, panels", [(1, 1), (3, 3), (6, 8), (12, 16)])
def test_plot_heads_draws_one_panel_per_head_and_hides_the_rest(num_heads, panels):
    weights = _weights((num_heads, 5, 7), seed=num_heads)
    images = plotting.plot_heads(weights)
    assert len(images) == num_heads
    fig = images[0].axes.figure
    for h, image in enumerate(images):
        np.testing.assert_array_equal(image.get_array(), weights[h])
        assert image.get_clim() == (0.0, 1.0)
        assert image.axes.get_title() == f"head {h}"
    grid = [ax for ax in fig.axes if ax.get_subplotspec() is not None]
    assert len(grid) == panels  # the grid, without the colorbar
    hidden = [ax for ax in grid if not ax.axison]
    assert len(hidden) == panels - num_heads
    assert fig.axes[-1].get_ylabel() == "attention weight"  # the shared colorbar


def test_plot_heads_fills_a_given_figure_and_checks_its_input():
    from matplotlib.figure import Figure

    fig = Figure()
    images = plotting.plot_heads(np.full((2, 3, 3), 1 / 3), figure=fig, alpha=0.5)
    assert images[0].axes.figure is fig and images[1].get_alpha() == 0.5
    with pytest.raises(ValueError, match=r"\(num_heads, n, m\)"):
        plotting.plot_heads(np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        plotting.plot_heads(np.full((2, 3, 3), 2.0))
