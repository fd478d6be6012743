"""The readout under each slider explorer: its numbers as one or two HTML lines.

Each function takes the dict an explorer's ``compute`` returns (the maths is in
``helpers.explorers.maths``) and returns the HTML that the explorers put
under the figure; ``Explorer.readout_text`` strips the tags for tests and
exports. Plain Python: no NumPy arrays are built, no widget, no figure.
"""

import html
import math

from helpers.explorers.maths import SATURATED

SEP = " &nbsp;·&nbsp; "  # between two numbers on one line


def span(text):
    """``text`` in a slightly larger font, the size of every readout."""
    return f"<span style='font-size:1.15em'>{text}</span>"


def attention_readout(data):
    """AttentionExplorer: entropy, max weight, the score spread and its predictions."""
    h, h_max = data["entropy"], data["max_entropy"]
    if data["scaled"]:
        row_rule, population_rule = "σ‖q‖/√d_k", "σ²"
    else:
        row_rule, population_rule = "σ‖q‖", "σ²√d_k"
    return span(
        f"<b>entropy</b> {h:.3f} nats of at most log({data['seq_len']}) = "
        f"{h_max:.3f} ({h / h_max if h_max else 1:.0%}){SEP}"
        f"<b>max weight</b> {data['max_weight']:.3f} "
        f"(uniform {1 / data['seq_len']:.3f})<br>"
        f"<b>score std in this row</b> {data['score_std']:.2f}{SEP}"
        f"this row's prediction {row_rule} = {data['row_predicted_std']:.2f} "
        f"(solid){SEP}over random q, k: {population_rule} = "
        f"{data['predicted_std']:.2f} (dashed)"
    )


def temperature_readout(data):
    """TemperatureExplorer: the temperature, the entropy and the max weight."""
    return span(
        f"<b>temperature</b> {data['temperature']:.3g}{SEP}"
        f"<b>entropy</b> {data['entropy']:.3f} nats of at most "
        f"{data['max_entropy']:.3f}{SEP}"
        f"<b>max weight</b> {data['max_weight']:.3f}"
    )


def heads_readout(data, display_block=1, panel_pixels=None):
    """HeadsExplorer: entropy and max weight per head, identical and saturated heads.

    ``display_block`` k > 1 adds a line saying each cell is the largest weight of
    a k x k block of a ``panel_pixels``-wide panel.
    """
    per_head = ", ".join(
        f"{h:.2f}/{m:.2f}"
        for h, m in zip(data["entropy"], data["max_weight"], strict=True)
    )
    identical = "yes" if data["identical"] and data["num_heads"] > 1 else "no"
    text = (
        f"<b>entropy / max weight per head</b> {per_head} "
        f"(uniform entropy log({data['seq_len']}) = "
        f"{math.log(data['seq_len']):.2f}, σ = {data['sigma']:g})<br>"
        f"<b>heads identical</b> {identical}{SEP}"
        f"<b>saturated heads</b> {data['saturated']} of {data['num_heads']} "
        f"(mean largest weight per row > {SATURATED})"
    )
    if display_block > 1:
        text += (
            f"<br><i>shown at reduced resolution: {data['seq_len']} tokens "
            f"in {panel_pixels}-pixel panels, each cell is the largest "
            f"weight of a {display_block}×{display_block} block</i>"
        )
    return span(text)


def checkpoint_readout(data, query_labels=None, key_labels=None):
    """CheckpointExplorer: checkpoint, step, sharpness; with labels, the top keys."""
    text = (
        f"<b>checkpoint</b> {data['step_index'] + 1} of "
        f"{data['num_checkpoints']}{SEP}<b>training step</b> {data['step']}{SEP}"
        f"<b>mean largest weight</b> {data['mean_max_weight']:.3f}{SEP}"
        f"<b>mean entropy</b> {data['mean_entropy']:.3f} nats"
    )
    if query_labels is not None and key_labels is not None:
        tops = ", ".join(
            f"{html.escape(query_labels[i])}&rarr;{html.escape(key_labels[j])}"
            for i, j in enumerate(data["top_key"])
        )
        text += f"<br><b>most attended key</b> {tops}"
    return span(text)
