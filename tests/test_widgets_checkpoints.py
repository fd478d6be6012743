"""helpers.widgets: checkpoint_weights and CheckpointExplorer (lesson 09).

Assertions are on data: the computed dicts, the heatmap's array, the marker's
position, the PNG bytes and the readout changing. The repo conftest selects Agg.
"""

import io
import math

import ipywidgets
import numpy as np
import pytest
from PIL import Image

from helpers import attention_np as anp
from helpers import widgets

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
STEPS = [0, 10, 25, 50, 100, 200]  # six checkpoints, as _weights() makes


def _weights(count=6, n=3, m=5, seed=0):
    """Weights that sharpen with the checkpoint: softmax of scores x (1 + 2 i)."""
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((n, m))  # (n, m)
    return np.stack([anp.softmax(scores * (1 + 2 * i)) for i in range(count)])


def _png(explorer):
    data = bytes(explorer.image.value)
    assert data.startswith(PNG_MAGIC)
    return data


# checkpoint_weights ---------------------------------------------------------------


@pytest.mark.parametrize("step_index", range(len(STEPS)))
def test_checkpoint_weights_returns_that_checkpoint(step_index):
    w = _weights()
    data = widgets.checkpoint_weights(w, STEPS, step_index)
    np.testing.assert_array_equal(data["weights"], w[step_index])
    assert data["step"] == STEPS[step_index] and type(data["step"]) is int
    assert data["step_index"] == step_index
    assert data["num_checkpoints"] == len(STEPS)
    np.testing.assert_array_equal(data["max_weight"], w[step_index].max(axis=-1))
    np.testing.assert_array_equal(data["top_key"], w[step_index].argmax(axis=-1))
    expected_entropy = -(w[step_index] * np.log(w[step_index])).sum(axis=-1)
    np.testing.assert_allclose(data["entropy"], expected_entropy)
    assert data["mean_max_weight"] == pytest.approx(w[step_index].max(-1).mean())
    assert data["mean_entropy"] == pytest.approx(expected_entropy.mean())


def test_checkpoint_weights_sharpening_shows_in_the_numbers():
    w = _weights()
    sharp = [
        widgets.checkpoint_weights(w, STEPS, i)["mean_max_weight"]
        for i in range(len(STEPS))
    ]
    assert sharp == sorted(sharp) and sharp[-1] > sharp[0]


def test_checkpoint_weights_masked_keys_have_zero_entropy_contribution():
    w = np.zeros((2, 2, 4))
    w[:, :, :2] = 0.5  # two real keys, two masked (weight 0)
    data = widgets.checkpoint_weights(w, [0, 1], 1)
    np.testing.assert_allclose(data["entropy"], [math.log(2)] * 2)


def test_checkpoint_weights_accepts_torch_tensors():
    torch = pytest.importorskip("torch")
    w = _weights()
    data = widgets.checkpoint_weights(
        torch.tensor(w, requires_grad=True), torch.tensor(STEPS), 2
    )
    np.testing.assert_allclose(data["weights"], w[2], rtol=1e-6)
    assert data["step"] == 25


@pytest.mark.parametrize("step_index", [-1, len(STEPS), 1.5, True, "2", None])
def test_bad_step_index_raises(step_index):
    with pytest.raises(ValueError, match=r"step_index must be an integer in \[0, 5\]"):
        widgets.checkpoint_weights(_weights(), STEPS, step_index)


@pytest.mark.parametrize(
    "weights, steps, error, match",
    [
        (np.full((6, 3), 0.5), STEPS, ValueError, r"\(num_checkpoints, n, m\)"),
        (_weights(), STEPS[:-1], ValueError, "one training step per checkpoint"),
        (_weights(), [0, 10, 10, 50, 100, 200], ValueError, "strictly increasing"),
        (_weights(), [0, 1.5, 2, 3, 4, 5], ValueError, "steps must be integers"),
        (_weights() * 3, STEPS, ValueError, r"in \[0, 1\]"),
        (np.full((6, 3, 5), np.nan), STEPS, ValueError, r"in \[0, 1\]"),
        (_weights() > 0.2, STEPS, TypeError, "real numbers"),
    ],
)
def test_checkpoint_weights_rejects_bad_input(weights, steps, error, match):
    with pytest.raises(error, match=match):
        widgets.checkpoint_weights(weights, steps, 0)


# CheckpointExplorer ---------------------------------------------------------------


def _explorer(**kwargs):
    return widgets.CheckpointExplorer(
        _weights(),
        STEPS,
        query_labels=["a?", "b?", "c?"],
        key_labels=["A=1", "B=2", "C=3", "D=4", "pad"],
        **kwargs,
    )


def test_explorer_shell():
    explorer = _explorer(step_index=1)
    assert isinstance(explorer.widget, ipywidgets.VBox)
    assert isinstance(explorer.image, ipywidgets.Image)
    assert isinstance(explorer.readout, ipywidgets.HTML)
    assert list(explorer.sliders) == ["step_index"]
    slider = explorer.sliders["step_index"]
    assert (slider.min, slider.max, slider.value) == (0, len(STEPS) - 1, 1)
    assert explorer.image.layout.height is not None  # fixed size: no flicker
    height, width, _ = np.asarray(Image.open(io.BytesIO(_png(explorer)))).shape
    assert explorer.image.layout.height == f"{height}px"
    assert explorer.image.layout.width == f"{width}px"
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == repr(explorer)
    assert repr(explorer).startswith("CheckpointExplorer(")
    assert explorer.data["step"] == STEPS[1]


def test_update_over_every_step_changes_data_image_and_readout():
    w = _weights()
    explorer = _explorer()
    for i in [*range(1, len(STEPS)), 0]:
        before, png, readout = explorer.data, _png(explorer), explorer.readout.value
        data = explorer.update(step_index=i)
        assert data is explorer.data and data is not before
        assert explorer.values["step_index"] == i
        assert explorer.sliders["step_index"].value == i  # the slider follows
        assert _png(explorer) != png
        assert explorer.readout.value != readout
        assert f"<b>training step</b> {STEPS[i]} " in explorer.readout.value
        assert f"{data['mean_max_weight']:.3f}" in explorer.readout.value
        # What is plotted is exactly this checkpoint's weights.
        np.testing.assert_array_equal(np.asarray(explorer.heatmap.get_array()), w[i])
        assert explorer.heatmap.get_clim() == (0.0, 1.0)
        x, y = explorer.marker.get_data()
        assert list(x) == [STEPS[i]]
        assert y[0] == pytest.approx(w[i].max(-1).mean())


def test_slider_triggers_an_update():
    explorer = _explorer()
    png = _png(explorer)
    explorer.sliders["step_index"].value = 4
    assert explorer.data["step"] == STEPS[4]
    np.testing.assert_array_equal(
        np.asarray(explorer.heatmap.get_array()), _weights()[4]
    )
    assert _png(explorer) != png


def test_readout_names_each_querys_most_attended_key():
    w = np.zeros((2, 2, 3))
    w[0] = [[1, 0, 0], [0, 1, 0]]
    w[1] = [[0, 0, 1], [1, 0, 0]]
    explorer = widgets.CheckpointExplorer(
        w, [0, 5], query_labels=["x?", "y?"], key_labels=["x", "y", "<z>"]
    )
    assert "x?&rarr;x, y?&rarr;y" in explorer.readout.value
    explorer.update(step_index=1)
    assert "x?&rarr;&lt;z&gt;, y?&rarr;x" in explorer.readout.value  # escaped
    unlabelled = widgets.CheckpointExplorer(w, [0, 5])
    assert "most attended" not in unlabelled.readout.value


def test_tick_labels_are_the_token_labels():
    explorer = _explorer()
    xticks = [t.get_text() for t in explorer.ax_heat.get_xticklabels()]
    yticks = [t.get_text() for t in explorer.ax_heat.get_yticklabels()]
    assert xticks == ["A=1", "B=2", "C=3", "D=4", "pad"]
    assert yticks == ["a?", "b?", "c?"]


def test_bad_step_index_raises_and_leaves_the_state_alone():
    explorer = _explorer(step_index=2)
    data, png = explorer.data, _png(explorer)
    for bad in (-1, len(STEPS), 2.5):
        with pytest.raises(ValueError, match="step_index must be an integer"):
            explorer.update(step_index=bad)
    assert explorer.data is data and _png(explorer) == png
    assert explorer.values["step_index"] == 2
    with pytest.raises(ValueError, match="step_index"):
        _explorer(step_index=len(STEPS))
    with pytest.raises(TypeError, match="unknown value"):
        explorer.update(step=10)


def test_bad_labels_raise():
    with pytest.raises(ValueError, match="key_labels has 2 labels .* 5 keys"):
        widgets.CheckpointExplorer(_weights(), STEPS, key_labels=["a", "b"])
    with pytest.raises(ValueError, match="query_labels has 1 labels .* 3 queries"):
        widgets.CheckpointExplorer(_weights(), STEPS, query_labels=["a"])


def test_explorer_uses_its_own_figure_not_pyplot():
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    _explorer()
    assert plt.get_fignums() == before
