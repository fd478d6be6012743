"""Slider explorers: drag d_k, the sequence length, the temperature or the heads.

Each explorer is a thin shell around a pure, seeded NumPy function that the
tests call directly (``attention_stats``, ``temperature_weights``,
``heads_weights``). The shell keeps ONE matplotlib figure, built with the
object-oriented API (``Figure`` + ``FigureCanvasAgg``, never pyplot, so no extra
inline copy appears), and changes its artists in place on every update.

Why it is fast: the axes, ticks, titles and labels are drawn once and kept as a
background bitmap (one per set of axis limits); an update only restores that
bitmap, redraws the few artists that hold data, and encodes a PNG with light
compression (``png_bytes``) into an ``ipywidgets.Image`` of fixed size (no
flicker). Axis limits move in coarse steps, so most slider moves reuse the
background.

This module uses NumPy only and never imports torch, so a slider callback can
never wait on torch's thread pool.

Usage in a notebook (the explorer shows itself when it is the last expression)::

    widgets.AttentionExplorer(seq_len=16, d_k=64)
"""

import functools
import math
import struct
import zlib

import ipywidgets as W
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from helpers import _validate as v
from helpers import attention_np as anp
from helpers.plotting import _check_labels

FONT_SIZE = 13  # titles and axis labels; ticks use 12 (readable on a projector)
DPI = 90  # with the 9-inch figures: about 810 pixels wide
CMAP = "viridis"
D_K_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
D_MODEL_CHOICES = (4, 6, 8, 12, 16, 24, 32, 64)
_NICE = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0)  # axis limits snap to these x 10^k
_MAX_BACKGROUNDS = 16  # least recently used first out; about 1 MB each
MAX_BARS = 64  # TemperatureExplorer draws more keys as one step outline
SHOWN_RANKS = 32  # AttentionExplorer plots at most the 32 largest weights


# -- pure functions (what the tests call) -------------------------------------------


def entropy(weights, axis=-1):
    """Shannon entropy in nats, -sum_s a_s log a_s, along ``axis`` (0 log 0 = 0).

    Shapes:
        weights: (..., m) -> (...)
    """
    w = np.asarray(weights, dtype=np.float64)
    safe = np.where(w > 0, w, 1.0)
    return -np.sum(np.where(w > 0, w * np.log(safe), 0.0), axis=axis)


def attention_stats(seq_len, d_k, scaled=True, seed=0):
    """Scores and softmax weights of one random query against ``seq_len`` keys.

    q and the keys are drawn from N(0, 1) in ``d_k`` dimensions (q first, then the
    keys, so a longer sequence keeps the same first keys). The scores are
    <q, k_s> / sqrt(d_k) when ``scaled``, else <q, k_s>; their spread is
    predicted to be 1 when scaled and sqrt(d_k) when not.

    Shapes:
        returns a dict: scores (seq_len,), weights (seq_len,), entropy (nats),
        max_entropy = log(seq_len), max_weight, score_std, predicted_std, and the
        inputs seq_len, d_k, scaled, seed
    """
    seq_len = v.positive_int("seq_len", seq_len)
    d_k = v.positive_int("d_k", d_k)
    seed = _seed(seed)
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(d_k)  # (d_k,)
    K = rng.standard_normal((seq_len, d_k))  # (seq_len, d_k)
    scores = K @ q  # (seq_len,)
    if scaled:
        scores = scores / math.sqrt(d_k)
    weights = anp.softmax(scores)  # (seq_len,)
    return {
        "seq_len": seq_len,
        "d_k": d_k,
        "scaled": bool(scaled),
        "seed": seed,
        "scores": scores,
        "weights": weights,
        "entropy": float(entropy(weights)),
        "max_entropy": math.log(seq_len),
        "max_weight": float(weights.max()),
        "score_std": float(scores.std()),
        "predicted_std": 1.0 if scaled else math.sqrt(d_k),
    }


def temperature_weights(scores, temperature):
    """softmax(scores / temperature) along the last axis.

    Small temperatures sharpen the weights towards one-hot on the largest score,
    large ones flatten them towards uniform.

    Shapes:
        scores: (..., m) -> weights (..., m)
    """
    scores = _to_array(scores, "scores")
    temperature = float(temperature)
    if not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a positive number; got {temperature}")
    return anp.softmax(scores / temperature)


def heads_weights(num_heads, d_model, seq_len, seed=0, *, dtype=np.float64):
    """Per-head weights of multi-head self-attention on random data.

    W_Q, W_K, W_V, W_O are drawn first, N(0, 1/d_model) entries, then the tokens
    X ~ N(0, 1) of shape (seq_len, d_model): changing ``num_heads`` keeps the same
    data and projections, and a longer sequence keeps the same first tokens. The
    weights are those of ``attention_np.multi_head_attention`` (W_V and W_O do not
    change them): softmax(Q_h K_h^T / sqrt(d_k)) per head. The projections are
    computed in float64, the scores and the softmax in ``dtype``: float64 (the
    default) or float32 (what HeadsExplorer uses: half the memory traffic, and
    the same colours; weights differ from float64 by about 1e-7).

    Products go through ``np.einsum`` rather than ``@``: NumPy hands even these
    small matmuls to OpenBLAS's thread pool, whose two threads on a busy 2-core
    machine wait on each other (measured: 10x slower than one thread, so a
    slider stalls); einsum's own loops use no threads.

    Shapes:
        returns weights (num_heads, seq_len, seq_len) of ``dtype``, rows summing
        to 1
    """
    d_model = v.positive_int("d_model", d_model)
    d_k = v.heads(d_model, num_heads)
    num_heads = d_model // d_k
    seq_len = v.positive_int("seq_len", seq_len)
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64; got {dtype}")
    rng = np.random.default_rng(_seed(seed))
    W_Q, W_K, _, _ = rng.standard_normal((4, d_model, d_model)) / math.sqrt(
        d_model
    )  # 4 x (d_model, d_model); W_V and W_O are drawn but do not shape the weights
    X = rng.standard_normal((seq_len, d_model))  # (n, d_model)
    Q = np.einsum("nd,de->ne", X, W_Q, optimize=False)  # (n, d_model)
    K = np.einsum("nd,de->ne", X, W_K, optimize=False)  # (n, d_model)
    Q_heads = Q.reshape(seq_len, num_heads, d_k).transpose(1, 0, 2)  # (H, n, d_k)
    K_heads_T = K.reshape(seq_len, num_heads, d_k).transpose(1, 2, 0)  # (H, d_k, n)
    # Contiguous copies in ``dtype``: einsum is fast on them (and slow on views).
    # The scale 1/sqrt(d_k) goes on Q: n x d_model products instead of n x n.
    Q_heads = np.ascontiguousarray(Q_heads / math.sqrt(d_k), dtype=dtype)
    K_heads_T = np.ascontiguousarray(K_heads_T, dtype=dtype)
    scores = np.einsum("hnk,hkm->hnm", Q_heads, K_heads_T, optimize=False)  # (H, n, n)
    scores -= scores.max(axis=-1, keepdims=True)  # the stable softmax, in place
    weights = np.exp(scores, out=scores)  # (H, n, n)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights


def _seed(seed):
    if isinstance(seed, bool) or int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be a non-negative integer; got {seed!r}")
    return int(seed)


def _to_array(x, name):
    """Float64 ndarray from an array, list or (CPU) torch tensor."""
    if hasattr(x, "detach"):  # a torch tensor, without importing torch
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":
            x = x.float()
    x = np.asarray(x)
    if x.dtype == np.bool_ or not np.issubdtype(x.dtype, np.number):
        raise TypeError(f"{name} must hold real numbers; got dtype {x.dtype}")
    x = x.astype(np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(
            f"{name} must be 1-D with one score per key, shape (m,); got shape "
            f"{tuple(x.shape)}"
        )
    if not np.isfinite(x).all():
        raise ValueError(f"{name} of shape {tuple(x.shape)} contains NaN or inf")
    return x


def _nice_ceil(x):
    """The smallest 'nice' number (1, 1.5, 2, 3, 4, 5, 6, 8 x 10^k) >= x."""
    if x <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(x))
    for base in (*_NICE, 10.0):
        if base * power >= x * (1 - 1e-12):
            return base * power
    return 10.0 * power  # pragma: no cover


def _png_chunk(kind, payload):
    crc = zlib.crc32(kind + payload)
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)


def png_bytes(rgb):
    """Encode an 8-bit RGB image as PNG: no row filter, fast zlib level 1.

    Twice as fast as Pillow's encoder (which tries every row filter) on these
    flat-coloured plots, at about the same size; this is most of a slider
    update's budget.

    Shapes:
        rgb: (height, width, 3) uint8 -> the bytes of a PNG file
    """
    rgb = np.asarray(rgb)
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(
            f"rgb must be uint8 of shape (height, width, 3); got {rgb.dtype} "
            f"of shape {tuple(rgb.shape)}"
        )
    height, width, _ = rgb.shape
    rows = np.zeros((height, 1 + 3 * width), dtype=np.uint8)  # byte 0: filter 0
    pixels = rows[:, 1:].reshape(height, width, 3)
    for channel in range(3):  # one plane at a time: 5x faster from an RGBA view
        pixels[..., channel] = rgb[..., channel]
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return b"".join(
        (
            b"\x89PNG\r\n\x1a\n",
            _png_chunk(b"IHDR", header),
            _png_chunk(b"IDAT", zlib.compress(rows.tobytes(), 1)),
            _png_chunk(b"IEND", b""),
        )
    )


def _divisors(n):
    return [h for h in range(1, n + 1) if n % h == 0]


def _row_entropy(weights):
    """``entropy(weights)`` of non-negative weights, kept in their float dtype.

    One add, one log and one fused multiply-sum (no float64 copy, no masks):
    the readout of HeadsExplorer over num_heads x n x n float32 weights. 0 log 0
    = 0: the log is taken of w + tiny (the smallest normal float), which is
    finite at w = 0 and equals w for any w above 1e-30.

    Shapes:
        weights: (..., m) -> (...)
    """
    w = np.asarray(weights)
    log_w = np.add(w, np.finfo(w.dtype).tiny)  # (..., m); 3x faster than np.maximum
    np.log(log_w, out=log_w)
    return -np.einsum("...m,...m->...", w, log_w, optimize=False)


def _block_max(weights, k):
    """The largest weight in each k x k block of the last two axes.

    Blocks at the end are smaller when k does not divide n or m. Slices and
    ``np.maximum`` (k passes over rows, then over columns), 10x faster than a
    reshape-and-max or ``np.maximum.reduceat`` on these short blocks.

    Shapes:
        weights: (..., n, m) -> (..., ceil(n / k), ceil(m / k))
    """
    rows = weights[..., ::k, :].copy()  # (..., ceil(n / k), m)
    for j in range(1, k):
        part = weights[..., j::k, :]
        kept = rows[..., : part.shape[-2], :]
        np.maximum(kept, part, out=kept)
    cells = rows[..., ::k].copy()  # (..., ceil(n / k), ceil(m / k))
    for j in range(1, k):
        part = rows[..., j::k]
        kept = cells[..., : part.shape[-1]]
        np.maximum(kept, part, out=kept)
    return cells


# -- the explorer shell -------------------------------------------------------------


class _Explorer:
    """One persistent figure, sliders, a readout and an Image; see the subclasses."""

    figsize = (9.0, 3.4)

    def __init__(self, values, sliders):
        self.values = dict(values)
        self.sliders = sliders
        self.data = None
        self._syncing = False
        self._backgrounds = {}
        self._generation = 0
        self.figure = Figure(figsize=self.figsize, dpi=DPI)
        self.canvas = FigureCanvasAgg(self.figure)
        width, height = self.canvas.get_width_height()
        self.image = W.Image(
            format="png",
            layout=W.Layout(width=f"{width}px", height=f"{height}px"),
        )
        self.readout = W.HTML(layout=W.Layout(min_height="2.6em"))
        self.widget = W.VBox([W.HBox(list(sliders.values())), self.readout, self.image])
        for name, slider in sliders.items():
            slider.observe(functools.partial(self._on_slider, name), names="value")

    # subclasses provide: _compute(**values) -> data dict (holding the values,
    # normalised), _draw(data) -> the artists that hold data, _readout(data) -> HTML

    def update(self, **values):
        """Recompute with the given values changed, redraw, return the data dict."""
        unknown = set(values) - set(self.values)
        if unknown:
            raise TypeError(
                f"{type(self).__name__}.update() got unknown value(s) "
                f"{sorted(unknown)}; valid names: {list(self.values)}"
            )
        new = {**self.values, **values}
        data = self._compute(**new)  # validates before anything changes
        self.values = {name: data.get(name, value) for name, value in new.items()}
        self._sync_sliders()
        self.data = data
        self._render(self._draw(data))
        self.readout.value = self._readout(data)
        return data

    def _on_slider(self, name, change):
        if not self._syncing:
            self.update(**{name: change["new"]})

    def _sync_sliders(self):
        self._syncing = True
        try:
            for name, slider in self.sliders.items():
                value = self.values[name]
                options = getattr(slider, "options", None)
                if options is not None and value not in options:
                    slider.options = sorted({*options, value})
                if isinstance(slider, W.FloatLogSlider):
                    exponent = math.log10(value)
                    slider.min = min(slider.min, exponent)
                    slider.max = max(slider.max, exponent)
                elif hasattr(slider, "max") and not isinstance(slider, W.Checkbox):
                    slider.min = min(slider.min, value)
                    slider.max = max(slider.max, value)
                if slider.value != value:
                    slider.value = value
        finally:
            self._syncing = False

    def _rebuild(self):
        """Call after changing the static parts of the figure (titles, axes)."""
        self._generation += 1
        self._backgrounds.clear()

    def _render(self, animated):
        """Restore (or draw) the static background, draw ``animated``, make a PNG."""
        key = (self._generation,) + tuple(
            (ax.get_xlim(), ax.get_ylim(), ax.get_title(), ax.get_xlabel())
            for ax in self.figure.axes
        )
        background = self._backgrounds.pop(key, None)  # re-inserted: newest last
        if background is None:
            for artist in animated:
                artist.set_animated(True)
            self.canvas.draw()  # everything except the animated artists
            background = self.canvas.copy_from_bbox(self.figure.bbox)
            if len(self._backgrounds) >= _MAX_BACKGROUNDS:
                self._backgrounds.pop(next(iter(self._backgrounds)))  # the oldest
        else:
            self.canvas.restore_region(background)
        self._backgrounds[key] = background
        renderer = self.canvas.get_renderer()
        for artist in animated:
            artist.draw(renderer)
        self.image.value = png_bytes(np.asarray(self.canvas.buffer_rgba())[..., :3])

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        if bundle is not None:
            bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.values.items())
        return f"{type(self).__name__}({args})"


def _style(ax, title, xlabel, ylabel):
    ax.set_title(title, fontsize=FONT_SIZE)
    ax.set_xlabel(xlabel, fontsize=FONT_SIZE)
    ax.set_ylabel(ylabel, fontsize=FONT_SIZE)
    ax.tick_params(labelsize=FONT_SIZE - 1)


class AttentionExplorer(_Explorer):
    """Why divide by sqrt(d_k): drag d_k, the sequence length, scaling, the seed.

    Left: the histogram of the scores with the predicted N(0, std^2) curve.
    Right: the weights sorted from largest to smallest, against 1/seq_len.
    Readout: the entropy against its maximum log(seq_len), the max weight and
    the measured against the predicted score spread. See ``attention_stats``.
    """

    def __init__(self, seq_len=16, d_k=64, scaled=True, seed=0):
        values = {"seq_len": seq_len, "d_k": d_k, "scaled": scaled, "seed": seed}
        attention_stats(**values)  # validate before building anything
        style = {"description_width": "initial"}
        sliders = {
            "seq_len": W.IntSlider(
                value=seq_len,
                min=min(2, seq_len),
                max=max(512, seq_len),
                description="seq_len",
                continuous_update=True,
                style=style,
            ),
            "d_k": W.SelectionSlider(
                options=sorted({*D_K_CHOICES, d_k}),
                value=d_k,
                description="d_k",
                continuous_update=True,
                style=style,
            ),
            "scaled": W.Checkbox(value=bool(scaled), description="scale by 1/√d_k"),
            "seed": W.IntSlider(
                value=seed,
                min=0,
                max=max(99, seed),
                description="seed",
                continuous_update=True,
                style=style,
            ),
        }
        super().__init__(values, sliders)
        fig = self.figure
        self.ax_scores, self.ax_weights = fig.subplots(1, 2)
        fig.subplots_adjust(left=0.1, right=0.98, bottom=0.18, top=0.88, wspace=0.3)
        self.hist = self.ax_scores.stairs(
            [0.0], [-1.0, 1.0], fill=True, color="tab:blue", alpha=0.8
        )
        (self.curve,) = self.ax_scores.plot([], [], color="black", linewidth=2)
        self.bars = self.ax_weights.stairs(
            [0.0], [0.5, 1.5], fill=True, color="tab:orange"
        )
        (self.uniform,) = self.ax_weights.plot(
            [], [], color="black", linestyle="--", linewidth=1.5
        )
        self.ax_weights.set_ylim(0.0, 1.0)
        _style(self.ax_weights, "weights, largest first", "rank", "weight")
        self.ax_weights.xaxis.set_major_locator(MaxNLocator(integer=True))
        self.update()

    def _compute(self, **values):
        return attention_stats(**values)

    def _draw(self, data):
        scores, std = data["scores"], data["predicted_std"]
        ax = self.ax_scores
        title = (
            r"scores $\langle q, k_s\rangle / \sqrt{d_k}$"
            if data["scaled"]
            else r"scores $\langle q, k_s\rangle$ (unscaled)"
        )
        if ax.get_title() != title:
            _style(ax, title, "score", "density")
        limit = _nice_ceil(max(4.0 * std, 1.05 * np.abs(scores).max()))
        bins = int(np.clip(round(2 * math.sqrt(scores.size)), 6, 40))
        edges = np.linspace(-limit, limit, 2 * math.ceil(bins / 2) + 1)
        density, _ = np.histogram(scores, bins=edges, density=True)
        self.hist.set_data(density, edges)
        x = np.linspace(-limit, limit, 201)
        curve = np.exp(-0.5 * (x / std) ** 2) / (std * math.sqrt(2 * math.pi))
        self.curve.set_data(x, curve)
        ax.set_xlim(-limit, limit)
        ax.set_ylim(0.0, _nice_ceil(1.1 * max(density.max(), curve.max())))

        seq_len = data["seq_len"]
        ranks = np.arange(seq_len + 1) + 0.5  # bar edges around ranks 1..seq_len
        self.bars.set_data(np.sort(data["weights"])[::-1], ranks)
        self.uniform.set_data([0.5, seq_len + 0.5], [1 / seq_len, 1 / seq_len])
        shown = min(2 ** math.ceil(math.log2(seq_len)), SHOWN_RANKS)
        self.ax_weights.set_xlim(0.5, shown + 0.5)
        label = "rank" if seq_len <= SHOWN_RANKS else f"rank (top {SHOWN_RANKS} shown)"
        self.ax_weights.set_xlabel(label, fontsize=FONT_SIZE)
        return [self.hist, self.curve, self.bars, self.uniform]

    def _readout(self, data):
        h, h_max = data["entropy"], data["max_entropy"]
        return (
            f"<span style='font-size:1.15em'>"
            f"<b>entropy</b> {h:.3f} nats of at most log({data['seq_len']}) = "
            f"{h_max:.3f} ({h / h_max if h_max else 1:.0%}) &nbsp;·&nbsp; "
            f"<b>max weight</b> {data['max_weight']:.3f} "
            f"(uniform {1 / data['seq_len']:.3f}) &nbsp;·&nbsp; "
            f"<b>score std</b> {data['score_std']:.2f} "
            f"(predicted {data['predicted_std']:.2f})</span>"
        )


class TemperatureExplorer(_Explorer):
    """Softmax with a temperature: bars of softmax(scores / temperature).

    The dotted outline is temperature 1 and the dashed line the uniform 1/m.
    ``labels`` name the keys (default k_1 ... k_m). See ``temperature_weights``.
    """

    def __init__(self, scores, temperature=1.0, labels=None):
        self.scores = _to_array(scores, "scores")
        temperature_weights(self.scores, temperature)  # validate
        m = self.scores.size
        if labels is None:
            labels = [f"$k_{{{s + 1}}}$" for s in range(m)]
        elif len(labels) != m:
            raise ValueError(f"labels has {len(labels)} labels for {m} scores")
        exponent = math.log10(temperature)
        sliders = {
            "temperature": W.FloatLogSlider(
                value=temperature,
                base=10,
                min=min(math.log10(0.05), exponent),
                max=max(math.log10(5.0), exponent),
                step=0.01,
                description="temperature",
                readout_format=".3g",
                continuous_update=True,
                style={"description_width": "initial"},
                layout=W.Layout(width="28em"),
            )
        }
        super().__init__({"temperature": float(temperature)}, sliders)
        ax = self.ax = self.figure.subplots()
        self.figure.subplots_adjust(left=0.08, right=0.98, bottom=0.2, top=0.88)
        x = np.arange(m)
        if m <= MAX_BARS:  # one patch per key: a gap between bars
            self.bars = ax.bar(x, np.zeros(m), color="tab:orange")
        else:  # one outline for all keys: m patches would be slow to redraw
            self.bars = ax.stairs(np.zeros(m), np.arange(m + 1) - 0.5, fill=True)
            self.bars.set_color("tab:orange")
        reference = anp.softmax(self.scores)  # temperature 1
        (self.reference,) = ax.step(
            np.r_[x - 0.5, m - 0.5],
            np.r_[reference, reference[-1]],
            where="post",
            color="black",
            linestyle=":",
            linewidth=1.5,
            label="temperature 1",
        )
        self.uniform = ax.axhline(
            1 / m, color="black", linestyle="--", linewidth=1, label="uniform"
        )
        ax.set_ylim(0.0, 1.0)
        ax.set_xlim(-0.6, m - 0.4)
        step = math.ceil(m / 16)  # at most 16 labels fit side by side
        ax.set_xticks(x[::step], [str(labels[i]) for i in x[::step]])
        ax.legend(fontsize=FONT_SIZE - 1, loc="upper right")
        _style(ax, r"weights  softmax(score / temperature)", "key s", "weight")
        self.update()

    def _compute(self, temperature):
        weights = temperature_weights(self.scores, temperature)
        return {
            "temperature": float(temperature),
            "scores": self.scores,
            "weights": weights,
            "entropy": float(entropy(weights)),
            "max_entropy": math.log(weights.size),
            "max_weight": float(weights.max()),
        }

    def bar_heights(self):
        """The plotted weights, read back from the artists."""
        if isinstance(self.bars, BarContainer):
            return np.array([bar.get_height() for bar in self.bars])
        return np.asarray(self.bars.get_data().values)

    def _draw(self, data):
        if isinstance(self.bars, BarContainer):
            for bar, height in zip(self.bars, data["weights"], strict=True):
                bar.set_height(height)
            artists = list(self.bars)
        else:
            self.bars.set_data(data["weights"])
            artists = [self.bars]
        return [*artists, self.reference, self.uniform]  # lines over the bars

    def _readout(self, data):
        return (
            f"<span style='font-size:1.15em'>"
            f"<b>temperature</b> {data['temperature']:.3g} &nbsp;·&nbsp; "
            f"<b>entropy</b> {data['entropy']:.3f} nats of at most "
            f"{data['max_entropy']:.3f} &nbsp;·&nbsp; "
            f"<b>max weight</b> {data['max_weight']:.3f}</span>"
        )

    def __repr__(self):
        return (
            f"TemperatureExplorer(scores of shape ({self.scores.size},), "
            f"temperature={self.values['temperature']:.3g})"
        )


class HeadsExplorer(_Explorer):
    """One heatmap per head of multi-head self-attention on random tokens.

    Drag the number of heads (a divisor of d_model), d_model, the sequence
    length and the seed. Colours run from 0 to 1 in every panel. The weights
    are computed in float32 (``heads_weights(..., dtype=np.float32)``). When
    seq_len is larger than a panel's size in pixels, each cell shows the
    largest weight of a k x k block of (query, key) pairs, k the smallest factor
    that fits (``display_block``), so no weight is silently skipped; the
    readout says so. Readout: the mean entropy per row and the largest weight,
    per head. See ``heads_weights``.
    """

    figsize = (9.0, 4.0)

    def __init__(self, num_heads=2, d_model=8, seq_len=6, seed=0):
        values = {
            "num_heads": num_heads,
            "d_model": d_model,
            "seq_len": seq_len,
            "seed": seed,
        }
        heads_weights(**values)  # validate before building anything
        style = {"description_width": "initial"}
        sliders = {
            "num_heads": W.Dropdown(
                options=_divisors(d_model),
                value=num_heads,
                description="num_heads",
                style=style,
                layout=W.Layout(width="11em"),
            ),
            "d_model": W.Dropdown(
                options=sorted({*D_MODEL_CHOICES, d_model}),
                value=d_model,
                description="d_model",
                style=style,
                layout=W.Layout(width="10em"),
            ),
            "seq_len": W.IntSlider(
                value=seq_len,
                min=min(2, seq_len),
                max=max(128, seq_len),
                description="seq_len",
                continuous_update=True,
                style=style,
            ),
            "seed": W.IntSlider(
                value=seed,
                min=0,
                max=max(99, seed),
                description="seed",
                continuous_update=True,
                style=style,
            ),
        }
        super().__init__(values, sliders)
        self.images = []
        self._layout = None
        self.panel_pixels = None  # the side of one square panel, in pixels
        self.display_block = 1  # k: each cell shows the max of a k x k block
        self.update()

    def update(self, **values):
        """As ``_Explorer.update``; a new d_model snaps num_heads to a divisor."""
        if "d_model" in values and "num_heads" not in values:
            d_model = v.positive_int("d_model", values["d_model"])
            divisors = _divisors(d_model)
            fits = [h for h in divisors if h <= self.values["num_heads"]]
            values["num_heads"] = fits[-1]
        return super().update(**values)

    def _sync_sliders(self):
        self._syncing = True
        try:  # num_heads offers the divisors of the current d_model
            divisors = tuple(_divisors(self.values["d_model"]))
            if tuple(self.sliders["num_heads"].options) != divisors:
                self.sliders["num_heads"].options = divisors
        finally:
            self._syncing = False
        super()._sync_sliders()

    def _compute(self, num_heads, d_model, seq_len, seed):
        weights = heads_weights(num_heads, d_model, seq_len, seed, dtype=np.float32)
        return {
            "num_heads": int(num_heads),
            "d_model": int(d_model),
            "seq_len": int(seq_len),
            "seed": int(seed),
            "d_k": d_model // num_heads,
            "weights": weights,
            "entropy": _row_entropy(weights).mean(axis=-1),  # (num_heads,) per row
            "max_weight": weights.max(axis=(-2, -1)),  # (num_heads,)
        }

    def _build_axes(self, num_heads, d_model):
        fig = self.figure
        fig.clear()
        cols = min(num_heads, 4) if num_heads <= 8 else 8
        rows = math.ceil(num_heads / cols)
        axes = fig.subplots(
            rows,
            cols,
            squeeze=False,
            gridspec_kw={
                "left": 0.08,
                "right": 0.88,
                "bottom": 0.14,
                "top": 0.84,
                "hspace": 0.35,
            },
        ).ravel()
        d_k = d_model // num_heads
        fig.suptitle(
            f"{num_heads} head(s), d_model = {d_model}, d_k = {d_k} per head",
            fontsize=FONT_SIZE,
            y=0.97,
        )
        self.images = []
        small = num_heads <= 4
        for h, ax in enumerate(axes):
            if h >= num_heads:
                ax.set_axis_off()
                continue
            image = ax.imshow(
                np.zeros((2, 2)),
                cmap=CMAP,
                vmin=0.0,
                vmax=1.0,
                interpolation="nearest",
                interpolation_stage="data",  # 3x faster than "rgba" here
            )
            self.images.append(image)
            ax.set_title(f"head {h}", fontsize=FONT_SIZE if small else FONT_SIZE - 1)
            bottom_row = h >= num_heads - cols
            ax.tick_params(
                labelsize=12, labelleft=h % cols == 0, labelbottom=bottom_row
            )
            for axis in (ax.xaxis, ax.yaxis):
                axis.set_major_locator(
                    MaxNLocator(nbins=4 if small else 2, integer=True)
                )
            if h % cols == 0:
                ax.set_ylabel("queries (n)", fontsize=FONT_SIZE)
            if bottom_row:
                ax.set_xlabel("keys (m)", fontsize=FONT_SIZE)
        cax = fig.add_axes((0.91, 0.14, 0.018, 0.7))
        bar = fig.colorbar(ScalarMappable(Normalize(0.0, 1.0), cmap=CMAP), cax=cax)
        bar.set_label("attention weight", fontsize=FONT_SIZE)
        bar.ax.tick_params(labelsize=12)
        width, height = self.canvas.get_width_height()
        box = axes[0].get_position(original=True)  # imshow fits a square inside
        self.panel_pixels = max(
            1, math.floor(min(box.width * width, box.height * height))
        )
        self._layout = (num_heads, d_model)
        self._rebuild()

    def _draw(self, data):
        num_heads, d_model = data["num_heads"], data["d_model"]
        if self._layout != (num_heads, d_model):
            self._build_axes(num_heads, d_model)
        n = data["seq_len"]
        k = 1 if n <= self.panel_pixels else math.ceil(n / self.panel_pixels)
        self.display_block = k
        shown = data["weights"] if k == 1 else _block_max(data["weights"], k)
        end = shown.shape[-1] * k - 0.5  # past n - 0.5 when k does not divide n
        extent = (-0.5, end, end, -0.5)  # cell i covers tokens k*i .. k*i + k - 1
        for image, weights in zip(self.images, shown, strict=True):
            image.set_data(weights)
            if tuple(image.get_extent()) != extent:
                image.set_extent(extent)
            ax = image.axes
            if ax.get_xlim() != (-0.5, n - 0.5):  # a short last block is clipped
                ax.set_xlim(-0.5, n - 0.5)
                ax.set_ylim(n - 0.5, -0.5)
        return self.images

    def _readout(self, data):
        per_head = ", ".join(
            f"{h:.2f}/{m:.2f}"
            for h, m in zip(data["entropy"], data["max_weight"], strict=True)
        )
        return (
            f"<span style='font-size:1.15em'>"
            f"<b>d_k per head</b> {data['d_k']} (scale 1/√{data['d_k']}) "
            f"&nbsp;·&nbsp; <b>entropy / max weight per head</b> {per_head} "
            f"(uniform entropy log({data['seq_len']}) = "
            f"{math.log(data['seq_len']):.2f})"
            + (
                ""
                if self.display_block == 1
                else f"<br><i>shown at reduced resolution: {data['seq_len']} tokens "
                f"in {self.panel_pixels}-pixel panels, each cell is the largest "
                f"weight of a {self.display_block}×{self.display_block} block</i>"
            )
            + "</span>"
        )


# -- lesson 09: attention weights over training checkpoints -------------------------


def checkpoint_weights(weights_per_step, steps, step_index):
    """The attention weights saved at one training checkpoint, and how sharp they are.

    ``weights_per_step[i]`` holds the weights of one fixed example saved at training
    step ``steps[i]`` (steps strictly increasing). Masked keys have weight 0.

    Shapes:
        weights_per_step: (num_checkpoints, n, m) in [0, 1]; steps: (num_checkpoints,)
        returns a dict: step_index, step, num_checkpoints, weights (n, m),
        max_weight (n,), top_key (n,), entropy (n,) in nats, mean_max_weight,
        mean_entropy
    """
    weights_per_step, steps = _checkpoint_arrays(weights_per_step, steps)
    count = steps.size
    if (
        isinstance(step_index, bool)
        or not isinstance(step_index, (int, np.integer))
        or not 0 <= step_index < count
    ):
        raise ValueError(
            f"step_index must be an integer in [0, {count - 1}] (one of the "
            f"{count} checkpoints); got {step_index!r}"
        )
    step_index = int(step_index)
    weights = weights_per_step[step_index]  # (n, m)
    max_weight = weights.max(axis=-1)  # (n,)
    row_entropy = entropy(weights)  # (n,)
    return {
        "step_index": step_index,
        "step": int(steps[step_index]),
        "num_checkpoints": count,
        "weights": weights,
        "max_weight": max_weight,
        "top_key": weights.argmax(axis=-1),
        "entropy": row_entropy,
        "mean_max_weight": float(max_weight.mean()),
        "mean_entropy": float(row_entropy.mean()),
    }


def _checkpoint_arrays(weights_per_step, steps):
    """Validate and convert: float64 (num_checkpoints, n, m) weights, int64 steps."""
    if hasattr(weights_per_step, "detach"):  # a torch tensor, without importing torch
        weights_per_step = weights_per_step.detach().cpu().float().numpy()
    w = np.asarray(weights_per_step)
    if w.dtype == np.bool_ or not np.issubdtype(w.dtype, np.number):
        raise TypeError(f"weights_per_step must hold real numbers; got dtype {w.dtype}")
    w = w.astype(np.float64)
    if w.ndim != 3 or w.size == 0:
        raise ValueError(
            f"weights_per_step must have shape (num_checkpoints, n, m): one (n, m) "
            f"matrix of weights per checkpoint; got shape {tuple(w.shape)}"
        )
    if not np.isfinite(w).all() or w.min() < -1e-6 or w.max() > 1 + 1e-6:
        raise ValueError(
            f"weights_per_step of shape {tuple(w.shape)} must be attention weights "
            f"in [0, 1] (softmax outputs, not scores)"
        )
    if hasattr(steps, "detach"):
        steps = steps.detach().cpu().numpy()
    s = np.asarray(steps)
    if s.ndim != 1 or s.size != w.shape[0]:
        raise ValueError(
            f"steps must be 1-D with one training step per checkpoint; got shape "
            f"{tuple(s.shape)} for {w.shape[0]} checkpoints"
        )
    if s.dtype == np.bool_ or not np.issubdtype(s.dtype, np.number):
        raise TypeError(f"steps must be integers; got dtype {s.dtype}")
    if not (np.isfinite(s).all() and np.array_equal(s, np.round(s))):
        raise ValueError(f"steps must be integers; got {s.tolist()}")
    s = s.astype(np.int64)
    if np.any(np.diff(s) <= 0):
        raise ValueError(f"steps must be strictly increasing; got {s.tolist()}")
    return w, s


class CheckpointExplorer(_Explorer):
    """Attention weights of one example as training goes on: drag the checkpoint.

    Left: the (n, m) heatmap saved at the chosen checkpoint (colours 0 to 1).
    Right: the mean largest weight per query at every checkpoint, with the chosen
    one marked. Readout: the training step, the mean largest weight and entropy,
    and (with labels) each query's most attended key. See ``checkpoint_weights``.
    """

    figsize = (9.0, 3.8)

    def __init__(
        self,
        weights_per_step,
        steps,
        query_labels=None,
        key_labels=None,
        step_index=0,
    ):
        self.weights_per_step, self.steps = _checkpoint_arrays(weights_per_step, steps)
        checkpoint_weights(self.weights_per_step, self.steps, step_index)  # validate
        count, n, m = self.weights_per_step.shape
        self.query_labels = _check_labels(query_labels, n, "query_labels", "queries")
        self.key_labels = _check_labels(key_labels, m, "key_labels", "keys")
        sliders = {
            "step_index": W.IntSlider(
                value=int(step_index),
                min=0,
                max=count - 1,
                description="checkpoint",
                continuous_update=True,
                style={"description_width": "initial"},
                layout=W.Layout(width="28em"),
            )
        }
        super().__init__({"step_index": int(step_index)}, sliders)
        fig = self.figure
        self.ax_heat, self.ax_curve = fig.subplots(
            1, 2, gridspec_kw={"width_ratios": (1.15, 1.0)}
        )
        fig.subplots_adjust(left=0.1, right=0.97, bottom=0.24, top=0.9, wspace=0.45)
        ax = self.ax_heat
        self.heatmap = ax.imshow(
            self.weights_per_step[0],
            cmap=CMAP,
            vmin=0.0,
            vmax=1.0,
            aspect="auto",
            interpolation="nearest",
        )
        for axis, labels, size in (
            (ax.xaxis, self.key_labels, m),
            (ax.yaxis, self.query_labels, n),
        ):
            if labels is None:
                axis.set_major_locator(MaxNLocator(integer=True))
            else:
                every = math.ceil(size / 12)
                axis.set_ticks(range(0, size, every), labels[::every])
        if self.key_labels is not None and max(map(len, self.key_labels)) > 2:
            for tick in ax.get_xticklabels():  # long labels: slanted, no overlap
                tick.set_rotation(45)
                tick.set_horizontalalignment("right")
                tick.set_rotation_mode("anchor")
        bar = fig.colorbar(self.heatmap, ax=ax, fraction=0.05, pad=0.03)
        bar.ax.tick_params(labelsize=FONT_SIZE - 1)
        _style(ax, "attention weights", "keys (m)", "queries (n)")

        self.sharpness = self.weights_per_step.max(axis=-1).mean(axis=-1)  # (count,)
        curve = self.ax_curve
        curve.plot(self.steps, self.sharpness, color="tab:blue", marker="o", ms=4)
        (self.marker,) = curve.plot([], [], "o", color="tab:orange", ms=12, zorder=3)
        self.cursor = curve.axvline(self.steps[0], color="tab:orange", linewidth=1.5)
        curve.set_ylim(0.0, 1.05)
        span = max(int(self.steps[-1] - self.steps[0]), 1)
        curve.set_xlim(self.steps[0] - 0.03 * span, self.steps[-1] + 0.03 * span)
        _style(curve, "sharpness over training", "training step", "mean largest weight")
        self.update()

    def _compute(self, step_index):
        return checkpoint_weights(self.weights_per_step, self.steps, step_index)

    def _draw(self, data):
        self.heatmap.set_data(data["weights"])
        self.marker.set_data([data["step"]], [data["mean_max_weight"]])
        self.cursor.set_xdata([data["step"], data["step"]])
        return [self.heatmap, self.cursor, self.marker]

    def _readout(self, data):
        import html

        text = (
            f"<span style='font-size:1.15em'>"
            f"<b>training step</b> {data['step']} (checkpoint "
            f"{data['step_index'] + 1} of {data['num_checkpoints']}) &nbsp;·&nbsp; "
            f"<b>mean largest weight</b> {data['mean_max_weight']:.3f} &nbsp;·&nbsp; "
            f"<b>mean entropy</b> {data['mean_entropy']:.3f} nats"
        )
        if self.query_labels is not None and self.key_labels is not None:
            tops = ", ".join(
                f"{html.escape(self.query_labels[i])}&rarr;"
                f"{html.escape(self.key_labels[j])}"
                for i, j in enumerate(data["top_key"])
            )
            text += f"<br><b>most attended key</b> {tops}"
        return text + "</span>"

    def __repr__(self):
        count, n, m = self.weights_per_step.shape
        return (
            f"CheckpointExplorer({count} checkpoints of shape ({n}, {m}), steps "
            f"{int(self.steps[0])}..{int(self.steps[-1])}, "
            f"step_index={self.values['step_index']})"
        )
