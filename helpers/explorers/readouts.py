"""The readout under each slider explorer: its numbers as one or two HTML lines.

Each function takes the dict an explorer's ``compute`` returns (the maths is in
``helpers.explorers.maths``) and returns the HTML that the explorers put
under the figure; ``Explorer.readout_text`` strips the tags for tests and
exports. Plain Python: no NumPy arrays are built, no widget, no figure. The
words are templates (``helpers.i18n._``), filled with numbers already
formatted, so the Chinese edition reads them in Chinese.
"""

import html
import math

from helpers.explorers.maths import SATURATED
from helpers.i18n import _, listed

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
    first = _(
        "<b>entropy</b> {h} nats of at most log({n}) = {h_max} ({share}){sep}"
        "<b>max weight</b> {top} (uniform {uniform})"
    ).format(
        h=f"{h:.3f}",
        n=data["seq_len"],
        h_max=f"{h_max:.3f}",
        share=f"{h / h_max if h_max else 1:.0%}",
        sep=SEP,
        top=f"{data['max_weight']:.3f}",
        uniform=f"{1 / data['seq_len']:.3f}",
    )
    second = _(
        "<b>score std in this row</b> {std}{sep}this row's prediction {row_rule} "
        "= {row} (solid){sep}over random q, k: {rule} = {population} (dashed)"
    ).format(
        std=f"{data['score_std']:.2f}",
        sep=SEP,
        row_rule=row_rule,
        row=f"{data['row_predicted_std']:.2f}",
        rule=population_rule,
        population=f"{data['predicted_std']:.2f}",
    )
    return span(f"{first}<br>{second}")


def temperature_readout(data):
    """TemperatureExplorer: the temperature, the entropy and the max weight."""
    return span(
        _(
            "<b>temperature</b> {t}{sep}<b>entropy</b> {h} nats of at most "
            "{h_max}{sep}<b>max weight</b> {top}"
        ).format(
            t=f"{data['temperature']:.3g}",
            sep=SEP,
            h=f"{data['entropy']:.3f}",
            h_max=f"{data['max_entropy']:.3f}",
            top=f"{data['max_weight']:.3f}",
        )
    )


def heads_readout(data, display_block=1, panel_pixels=None):
    """HeadsExplorer: entropy and max weight per head, identical and saturated heads.

    ``display_block`` k > 1 adds a line saying each cell is the largest weight of
    a k x k block of a ``panel_pixels``-wide panel.
    """
    per_head = listed(
        [
            f"{h:.2f}/{m:.2f}"
            for h, m in zip(data["entropy"], data["max_weight"], strict=True)
        ],
        "names",
    )
    identical = data["identical"] and data["num_heads"] > 1
    text = _(
        "<b>entropy / max weight per head</b> {per_head} (uniform entropy "
        "log({n}) = {log_n}, σ = {sigma})"
    ).format(
        per_head=per_head,
        n=data["seq_len"],
        log_n=f"{math.log(data['seq_len']):.2f}",
        sigma=f"{data['sigma']:g}",
    )
    text += "<br>" + _(
        "<b>heads identical</b> {identical}{sep}<b>saturated heads</b> {saturated} "
        "of {num_heads} (mean largest weight per row > {limit})"
    ).format(
        identical=_("yes") if identical else _("no"),
        sep=SEP,
        saturated=data["saturated"],
        num_heads=data["num_heads"],
        limit=SATURATED,
    )
    if display_block > 1:
        text += "<br>" + _(
            "<i>shown at reduced resolution: {n} tokens in {pixels}-pixel panels, "
            "each cell is the largest weight of a {k}×{k} block</i>"
        ).format(n=data["seq_len"], pixels=panel_pixels, k=display_block)
    return span(text)


def checkpoint_readout(data, query_labels=None, key_labels=None):
    """CheckpointExplorer: checkpoint, step, sharpness; with labels, the top keys."""
    text = _(
        "<b>checkpoint</b> {index} of {count}{sep}<b>training step</b> {step}{sep}"
        "<b>mean largest weight</b> {top}{sep}<b>mean entropy</b> {h} nats"
    ).format(
        index=data["step_index"] + 1,
        count=data["num_checkpoints"],
        sep=SEP,
        step=data["step"],
        top=f"{data['mean_max_weight']:.3f}",
        h=f"{data['mean_entropy']:.3f}",
    )
    if query_labels is not None and key_labels is not None:
        tops = listed(
            [
                f"{html.escape(query_labels[i])}&rarr;{html.escape(key_labels[j])}"
                for i, j in enumerate(data["top_key"])
            ],
            "names",
        )
        text += "<br>" + _("<b>most attended key</b> {tops}").format(tops=tops)
    return span(text)
