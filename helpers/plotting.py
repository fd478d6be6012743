"""Plots for attention: scores and weights as bars, weights as heatmaps.

Matplotlib gallery style: every function takes ``ax=None`` (or ``axes=None``)
and creates a figure only when none is given, forwards ``**kwargs`` to the
artist it draws, returns the artists, and never calls ``plt.show()``.

Inputs may be NumPy arrays, lists or torch tensors (detached and copied to the
CPU first); this module does not import torch.

Every figure a lesson shows goes through ``show(fig, text, **values)`` instead of
``plt.show()``: it displays the picture with a text description (the ``alt`` of
the image in JupyterLab, the pages and the decks). The plot functions here write
their part of it from the values they plot (``describe(fig)`` reads it); the
lesson adds what to notice. Descriptions are English templates translated by
``helpers.i18n._`` before they are formatted. Weight heatmaps always use
vmin=0 and vmax=1 with the colour-blind-safe sequential map ``viridis``, so two
heatmaps can be compared by eye. Fonts are at least 12 pt, for a projector.
"""

import base64
import html
import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from helpers._arrays import check_labels, check_weights, to_array
from helpers.descriptions import grid_text, heatmap_text, plain, scores_and_weights_text
from helpers.i18n import _, listed, sentences

FONT_SIZE = 13  # axis labels and titles; tick labels use FONT_SIZE - 1 (>= 12)
CMAP = "viridis"
MAX_TICK_LABELS = 30  # beyond this many tokens, label every k-th one


def style_axes(ax, title, xlabel, ylabel):
    """Title and axis labels at FONT_SIZE, tick labels one point smaller."""
    ax.set_title(title, fontsize=FONT_SIZE)
    ax.set_xlabel(xlabel, fontsize=FONT_SIZE)
    ax.set_ylabel(ylabel, fontsize=FONT_SIZE)
    ax.tick_params(labelsize=FONT_SIZE - 1)


def add_colorbar(image, **kwargs):
    """The colorbar of a weights heatmap, labelled; ``**kwargs`` go to colorbar.

    Returns the Colorbar.
    """
    bar = image.axes.figure.colorbar(image, **kwargs)
    bar.set_label("attention weight", fontsize=FONT_SIZE)
    bar.ax.tick_params(labelsize=FONT_SIZE - 1)
    return bar


def default_key_labels(m):
    """The default key names k_0 ... k_{m-1} (keys are numbered from 0)."""
    return [f"$k_{{{s}}}$" for s in range(m)]


def set_token_ticks(axis, labels, count, rotate=False):
    """Label the ticks of ``axis`` with ``labels`` (at most ~30), else integers."""
    if labels is None:
        axis.set_major_locator(MaxNLocator(integer=True))
        return
    step = math.ceil(count / MAX_TICK_LABELS)
    positions = list(range(0, count, step))
    axis.set_ticks(positions, [labels[i] for i in positions])
    if rotate and max(len(label) for label in labels) > 2:
        for tick in axis.get_ticklabels():
            tick.set_rotation(45)
            tick.set_horizontalalignment("right")
            tick.set_rotation_mode("anchor")


def plot_scores_and_weights(scores, weights, labels=None, axes=None, **kwargs):
    """Two bar charts for one query: the scores (left) and their softmax (right).

    ``labels`` name the keys (default k_0 ... k_{m-1}). ``axes`` is a pair of Axes;
    when None a new figure is created. ``**kwargs`` go to both ``ax.bar`` calls.

    Shapes:
        scores: (m,)  weights: (m,) in [0, 1]
        returns (score_bars, weight_bars), two BarContainers of m bars each
    """
    scores = to_array(scores, "scores")
    weights = to_array(weights, "weights")
    if scores.ndim != 1 or weights.ndim != 1 or scores.shape != weights.shape:
        raise ValueError(
            f"scores and weights must be 1-D with one entry per key, shape (m,); "
            f"got scores {tuple(scores.shape)} and weights {tuple(weights.shape)}"
        )
    if scores.size == 0:
        raise ValueError("scores and weights are empty (m=0): nothing to plot")
    check_weights(weights, "weights", "(one per key)")
    m = scores.shape[0]
    labels = check_labels(labels, m, "labels", "keys")
    if labels is None:
        labels = default_key_labels(m)
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    if len(axes) != 2:
        raise ValueError(f"axes must be a pair (scores, weights); got {len(axes)}")
    ax_scores, ax_weights = axes
    x = np.arange(m)

    score_bars = ax_scores.bar(x, scores, **{"color": "tab:blue", **kwargs})
    ax_scores.axhline(0.0, color="black", linewidth=0.8)
    ax_scores.set_title(
        r"scores  $\langle q, k_s \rangle / \sqrt{d_k}$", fontsize=FONT_SIZE
    )
    ax_scores.set_ylabel("score", fontsize=FONT_SIZE)

    weight_bars = ax_weights.bar(x, weights, **{"color": "tab:orange", **kwargs})
    ax_weights.set_ylim(0.0, 1.0)
    ax_weights.set_title(
        r"weights  $a_s = \exp(\mathrm{score}_s)\, /\, Z$", fontsize=FONT_SIZE
    )
    ax_weights.set_ylabel("weight (sums to 1)", fontsize=FONT_SIZE)

    for ax in axes:
        ax.set_xlabel("key s", fontsize=FONT_SIZE)
        set_token_ticks(ax.xaxis, labels, m, rotate=True)
        ax.tick_params(labelsize=FONT_SIZE - 1)
    text = scores_and_weights_text(scores, weights, labels)
    add_description(ax_scores.figure, ax_scores, text)
    return score_bars, weight_bars


def plot_attention(
    weights,
    query_labels=None,
    key_labels=None,
    ax=None,
    colorbar=True,
    title=None,
    **kwargs,
):
    """Heatmap of attention weights: one row per query, one column per key.

    Colours run from 0 to 1 (``vmin``/``vmax``, default map ``viridis``);
    ``**kwargs`` go to ``ax.imshow`` and may override those defaults. Labels
    name the tokens (shown when there are at most ~30, else every k-th one).

    Shapes:
        weights: (n, m) in [0, 1]; query_labels: n strings; key_labels: m strings
        returns the AxesImage
    """
    weights = to_array(weights, "weights")
    if weights.ndim != 2:
        raise ValueError(
            f"weights must be 2-D, (n queries, m keys); got shape "
            f"{tuple(weights.shape)} with {weights.ndim} axes (for heads or a "
            f"batch use plot_attention_grid)"
        )
    if weights.size == 0:
        raise ValueError(f"weights of shape {tuple(weights.shape)} are empty")
    check_weights(weights, "weights", "(n, m)")
    n, m = weights.shape
    query_labels = check_labels(query_labels, n, "query_labels", "queries")
    key_labels = check_labels(key_labels, m, "key_labels", "keys")
    if ax is None:
        width = min(10.0, 2.5 + 0.45 * m)
        height = min(8.0, 1.8 + 0.45 * n)
        _, ax = plt.subplots(figsize=(max(width, 4.5), max(height, 3.0)))
        ax.figure.set_layout_engine("constrained")
    aspect = "equal" if 0.5 <= m / n <= 2 else "auto"
    options = {
        "cmap": CMAP,
        "vmin": 0.0,
        "vmax": 1.0,
        "aspect": aspect,
        "interpolation": "nearest",
        **kwargs,
    }
    image = ax.imshow(weights, **options)
    ax.set_xlabel("keys (m)", fontsize=FONT_SIZE)
    ax.set_ylabel("queries (n)", fontsize=FONT_SIZE)
    set_token_ticks(ax.xaxis, key_labels, m, rotate=True)
    set_token_ticks(ax.yaxis, query_labels, n)
    ax.tick_params(labelsize=FONT_SIZE - 1)
    if title is not None:
        ax.set_title(title, fontsize=FONT_SIZE)
    if colorbar:
        add_colorbar(image, ax=ax)
    text = heatmap_text(weights, query_labels, key_labels, title)
    add_description(ax.figure, ax, text)
    return image


def plot_attention_grid(
    weights,
    row_labels=None,
    col_labels=None,
    query_labels=None,
    key_labels=None,
    axes=None,
    colorbar=True,
    title=None,
    **kwargs,
):
    """A grid of attention heatmaps sharing one colour scale, e.g. examples x heads.

    ``row_labels`` go on the left (e.g. "example 0"), ``col_labels`` above each
    column (e.g. "head 0"). ``axes`` is a (rows, cols) array of Axes; when None a
    figure is created with one shared colorbar. ``title`` becomes the figure's
    suptitle. ``**kwargs`` go to every ``ax.imshow``.

    Shapes:
        weights: (rows, cols, n, m), or (cols, n, m) for a single row
        returns a (rows, cols) object ndarray of AxesImage
    """
    weights = _grid_weights(weights)  # (rows, cols, n, m)
    rows, cols, n, m = weights.shape
    row_labels = check_labels(row_labels, rows, "row_labels", "rows")
    col_labels = check_labels(col_labels, cols, "col_labels", "columns")
    query_labels = check_labels(query_labels, n, "query_labels", "queries")
    key_labels = check_labels(key_labels, m, "key_labels", "keys")

    axes = _grid_axes(axes, weights.shape)  # (rows, cols)
    fig = axes[0, 0].figure

    images = np.empty((rows, cols), dtype=object)
    for r in range(rows):
        for c in range(cols):
            ax = axes[r, c]
            images[r, c] = plot_attention(
                weights[r, c], query_labels, key_labels, ax=ax, colorbar=False, **kwargs
            )
            if r == 0 and col_labels is not None:
                ax.set_title(col_labels[c], fontsize=FONT_SIZE)
            if c > 0:
                ax.set_ylabel("")
                ax.tick_params(labelleft=False)
            elif row_labels is not None:
                ax.set_ylabel(f"{row_labels[r]}\nqueries (n)", fontsize=FONT_SIZE)
            if r < rows - 1:
                ax.set_xlabel("")
                ax.tick_params(labelbottom=False)
    if colorbar:
        add_colorbar(images[0, 0], ax=list(axes.ravel()), shrink=0.9)
    if title is not None:
        fig.suptitle(title, fontsize=FONT_SIZE + 1)
    names = [
        listed([plain(x[i]) for x, i in ((row_labels, r), (col_labels, c)) if x])
        or f"({r}, {c})"
        for r in range(rows)
        for c in range(cols)
    ]
    _replace_descriptions(
        fig, axes.ravel(), grid_text(weights, names, query_labels, key_labels)
    )
    return images


def _grid_weights(weights):
    """Checked float64 weights of shape (rows, cols, n, m) for a grid."""
    weights = to_array(weights, "weights")
    if weights.ndim == 3:
        weights = weights[None]  # one row
    if weights.ndim != 4:
        raise ValueError(
            f"weights must have shape (rows, cols, n, m) or (cols, n, m), e.g. "
            f"(batch, num_heads, n, m); got shape {tuple(weights.shape)}"
        )
    if weights.size == 0:
        raise ValueError(f"weights of shape {tuple(weights.shape)} are empty")
    check_weights(weights, "weights", "(rows, cols, n, m)")
    return weights


def _grid_axes(axes, shape):
    """A (rows, cols) array of Axes: the given ones, or a new figure's."""
    rows, cols, n, m = shape
    if axes is None:
        panel = min(3.6, max(2.2, 0.3 * max(n, m) + 1.2))
        _, axes = plt.subplots(
            rows,
            cols,
            figsize=(min(18.0, panel * cols + 1.8), min(16.0, panel * rows + 0.9)),
            squeeze=False,
            sharex=True,
            sharey=True,
            layout="constrained",
        )
    axes = np.asarray(axes, dtype=object)
    if axes.size != rows * cols:
        raise ValueError(
            f"axes holds {axes.size} Axes but weights of shape "
            f"{tuple(shape)} need rows x cols = {rows} x {cols}"
        )
    return axes.reshape(rows, cols)


def plot_heads(weights, figure=None, **kwargs):
    """One heatmap per head in a grid (4 columns, 8 beyond 8 heads), one colorbar.

    Panels beyond the last head are hidden; only the left column and the bottom
    row keep their tick and axis labels. ``figure``: a matplotlib Figure to fill
    (when None, a new pyplot figure). ``**kwargs`` go to every ``ax.imshow``.

    Shapes:
        weights: (num_heads, n, m) in [0, 1]
        returns a list of num_heads AxesImage
    """
    weights = to_array(weights, "weights")
    if weights.ndim != 3 or weights.size == 0:
        raise ValueError(
            f"weights must have shape (num_heads, n, m); got {tuple(weights.shape)}"
        )
    num_heads = weights.shape[0]
    if figure is None:
        figure = plt.figure(figsize=(9.0, 4.0))
    cols = min(num_heads, 4) if num_heads <= 8 else 8
    rows = math.ceil(num_heads / cols)
    box = {"left": 0.08, "right": 0.88, "bottom": 0.14, "top": 0.84, "hspace": 0.35}
    axes = figure.subplots(rows, cols, squeeze=False, gridspec_kw=box).ravel()
    for ax in axes[num_heads:]:
        ax.set_axis_off()
    small = num_heads <= 4
    images = []
    for h, ax in enumerate(axes[:num_heads]):
        images.append(
            plot_attention(
                weights[h], ax=ax, colorbar=False, title=f"head {h}", **kwargs
            )
        )
        ax.title.set_fontsize(FONT_SIZE if small else FONT_SIZE - 1)
        bottom_row = h >= num_heads - cols
        ax.tick_params(labelleft=h % cols == 0, labelbottom=bottom_row)
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(MaxNLocator(nbins=4 if small else 2, integer=True))
        if h % cols:
            ax.set_ylabel("")
        if not bottom_row:
            ax.set_xlabel("")
    add_colorbar(images[0], cax=figure.add_axes((0.91, 0.14, 0.018, 0.7)))
    names = [f"head {h}" for h in range(num_heads)]
    text = grid_text(weights[None], names)
    _replace_descriptions(figure, axes[:num_heads], text)
    return images


# -- text descriptions: every figure says what it shows and what to notice ----------


def add_description(fig, key, text):
    """Attach ``text`` (whole sentences) to ``fig``'s description; ``key`` replaces."""
    fig.__dict__.setdefault("_course_descriptions", {})[key] = text


def describe(fig):
    """What the plot functions said about ``fig``, in the order they drew."""
    return sentences(getattr(fig, "_course_descriptions", {}).values())


def _replace_descriptions(fig, axes, text):
    """One description for a grid instead of one per panel."""
    notes = fig.__dict__.setdefault("_course_descriptions", {})
    for ax in axes:
        notes.pop(ax, None)
    notes[tuple(axes)] = text


def figure_text(fig, text=None, **values):
    """The whole description: the suptitle, the plot functions' sentences, ``text``.

    ``text`` is an English template (translated by ``helpers.i18n._``, then
    formatted with ``values``): what the figure shows that the helpers did not
    say, and what to notice. Numbers go in as ``values``, never typed by hand.
    """
    title = fig.get_suptitle() if hasattr(fig, "get_suptitle") else ""
    title = plain(title).rstrip(".:")
    if title:
        title = _(title)  # a lesson's suptitle: helpers.po holds the lessons' too
    parts = [_("{title}.").format(title=title) if title else "", describe(fig)]
    if text is not None:
        parts.append(_(text).format(**values))
    alt = sentences(parts)
    if not alt:
        raise ValueError(
            "this figure has no description: draw it with a helpers.plotting "
            "function or give show(fig, text) a sentence saying what it shows"
        )
    return alt


def figure_bundle(fig, alt):
    """The display bundle of ``fig`` described by ``alt``: (data, metadata).

    The picture comes twice: as image/png with ``alt`` in its metadata (what
    nbconvert and the deck planner read) and as a text/html ``<img alt>``, the
    part JupyterLab renders (its image renderer drops a metadata alt), trusted or
    not. text/plain is the description itself.
    """
    from IPython.core.pylabtools import print_figure

    png = base64.b64encode(print_figure(fig, "png", bbox_inches="tight"))
    png = png.decode("ascii")
    img = (
        f'<img class="course-figure" alt="{html.escape(alt)}" '
        f'src="data:image/png;base64,{png}">'
    )
    data = {"image/png": png, "text/html": img, "text/plain": alt}
    return data, {"image/png": {"alt": alt}}


def show(fig, text=None, **values):
    """Show ``fig`` with its description and close it: a lesson's ``plt.show()``.

    ``text`` and ``values``: see ``figure_text``. Returns None.
    """
    from IPython.display import display

    data, metadata = figure_bundle(fig, figure_text(fig, text, **values))
    display(data, raw=True, metadata=metadata)
    plt.close(fig)
