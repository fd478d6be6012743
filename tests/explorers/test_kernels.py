"""Lesson 12's explorers driven directly: data, artists, export frames."""

import numpy as np

from helpers import explorers
from helpers.explorers import kernels, render
from tests.explorers.test_widgets import _check_explorer_shell, _png


def test_random_features_explorer_draws_its_data():
    e = explorers.RandomFeaturesExplorer(num_features=16)
    _check_explorer_shell(e, ["num_features", "sigma", "seed"])
    data = e.data
    np.testing.assert_allclose(e.points.get_offsets()[:, 0], data["exact"].ravel())
    heights = [bar.get_height() for bar in e.bars]
    np.testing.assert_allclose(heights, data["weights_estimate"][0])
    before = data["kernel_error"]
    png = _png(e)
    e.update(num_features=4096)
    assert e.data["kernel_error"] < before / 4
    assert _png(e) != png
    assert "r = 4096 features" in e.readout_text()


def test_recall_explorer_draws_each_memory():
    e = explorers.RecallExplorer(m=8, d_k=16)
    _check_explorer_shell(e, ["m", "d_k", "seed"])
    for name, line in e.lines.items():
        np.testing.assert_allclose(
            line.get_data().values, np.minimum(e.data["errors"][name], 2.5)
        )
    e.update(m=40)
    assert e.ax.get_xlim() == (0.5, 40.5)
    assert len(e.lines["delta"].get_data().values) == 40
    assert "= 960 numbers" in e.readout_text()  # 40 (16 + 8) numbers


def test_render_png_keeps_the_state_and_the_first_control_is_the_key_one():
    """tools/explorer_export falls back to the first control: the one to move."""
    for cls, key in (
        (kernels.RandomFeaturesExplorer, "num_features"),
        (kernels.RecallExplorer, "m"),
    ):
        e = cls()
        assert list(e.slider_grid())[0] == key
        values = dict(e.values)
        grid = e.slider_grid()[key]
        frame = e.render_frame(**{key: grid[-1]})
        assert frame["png"].startswith(b"\x89PNG") and frame["values"][key] == grid[-1]
        assert e.values == values


def test_explorers_are_exported_lazily():
    assert explorers.RecallExplorer is kernels.RecallExplorer
    assert "RandomFeaturesExplorer" in explorers.__all__
    assert isinstance(explorers.RecallExplorer(), render.Explorer)
