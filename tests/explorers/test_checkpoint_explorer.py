"""helpers.explorers.CheckpointExplorer (lessons 09 and 11).

Assertions are on data: the computed dicts, the heatmap's array, the marker's
position, the PNG bytes, the readout and the export bundle. The maths
(``checkpoint_weights``) is tested in test_maths.py. Agg via conftest.
"""

import base64
import io

import numpy as np
import pytest
from PIL import Image

from helpers import attention_np as anp
from helpers.explorers import checkpoint, maths

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


# CheckpointExplorer ---------------------------------------------------------------


def _explorer(**kwargs):
    return checkpoint.CheckpointExplorer(
        _weights(),
        STEPS,
        query_labels=["a?", "b?", "c?"],
        key_labels=["A=1", "B=2", "C=3", "D=4", "pad"],
        **kwargs,
    )


def test_explorer_shell_and_export_bundle():
    explorer = _explorer(step_index=1)
    assert list(explorer.sliders) == ["step_index"]
    assert explorer.slider_grid() == {"step_index": list(range(len(STEPS)))}
    height, width, _ = np.asarray(Image.open(io.BytesIO(_png(explorer)))).shape
    assert explorer.image.layout.height == f"{height}px"  # fixed size: no flicker
    assert explorer.image.layout.width == f"{width}px"
    bundle, _ = explorer._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == (
        explorer.widget.model_id
    )
    assert base64.b64decode(bundle["image/png"]) == _png(explorer)
    assert bundle["text/plain"].splitlines()[0] == repr(explorer)
    assert explorer.data["step_index"] == 1  # the second of six checkpoints
    assert "training step 10" in bundle["text/plain"]
    assert explorer.data["step"] == STEPS[1]


def test_slider_counts_checkpoints_from_one_as_the_lessons_do():
    """Issue 12.5: the text says "checkpoint 9 of 15"; so do slider and readout."""
    weights = np.stack([_weights(count=1)[0]] * 15)  # (15, 3, 5)
    explorer = checkpoint.CheckpointExplorer(
        weights, list(range(0, 1500, 100)), step_index=8
    )
    slider = explorer.sliders["step_index"]
    assert slider.value == 8 and slider.label == "9 of 15"
    assert explorer.readout_text().startswith("checkpoint 9 of 15 · training step 800")
    explorer.update(step_index=14)
    assert slider.label == "15 of 15"


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
        assert f"checkpoint {i + 1} of {len(STEPS)}" in explorer.readout_text()
        assert f"training step {STEPS[i]} " in explorer.readout_text()
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
    explorer = checkpoint.CheckpointExplorer(
        w, [0, 5], query_labels=["x?", "y?"], key_labels=["x", "y", "<z>"]
    )
    assert "x?&rarr;x, y?&rarr;y" in explorer.readout.value
    explorer.update(step_index=1)
    assert "x?&rarr;&lt;z&gt;, y?&rarr;x" in explorer.readout.value  # escaped
    unlabelled = checkpoint.CheckpointExplorer(w, [0, 5])
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
        checkpoint.CheckpointExplorer(_weights(), STEPS, key_labels=["a", "b"])
    with pytest.raises(ValueError, match="query_labels has 1 labels .* 3 queries"):
        checkpoint.CheckpointExplorer(_weights(), STEPS, query_labels=["a"])


def test_explorer_uses_its_own_figure_not_pyplot():
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    _explorer()
    assert plt.get_fignums() == before


def test_the_weights_are_validated_once_not_on_every_slider_move(monkeypatch):
    """A (count, n, m) array is checked when the explorer is built; a move of the
    slider only checks its index (the whole array is ~21 MB at n = 512)."""
    calls = []
    real = maths.checkpoint_arrays

    def counted(*args):
        calls.append(1)
        return real(*args)

    for module in (maths, checkpoint):  # wherever the explorer might look it up
        monkeypatch.setattr(module, "checkpoint_arrays", counted)
    explorer = _explorer()
    assert len(calls) == 1
    for step_index in range(6):
        explorer.update(step_index=step_index)
        assert explorer.data["step_index"] == step_index
    assert len(calls) == 1
    with pytest.raises(ValueError, match="step_index must be an integer"):
        explorer.update(step_index=6)
