"""The text descriptions of the figures: what each shows and what to notice.

``helpers.plotting``'s functions call these with the arrays they plot, so the
numbers in a figure's description are the plotted ones; ``plotting.show``
puts the description in the figure's ``alt``. Each sentence is an English
template passed through ``helpers.i18n._`` before it is formatted; labels and
titles are read as plain text (``plain``: "$k_{2}$" -> "k_2"). NumPy only.
"""

import re

import numpy as np

from helpers.i18n import _, listed, sentences

# mathtext commands a screen reader would spell out letter by letter
SYMBOLS = {"langle": "⟨", "rangle": "⟩", "sigma": "σ", "cdot": "·", "ell": "ℓ"}
SYMBOLS.update({"sqrt": "√", "mu": "μ", "tau": "τ", "alpha": "α", "beta": "β"})
ZERO = 1e-12  # a weight this small is a masked one


def plain(text):
    """A label or title as it should be read aloud: "$k_{2}$" -> "k_2"."""
    text = re.sub(r"\\(?:mathrm|mathit|mathbf|text)\{([^}]*)\}", r"\1", str(text))
    text = re.sub(r"\\([A-Za-z]+)", lambda m: SYMBOLS.get(m[1], m[1]), text)
    text = re.sub(r"\\[,;! ]", " ", text)
    text = text.replace("$", "").replace("{", "").replace("}", "").replace("\\", "")
    return re.sub(r"\s+", " ", text).strip()


def number(x):
    """``x`` rounded for a description: 2 decimals; 2 significant digits if tiny."""
    x = float(x)
    if x == 0 or abs(x) >= 0.01:
        return f"{x:.0f}" if abs(x) >= 1000 else f"{x:.2f}"
    return f"{x:.1e}"


def scores_and_weights_text(scores, weights, labels):
    """The description of ``plot_scores_and_weights``: top and bottom key, order."""
    names = [plain(label) for label in labels]
    if len(names) == 1:
        return _("Bar charts of 1 key {key}: score {score}, weight 1.").format(
            key=names[0], score=number(scores[0])
        )
    top, low = int(np.argmax(scores)), int(np.argmin(scores))
    text = _(
        "Bar charts of {m} keys: their scores (left) and softmax weights (right, "
        "summing to 1). {top} scores highest, {top_score}, and gets weight "
        "{top_weight}; {low} scores lowest, {low_score}, and gets {low_weight}."
    ).format(
        m=len(names),
        top=names[top],
        top_score=number(scores[top]),
        top_weight=number(weights[top]),
        low=names[low],
        low_score=number(scores[low]),
        low_weight=number(weights[low]),
    )
    kept = np.all(np.diff(weights[np.argsort(scores, kind="stable")]) >= -ZERO)
    order = _("The weights keep the order of the scores.")
    if not kept:
        order = _("The weights do not follow the order of the scores.")
    return sentences([text, order])


def _names(labels, count, prefix):
    return (
        [plain(x) for x in labels]
        if labels
        else [f"{prefix}_{i}" for i in range(count)]
    )


def _triangle(offset):
    """Where a lower triangle of 1s ends in row i: column i, i + k or i - k."""
    if offset == 0:
        return _("The 1s form a lower triangle: row i is 1 from column 0 to column i.")
    if offset > 0:
        return _(
            "The 1s form a lower triangle: row i is 1 from column 0 to "
            "column i + {offset}."
        ).format(offset=offset)
    return _(
        "The 1s form a lower triangle: row i is 1 from column 0 to column i - {offset}."
    ).format(offset=-offset)


def heatmap_summary(weights, query_labels=None, key_labels=None):
    """What to notice in one (n, m) heatmap: 0/1 cells, masked keys, top keys."""
    n, m = weights.shape
    queries, keys = _names(query_labels, n, "q"), _names(key_labels, m, "k")
    if np.all((weights == 0) | (weights == 1)):
        ones = int(weights.sum())
        text = _("Every cell is 0 or 1: {ones} of {cells} are 1.").format(
            ones=ones, cells=weights.size
        )
        if 0 < ones < weights.size:  # all 0s or all 1s is no triangle
            for offset in range(-n, m):
                if np.array_equal(weights, np.tril(np.ones((n, m)), offset)):
                    return sentences([text, _triangle(offset)])
        return text
    said = []
    above = np.triu(weights, 1)
    zero_keys = [keys[j] for j in range(m) if np.all(weights[:, j] <= ZERO)]
    if n == m > 1 and np.all(above <= ZERO):
        said.append(
            _(
                "Every weight above the diagonal is 0: each query sees itself "
                "and earlier keys only."
            )
        )
    elif zero_keys:
        said.append(
            _("Keys {keys} get weight 0 from every query.").format(
                keys=listed(zero_keys, "names")
            )
        )
    best = weights.argmax(axis=1)
    if np.allclose(weights, 1 / m, atol=1e-6):
        said.append(
            _("Every query spreads its weight evenly, {uniform} on each key.").format(
                uniform=number(1 / m)
            )
        )
    elif n <= 8:
        pairs = listed(
            _("{query} on {key} ({weight})").format(
                query=queries[i], key=keys[j], weight=number(weights[i, j])
            )
            for i, j in enumerate(best)
        )
        said.append(_("Largest weight per query: {pairs}.").format(pairs=pairs))
    else:
        said.append(
            _(
                "The largest weight per query is {mean} on average "
                "(uniform: {uniform})."
            ).format(mean=number(weights.max(axis=1).mean()), uniform=number(1 / m))
        )
    return sentences(said)


def heatmap_text(weights, query_labels=None, key_labels=None, title=None):
    """The description of ``plot_attention``: its size, colours and summary."""
    n, m = weights.shape
    shape = _(
        "{n} rows (queries) by {m} columns (keys), colour from 0 (dark purple) "
        "to 1 (yellow)."
    ).format(n=n, m=m)
    if title:
        head = _("Heatmap \u201c{title}\u201d: {shape}").format(
            title=plain(title), shape=shape
        )
    else:
        head = _("Heatmap: {shape}").format(shape=shape)
    return sentences([head, heatmap_summary(weights, query_labels, key_labels)])


def grid_text(weights, names, query_labels=None, key_labels=None):
    """The description of a grid of heatmaps: ``names`` one per panel, in order."""
    rows, cols, n, m = weights.shape
    if rows == 1:
        template = _(
            "{count} heatmaps side by side on one colour scale from 0 (dark purple) "
            "to 1 (yellow), each {n} queries by {m} keys."
        )
    else:
        template = _(
            "{count} heatmaps in {rows} rows of {cols} on one colour scale from 0 "
            "(dark purple) to 1 (yellow), each {n} queries by {m} keys."
        )
    text = template.format(count=rows * cols, rows=rows, cols=cols, n=n, m=m)
    panels = weights.reshape(rows * cols, n, m)
    if len(panels) > 1 and all(np.array_equal(p, panels[0]) for p in panels):
        same = _("All panels are identical.")
        return sentences(
            [text, same, heatmap_summary(panels[0], query_labels, key_labels)]
        )
    if len(panels) > 8:
        return text
    said = [
        _("{panel}: {summary}").format(
            panel=name, summary=heatmap_summary(p, query_labels, key_labels)
        )
        for name, p in zip(names, panels, strict=True)
    ]
    return sentences([text, *said])
