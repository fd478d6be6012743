"""What each explorer's frame shows, as a sentence a screen reader reads.

One function per explorer, ``name(explorer, data)`` with the dict its
``compute`` returned, so the numbers are the ones it plots; each explorer class
binds one as its ``describe`` method. The text is the image's title in
JupyterLab, the polite live line under the figure, and the alt of every frame
an exported page swaps in. English templates through ``helpers.i18n._``,
formatted after translation. Plain Python and NumPy; no widget, no figure.
"""

import numpy as np

from helpers.descriptions import number, plain
from helpers.explorers.maths import SATURATED
from helpers.i18n import _, listed, sentences


def _sharpness(max_weight):
    """A sentence on how concentrated a softmax is, from its largest weight."""
    if max_weight > SATURATED:
        return _("The softmax is saturated: nearly all the weight is on one key.")
    return ""


def attention(explorer, data):
    """AttentionExplorer: the score histogram, its two curves, the sorted weights."""
    n = data["seq_len"]
    if data["scaled"]:
        scores = _("one query's {n} scores divided by √d_k (d_k = {d_k})")
    else:
        scores = _("one query's {n} unscaled scores (d_k = {d_k})")
    text = _(
        "Left, a histogram of {scores}, standard deviation {std}, with this "
        "row's predicted normal curve (solid, {row}) and the one over random q "
        "and k (dashed, {population}). Right, the {n} weights sorted largest "
        "first against the uniform {uniform} (dashed): the largest is {top}, "
        "entropy {h} of at most {h_max} nats."
    ).format(
        scores=scores.format(n=n, d_k=data["d_k"]),
        std=number(data["score_std"]),
        row=number(data["row_predicted_std"]),
        population=number(data["predicted_std"]),
        n=n,
        uniform=number(1 / n),
        top=number(data["max_weight"]),
        h=number(data["entropy"]),
        h_max=number(data["max_entropy"]),
    )
    return sentences([text, _sharpness(data["max_weight"])])


def temperature(explorer, data):
    """TemperatureExplorer: the bars at this temperature against temperature 1."""
    weights, t = data["weights"], data["temperature"]
    top = int(np.argmax(weights))
    text = _(
        "Bar chart of the softmax weights of {m} keys at temperature {t}, over "
        "the temperature-1 weights (dotted outline) and the uniform {uniform} "
        "(dashed line). {key} gets the largest weight, {top}; the entropy is "
        "{h} of at most {h_max} nats."
    ).format(
        m=weights.size,
        t=f"{t:g}",
        uniform=number(1 / weights.size),
        key=plain(explorer.labels[top]),
        top=number(weights[top]),
        h=number(data["entropy"]),
        h_max=number(data["max_entropy"]),
    )
    if t < 1:
        notice = _("Below 1 the bars are sharper than the outline.")
    elif t > 1:
        notice = _("Above 1 the bars are flatter than the outline.")
    else:
        notice = _("At 1 the bars fill the outline.")
    return sentences([text, notice])


def heads(explorer, data):
    """HeadsExplorer: one heatmap per head, their sharpness, identical or not."""
    per_head = listed(
        [
            _("head {h} {entropy} nats, largest {top}").format(
                h=h, entropy=number(e), top=number(w)
            )
            for h, (e, w) in enumerate(
                zip(data["entropy"], data["max_weight"], strict=True)
            )
        ],
        "clauses",
    )
    text = _(
        "{count} heatmaps, one per head, of {n} by {n} self-attention weights "
        "(d_model = {d_model}, d_k = {d_k}, {projections} W_Q and W_K, input "
        "std {sigma}), colour from 0 (dark purple) to 1 (yellow). Mean entropy "
        "and largest weight: {per_head}. {saturated} of {count} heads are "
        "saturated."
    ).format(
        count=data["num_heads"],
        n=data["seq_len"],
        d_model=data["d_model"],
        d_k=data["d_k"],
        projections=_("all-ones") if data["projections"] == "ones" else _("random"),
        sigma=f"{data['sigma']:g}",
        per_head=per_head,
        saturated=data["saturated"],
    )
    if data["identical"] and data["num_heads"] > 1:
        text = sentences([text, _("All heads are identical.")])
    return text


def checkpoint(explorer, data):
    """CheckpointExplorer: the heatmap at this checkpoint and the sharpness curve."""
    n, m = data["weights"].shape
    curve = explorer.sharpness
    text = _(
        "Left, the heatmap of the attention weights, {n} queries by {m} keys, at "
        "checkpoint {i} of {count} (training step {step}). Right, the mean "
        "largest weight per query at every checkpoint, from {first} to {last}; "
        "{now} at this one."
    ).format(
        n=n,
        m=m,
        i=data["step_index"] + 1,
        count=data["num_checkpoints"],
        step=data["step"],
        first=number(curve[0]),
        last=number(curve[-1]),
        now=number(data["mean_max_weight"]),
    )
    queries, keys = explorer.query_labels, explorer.key_labels
    if queries is None or keys is None or n > 8:
        return text
    tops = listed(
        _("{query} on {key}").format(query=plain(queries[i]), key=plain(keys[j]))
        for i, j in enumerate(data["top_key"])
    )
    return sentences([text, _("Most attended key: {tops}.").format(tops=tops)])


def random_features(explorer, data):
    """RandomFeaturesExplorer: the kernel scatter and query 0's weights."""
    return _(
        "Left, a scatter of the estimated kernel against the exact exp(q·k/√d_k) "
        "for every query and key, with the diagonal where they agree (dashed). "
        "Right, query 0's weights, estimated (bars) and exact (outline). With "
        "r = {r} features the kernel is off by {error} on average and a weight "
        "by at most {weight_error}."
    ).format(
        r=data["num_features"],
        error=f"{data['kernel_error']:.1%}",
        weight_error=number(data["weight_error"]),
    )


def recall(explorer, data):
    """RecallExplorer: the error per stored pair of the three memories."""
    mean = data["mean"]
    return _(
        "Step lines of the recall error of each of {m} stored pairs (d_k = "
        "{d_k}): softmax attention (solid black), linear attention (dashed "
        "orange), the delta rule (dotted blue). Mean errors: softmax {softmax}, "
        "linear {linear}, delta rule {delta}."
    ).format(
        m=data["m"],
        d_k=data["d_k"],
        softmax=number(mean["softmax"]),
        linear=number(mean["linear"]),
        delta=number(mean["delta"]),
    )


def budget(explorer, data):
    """KVBudgetExplorer: every model's cache curve, the chosen one at a context."""
    from helpers.explorers.budget import CONTEXT_CHOICES, size_text

    return _(
        "Line plot, log-log: the KV cache of one sequence in GiB against the "
        "context from {low} to {high} tokens for {count} models, each with its "
        "own marker. {model} is drawn bold: at {context} tokens its cache holds "
        "{size}."
    ).format(
        low=f"{CONTEXT_CHOICES[0]:,}",
        high=f"{CONTEXT_CHOICES[-1]:,}",
        count=len(explorer.lines),
        model=data["model"],
        context=f"{data['context']:,}",
        size=size_text(data["parts"]["total"]),
    )


def top_k(explorer, data):
    """TopKExplorer: the kept weights and the error against k."""
    return _(
        "Left, one query's weights over {m} keys sorted largest first: all keys "
        "(grey) and the {k} kept (orange). Right, the output error (solid) and "
        "the weight dropped (dashed) against k. At k = {k}: error {error}, "
        "weight dropped {dropped}."
    ).format(
        m=data["m"],
        k=data["k"],
        error=number(data["error"]),
        dropped=f"{data['dropped']:.1%}",
    )
