"""Lesson 13's explorers driven directly: the data they draw, not their pictures."""

import numpy as np
import pytest

from helpers import explorers
from helpers.explorers import budget_maths as bm


def test_kv_budget_explorer_follows_its_controls():
    e = explorers.KVBudgetExplorer(context=8192, model="Llama 3 8B")
    assert e.data["parts"]["total"] == 2**30
    assert "1.00 GiB" in e.readout_text()
    e.sliders["model"].value = "Mistral 7B v0.1"  # as a learner would
    e.sliders["context"].value = 131072
    assert e.values == {"context": 131072, "model": "Mistral 7B v0.1"}
    assert (
        e.data["parts"]["total"] == bm.cache_bytes("Mistral 7B v0.1", 131072)["total"]
    )
    x, y = e.dot.get_data()
    assert x[0] == 131072 and y[0] == pytest.approx(0.5)
    bold_x, bold_y = e.bold.get_data()
    np.testing.assert_allclose(
        bold_y, bm.cache_curve("Mistral 7B v0.1", bold_x) / 2**30
    )
    assert "sliding-window layers 512.0 MiB" in e.readout_text()


def test_kv_budget_explorer_exports_frames():
    e = explorers.KVBudgetExplorer()
    grid = e.slider_grid()
    assert grid["model"] == list(bm.CONFIGS) and 1024 in grid["context"]
    before = dict(e.values)
    png = e.render_png(model="DeepSeek-V3", context=1024)
    assert png.startswith(b"\x89PNG") and e.values == before
    assert png != e.png()


def test_kv_budget_explorer_refuses_an_unknown_model():
    with pytest.raises(ValueError, match="model must be one of"):
        explorers.KVBudgetExplorer(model="GPT-5")


def test_top_k_explorer_follows_its_controls():
    e = explorers.TopKExplorer(k=8, preset="spread")
    assert e.data["error"] == pytest.approx(bm.top_k_stats(8)["error"])
    e.sliders["k"].value = 2
    e.sliders["preset"].value = "concentrated"
    stats = bm.top_k_stats(2, "concentrated")
    assert e.data["k"] == 2 and e.data["error"] == pytest.approx(stats["error"])
    heights = np.asarray(e.kept_bars.get_data().values)
    assert (heights > 0).sum() == 2
    assert e.error_dot.get_data()[0][0] == 2
    assert "k 2 of 128 keys" in e.readout_text()
    assert set(e.slider_grid()) == {"k", "preset"}
    assert e.render_png(k=128).startswith(b"\x89PNG")
