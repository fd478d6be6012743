"""Plots for attention: scores and weights as bars, weights as heatmaps.

Matplotlib gallery style: every function takes ``ax=None`` (or ``axes=None``)
and creates a figure only when none is given, forwards ``**kwargs`` to the
artist it draws, returns the artists, and never calls ``plt.show()``.

Inputs may be NumPy arrays, lists or torch tensors (detached and copied to the
CPU first); this module does not import torch. Weight heatmaps always use
vmin=0 and vmax=1 with the colour-blind-safe sequential map ``viridis``, so two
heatmaps can be compared by eye. Fonts are at least 12 pt, for a projector.
"""

import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

FONT_SIZE = 13  # axis labels and titles; tick labels use FONT_SIZE - 1 (>= 12)
CMAP = "viridis"
MAX_TICK_LABELS = 30  # beyond this many tokens, label every k-th one
_TOL = 1e-6  # weights may overshoot [0, 1] by float rounding


def _to_array(x, name):
    """Return ``x`` as a float64 ndarray; accepts NumPy arrays, lists, tensors."""
    if hasattr(x, "detach"):  # a torch tensor, without importing torch
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":  # NumPy has no bfloat16
            x = x.float()
    x = np.asarray(x)
    if x.dtype == np.bool_ or not np.issubdtype(x.dtype, np.number):
        raise TypeError(f"{name} must hold real numbers; got dtype {x.dtype}")
    if np.issubdtype(x.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real; got dtype {x.dtype}")
    x = x.astype(np.float64)
    if not np.isfinite(x).all():
        raise ValueError(
            f"{name} of shape {tuple(x.shape)} contains NaN or inf; "
            f"plot finite values (a masked weight is 0, not -inf)"
        )
    return x


def _check_weights(w, name, meaning):
    """Raise ValueError unless every entry of ``w`` lies in [0, 1]."""
    lo, hi = float(w.min()), float(w.max())
    if lo < -_TOL or hi > 1 + _TOL:
        raise ValueError(
            f"{name} of shape {tuple(w.shape)} {meaning} must be attention weights "
            f"in [0, 1]; got values from {lo:.4g} to {hi:.4g} "
            f"(did you pass the scores instead of softmax(scores)?)"
        )


_SINGULAR = {"queries": "query", "keys": "key", "rows": "row", "columns": "column"}


def _check_labels(labels, count, name, axis_name):
    """Return ``labels`` as a list of strings, or None; check there are ``count``."""
    if labels is None:
        return None
    labels = [str(label) for label in labels]
    if len(labels) != count:
        raise ValueError(
            f"{name} has {len(labels)} labels but the weights have "
            f"{count} {axis_name}: give one label per {_SINGULAR.get(axis_name)}"
        )
    return labels


def _set_token_ticks(axis, labels, count, rotate=False):
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

    ``labels`` name the keys (default k_1 ... k_m). ``axes`` is a pair of Axes;
    when None a new figure is created. ``**kwargs`` go to both ``ax.bar`` calls.

    Shapes:
        scores: (m,)  weights: (m,) in [0, 1]
        returns (score_bars, weight_bars), two BarContainers of m bars each
    """
    scores = _to_array(scores, "scores")
    weights = _to_array(weights, "weights")
    if scores.ndim != 1 or weights.ndim != 1 or scores.shape != weights.shape:
        raise ValueError(
            f"scores and weights must be 1-D with one entry per key, shape (m,); "
            f"got scores {tuple(scores.shape)} and weights {tuple(weights.shape)}"
        )
    if scores.size == 0:
        raise ValueError("scores and weights are empty (m=0): nothing to plot")
    _check_weights(weights, "weights", "(one per key)")
    m = scores.shape[0]
    labels = _check_labels(labels, m, "labels", "keys")
    if labels is None:
        labels = [f"$k_{{{s + 1}}}$" for s in range(m)]
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
        _set_token_ticks(ax.xaxis, labels, m, rotate=True)
        ax.tick_params(labelsize=FONT_SIZE - 1)
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
    weights = _to_array(weights, "weights")
    if weights.ndim != 2:
        raise ValueError(
            f"weights must be 2-D, (n queries, m keys); got shape "
            f"{tuple(weights.shape)} with {weights.ndim} axes (for heads or a "
            f"batch use plot_attention_grid)"
        )
    if weights.size == 0:
        raise ValueError(f"weights of shape {tuple(weights.shape)} are empty")
    _check_weights(weights, "weights", "(n, m)")
    n, m = weights.shape
    query_labels = _check_labels(query_labels, n, "query_labels", "queries")
    key_labels = _check_labels(key_labels, m, "key_labels", "keys")
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
    _set_token_ticks(ax.xaxis, key_labels, m, rotate=True)
    _set_token_ticks(ax.yaxis, query_labels, n)
    ax.tick_params(labelsize=FONT_SIZE - 1)
    if title is not None:
        ax.set_title(title, fontsize=FONT_SIZE)
    if colorbar:
        bar = ax.figure.colorbar(image, ax=ax)
        bar.set_label("attention weight", fontsize=FONT_SIZE)
        bar.ax.tick_params(labelsize=FONT_SIZE - 1)
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
    weights = _to_array(weights, "weights")
    if weights.ndim == 3:
        weights = weights[None]  # one row
    if weights.ndim != 4:
        raise ValueError(
            f"weights must have shape (rows, cols, n, m) or (cols, n, m), e.g. "
            f"(batch, num_heads, n, m); got shape {tuple(weights.shape)}"
        )
    if weights.size == 0:
        raise ValueError(f"weights of shape {tuple(weights.shape)} are empty")
    _check_weights(weights, "weights", "(rows, cols, n, m)")
    rows, cols, n, m = weights.shape
    row_labels = _check_labels(row_labels, rows, "row_labels", "rows")
    col_labels = _check_labels(col_labels, cols, "col_labels", "columns")
    query_labels = _check_labels(query_labels, n, "query_labels", "queries")
    key_labels = _check_labels(key_labels, m, "key_labels", "keys")

    if axes is None:
        panel = min(3.6, max(2.2, 0.3 * max(n, m) + 1.2))
        fig, axes = plt.subplots(
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
            f"{tuple(weights.shape)} need rows x cols = {rows} x {cols}"
        )
    axes = axes.reshape(rows, cols)
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
        bar = fig.colorbar(images[0, 0], ax=list(axes.ravel()), shrink=0.9)
        bar.set_label("attention weight", fontsize=FONT_SIZE)
        bar.ax.tick_params(labelsize=FONT_SIZE - 1)
    if title is not None:
        fig.suptitle(title, fontsize=FONT_SIZE + 1)
    return images
