"""Figure descriptions: the numbers they state are the plotted ones.

Every figure a lesson shows goes through ``plotting.show``; its description is
the plot helpers' sentences (helpers.descriptions) plus the lesson's own. These
tests read the numbers back from the figure's artists (bar heights, image data)
and compare them with the sentences, not with the inputs.
"""

import re

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers import attention_np as anp
from helpers import descriptions, plotting


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _numbers(text):
    return [float(x) for x in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", text)]


def test_scores_and_weights_description_states_the_plotted_bars():
    scores = np.array([0.3, 1.5, -0.2, 0.8, 0.1])
    labels = ["the", "cat", "sat", "on", "mat"]
    score_bars, weight_bars = plotting.plot_scores_and_weights(
        scores, anp.softmax(scores), labels=labels
    )
    heights = np.array([bar.get_height() for bar in score_bars])
    weights = np.array([bar.get_height() for bar in weight_bars])
    text = plotting.describe(score_bars[0].axes.figure)
    top, low = heights.argmax(), heights.argmin()
    assert text.startswith("Bar charts of 5 keys")
    assert f"{labels[top]} scores highest, {heights[top]:.2f}," in text
    assert f"gets weight {weights[top]:.2f}" in text
    assert f"{labels[low]} scores lowest, {heights[low]:.2f}," in text
    assert f"and gets {weights[low]:.2f}." in text
    assert _numbers(text) == pytest.approx(
        [heights[top], weights[top], heights[low], weights[low]], abs=0.005
    )
    assert "keep the order of the scores" in text


def test_weights_out_of_order_are_said_so():
    scores = np.array([0.0, 1.0, 2.0])
    text = descriptions.scores_and_weights_text(
        scores, np.array([0.5, 0.3, 0.2]), ["a", "b", "c"]
    )
    assert "do not follow the order" in text


def test_one_key():
    text = descriptions.scores_and_weights_text(np.array([0.7]), np.ones(1), ["k"])
    assert text == "Bar charts of 1 key k: score 0.70, weight 1."


def test_heatmap_description_reads_the_image_data():
    rng = np.random.default_rng(0)
    scores = np.where(
        np.tril(np.ones((4, 4))) > 0, rng.standard_normal((4, 4)), -np.inf
    )
    image = plotting.plot_attention(anp.softmax(scores), list("abcd"), list("abcd"))
    shown = image.get_array()
    text = plotting.describe(image.axes.figure)
    assert text.startswith("Heatmap: 4 rows (queries) by 4 columns (keys)")
    assert "Every weight above the diagonal is 0" in text
    stated = re.findall(r"(\w) on (\w) \((\d\.\d\d)\)", text)
    assert len(stated) == 4
    for i, (query, key, weight) in enumerate(stated):
        assert query == "abcd"[i] and key == "abcd"[int(shown[i].argmax())]
        assert float(weight) == pytest.approx(shown[i].max(), abs=0.005)


def test_masked_keys_and_masks_are_named():
    weights = np.array([[0.5, 0.5, 0.0], [0.25, 0.75, 0.0]])
    text = descriptions.heatmap_summary(weights, ["x", "y"], ["a", "b", "pad"])
    assert "Keys pad get weight 0 from every query." in text
    mask = np.tril(np.ones((2, 5)), 3)  # lower-right causal mask, n=2, m=5
    text = descriptions.heatmap_summary(mask)
    assert "Every cell is 0 or 1: 9 of 10 are 1." in text
    assert "row i is 1 from column 0 to column i + 3." in text
    causal = descriptions.heatmap_summary(np.tril(np.ones((4, 4))))
    assert causal.endswith("row i is 1 from column 0 to column i.")
    above = descriptions.heatmap_summary(np.tril(np.ones((4, 4)), -1))
    assert above.endswith("row i is 1 from column 0 to column i - 1.")
    for filled in (np.zeros((3, 4)), np.ones((3, 4))):  # 0 or 12 of 12: no triangle
        assert "triangle" not in descriptions.heatmap_summary(filled)
    uniform = descriptions.heatmap_summary(np.full((3, 4), 0.25))
    assert uniform == "Every query spreads its weight evenly, 0.25 on each key."


def test_large_heatmaps_are_summarised():
    weights = anp.softmax(np.random.default_rng(1).standard_normal((20, 10)))
    text = descriptions.heatmap_summary(weights)
    mean = float(re.search(r"is (\d\.\d\d) on average", text)[1])
    assert mean == pytest.approx(weights.max(axis=1).mean(), abs=0.005)


def test_grid_describes_each_panel_or_says_they_are_identical():
    rng = np.random.default_rng(2)
    w = anp.softmax(rng.standard_normal((2, 3, 3)))
    images = plotting.plot_attention_grid(
        w, col_labels=["head 0", "head 1"], title="Two heads"
    )
    fig = images[0, 0].figure
    text = plotting.figure_text(fig)
    assert text.startswith("Two heads. 2 heatmaps side by side")
    assert "head 0: " in text and "head 1: " in text
    assert text.count("Heatmap") == 0  # one description, not one per panel
    same = plotting.plot_heads(np.stack([w[0]] * 4))
    assert "All panels are identical." in plotting.describe(same[0].axes.figure)


def test_plain_reads_mathtext_aloud():
    assert plotting.plain("$k_{2}$") == "k_2"
    assert plotting.plain(r"random W, std $1/\sqrt{d_{model}}$") == (
        "random W, std 1/√d_model"
    )
    assert descriptions.number(0.3612) == "0.36"
    assert descriptions.number(4.9e-9) == "4.9e-09"
    assert descriptions.number(23771.5) == "23772"


def test_figure_text_adds_the_lesson_sentence_and_refuses_none():
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4])
    with pytest.raises(ValueError, match="no description"):
        plotting.figure_text(fig)
    text = plotting.figure_text(fig, "Line plot: {y:.1f} at the end.", y=4.0)
    assert text == "Line plot: 4.0 at the end."
    fig.suptitle("A title:")
    assert plotting.figure_text(fig, "Done.") == "A title. Done."


def test_templates_are_translated_before_they_are_formatted(monkeypatch):
    seen = []

    def translate(template):
        seen.append(template)
        return template.replace("Line plot", "折线图")

    monkeypatch.setattr(plotting, "_", translate)
    monkeypatch.setattr(descriptions, "_", translate)
    fig, ax = plt.subplots()
    text = plotting.figure_text(fig, "Line plot: {y}.", y=3)
    assert text == "折线图: 3." and seen == ["Line plot: {y}."]
    descriptions.heatmap_summary(np.full((2, 2), 0.5))
    assert "{uniform}" in seen[-1]  # the template, not the formatted sentence


def test_bundle_carries_the_alt_three_ways():
    fig, ax = plt.subplots()
    ax.bar([0, 1], [1, 2])
    data, metadata = plotting.figure_bundle(fig, 'Bars: "a" < b & c')
    assert metadata == {"image/png": {"alt": 'Bars: "a" < b & c'}}
    assert data["text/plain"] == 'Bars: "a" < b & c'
    assert data["text/html"] == (
        '<img class="course-figure" alt="Bars: &quot;a&quot; &lt; b &amp; c" '
        f'src="data:image/png;base64,{data["image/png"]}">'
    )
    assert data["image/png"].startswith("iVBORw0KGgo")  # a PNG


def test_show_displays_once_and_closes(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(
        IPython.display, "display", lambda *a, **k: shown.append((a, k))
    )
    fig, axes = plt.subplots(1, 2)
    plotting.plot_scores_and_weights([1.0, 2.0], [0.27, 0.73], axes=axes)
    assert plotting.show(fig, "Notice.") is None
    ((args, kwargs),) = shown
    assert kwargs["raw"] is True
    assert args[0]["text/plain"].endswith("Notice.")
    assert kwargs["metadata"]["image/png"]["alt"] == args[0]["text/plain"]
    assert not plt.fignum_exists(fig.number)  # no second copy from the backend


def test_chinese_descriptions_join_sentences_and_lists_as_chinese_does(monkeypatch):
    """No space after a full stop 。, lists joined with ，、； not ", " (the
    Chinese walk-through found both); the same figures in English keep them."""
    from helpers import i18n
    from helpers.explorers import descriptions as explorer_descriptions

    weights = np.array([[0.7, 0.3, 0.0], [0.2, 0.8, 0.0]])
    heads = {"entropy": [0.5, 0.9], "max_weight": [0.8, 0.6], "num_heads": 2}
    heads.update(seq_len=4, d_model=8, d_k=4, projections="random", sigma=1.0)
    heads.update(saturated=0, identical=False)
    said = {}
    for lang in ("en", "zh"):
        monkeypatch.setenv("COURSE_LANG", lang)
        said[lang] = (
            descriptions.heatmap_text(weights, ["x", "y"], ["a", "b", "pad"]),
            descriptions.heatmap_summary(np.tril(np.ones((3, 3)))),
            explorer_descriptions.heads(None, heads),
        )
    i18n.reload()
    heatmap, triangle, per_head = said["zh"]
    for text in said["zh"]:
        assert "。 " not in text and not re.search(r"[\u4e00-\u9fff）], ", text), text
    assert "键 pad 从每个查询" in heatmap  # the Chinese catalogue answered
    assert "（0.70），查询 y" in heatmap  # the pairs: ，
    assert "1。1 组成一个下三角" in triangle and "第 i 列都是 1。" in triangle
    assert "；" in per_head and "; " not in per_head
    heatmap, triangle, per_head = said["en"]
    assert "(yellow). Keys pad get weight 0" in heatmap
    assert "x on a (0.70), y on b (0.80)." in heatmap
    assert "are 1. The 1s form" in triangle and "; head 1 " in per_head
