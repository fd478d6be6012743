"""Every explorer frame is described from the values it plots, and the
description follows the slider (the img's title, the live line, the export)."""

import html
import re

import numpy as np
import pytest

from helpers import explorers

SCORES = np.array([0.3, 1.5, -0.2, 0.8, 0.1])
WEIGHTS = np.stack([np.full((3, 3), 1 / 3), np.eye(3)])  # 2 checkpoints

MAKERS = {
    "AttentionExplorer": (lambda: explorers.AttentionExplorer(seq_len=8), "d_k", 4),
    "TemperatureExplorer": (
        lambda: explorers.TemperatureExplorer(SCORES, labels=list("abcde")),
        "temperature",
        0.5,
    ),
    "HeadsExplorer": (lambda: explorers.HeadsExplorer(), "projections", "ones"),
    "CheckpointExplorer": (
        lambda: explorers.CheckpointExplorer(
            WEIGHTS, [0, 100], list("xyz"), list("abc")
        ),
        "step_index",
        1,
    ),
    "RandomFeaturesExplorer": (
        lambda: explorers.RandomFeaturesExplorer(),
        "num_features",
        256,
    ),
    "RecallExplorer": (lambda: explorers.RecallExplorer(), "m", 20),
    "KVBudgetExplorer": (lambda: explorers.KVBudgetExplorer(), "context", 1024),
    "TopKExplorer": (lambda: explorers.TopKExplorer(), "k", 2),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_every_frame_is_described_and_the_description_follows(name):
    make, control, value = MAKERS[name]
    explorer = make()
    first = explorer.description
    assert len(first) > 80 and name not in first
    assert explorer.image.tooltip == first  # the img's title, its accessible name
    assert html.escape(first) in explorer.caption.value
    assert 'aria-live="polite"' in explorer.caption.value
    frame = explorer.render_frame(**{control: value})
    assert frame["description"] != first  # the frame has its own
    assert explorer.description == first  # and the state is kept
    explorer.update(**{control: value})
    assert explorer.description == frame["description"]
    assert explorer.image.tooltip == frame["description"]


def test_temperature_description_states_the_plotted_bars():
    explorer = explorers.TemperatureExplorer(SCORES, labels=list("abcde"))
    for t in (0.25, 1.0, 3.0):
        explorer.update(temperature=t)
        heights = explorer.bar_heights()
        text = explorer.description
        top = heights.argmax()
        assert f"at temperature {t:g}," in text
        assert f"{'abcde'[top]} gets the largest weight, {heights[top]:.2f};" in text
        h = -(heights * np.log(heights)).sum()
        assert f"the entropy is {h:.2f} of at most {np.log(5):.2f} nats" in text
    assert "flatter" in text


def test_attention_description_states_the_readout_numbers():
    explorer = explorers.AttentionExplorer(seq_len=16, d_k=256, scaled=False)
    data, text = explorer.data, explorer.description
    assert "unscaled scores (d_k = 256)" in text
    assert f"standard deviation {data['score_std']:.2f}" in text
    assert f"the largest is {data['max_weight']:.2f}" in text
    assert "saturated" in text
    heights = np.asarray(explorer.bars.get_data().values)  # the sorted weights
    assert float(re.search(r"the largest is (\d\.\d\d)", text)[1]) == pytest.approx(
        heights.max(), abs=0.005
    )
