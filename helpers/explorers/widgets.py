"""Slider explorers: drag d_k, the input scale, the temperature, the heads.

Each explorer is a thin shell: the maths lives in ``explorers.maths`` (pure,
seeded NumPy functions the tests call directly, re-exported by the package),
the readout in ``explorers.readouts``, each frame's text description in
``explorers.descriptions``, the engine in ``explorers.render`` (one persistent
figure, cached backgrounds, a fast PNG; ``render_frame`` and ``slider_grid``
for exports), the heatmaps in ``helpers.plotting``. Never imports torch.
Usage: an explorer shows itself as a cell's last expression,
``explorers.AttentionExplorer(seq_len=16, d_k=64, sigma=1.0)``.
"""

import math

import numpy as np
from matplotlib.container import BarContainer
from matplotlib.ticker import MaxNLocator

from helpers import _validate, plotting
from helpers import attention_np as anp
from helpers._arrays import check_labels, to_array
from helpers.explorers import descriptions, readouts, render
from helpers.explorers.maths import (
    attention_stats,
    block_max,
    checkpoint_weights,
    divisors,
    entropy,
    heads_summary,
    heads_weights,
    normal_density,
    temperature_weights,
)
from helpers.explorers.render import DPI, png_bytes
from helpers.i18n import N_
from helpers.plotting import CMAP, FONT_SIZE

__all__ = [
    "CMAP",
    "DPI",
    "FONT_SIZE",
    "AttentionExplorer",
    "HeadsExplorer",
    "TemperatureExplorer",
    "attention_stats",
    "checkpoint_weights",
    "entropy",
    "heads_weights",
    "png_bytes",
    "temperature_weights",
]

D_K_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
D_MODEL_CHOICES = (4, 6, 8, 12, 16, 24, 32, 64)
SIGMA_CHOICES = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)  # std of the inputs
# Exact decimals, 1.0 among them: the slider starts where the code says.
TEMPERATURE_CHOICES = (
    *(0.05, 0.07, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
    *(1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0),
)
MAX_BARS = 64  # TemperatureExplorer draws more keys as one step outline
SHOWN_RANKS = 32  # AttentionExplorer plots at most the 32 largest weights
SCALE_LABELS = {"d_k": "1/√d_k", "d_model": "1/√d_model"}  # HeadsExplorer menus
PROJECTIONS = {
    "random": N_("random N(0, 1/d_model)"),
    "ones": N_("all ones (seed 003)"),
}


class AttentionExplorer(render.Explorer):
    """Why divide by sqrt(d_k): drag d_k, the length, the scale, the input size.

    Left: the histogram of one query's scores, with two predicted normal curves:
    this row's spread sigma ||q|| / sqrt(d_k) (solid) and the spread over random
    q and k, sigma^2 (dashed; sigma^2 sqrt(d_k) unscaled). Right: the weights
    sorted from largest to smallest, against 1/seq_len. ``sigma`` is the std of
    the entries of q and k: the scale does not adapt to it. See
    ``attention_stats``.
    """

    describe = descriptions.attention

    def __init__(self, seq_len=16, d_k=64, scaled=True, seed=0, sigma=1.0):
        values = {
            "seq_len": seq_len,
            "d_k": d_k,
            "scaled": bool(scaled),
            "seed": seed,
            "sigma": sigma,
        }
        attention_stats(**values)  # validate before building anything
        control = render.make_control
        sliders = {
            "seq_len": control("seq_len", seq_len, low=2, high=512),
            "d_k": control("d_k", d_k, choices=D_K_CHOICES),
            "scaled": control(N_("scale by 1/√d_k"), bool(scaled)),
            "seed": control("seed", seed, low=0, high=99),
            "sigma": control(N_("input std σ"), float(sigma), choices=SIGMA_CHOICES),
        }
        super().__init__(values, sliders)
        fig = self.figure
        self.ax_scores, self.ax_weights = fig.subplots(1, 2)
        fig.subplots_adjust(left=0.1, right=0.98, bottom=0.18, top=0.88, wspace=0.3)
        self.hist = self.ax_scores.stairs(
            [0.0], [-1.0, 1.0], fill=True, color="tab:blue", alpha=0.8
        )
        (self.curve,) = self.ax_scores.plot(
            [], [], color="black", linewidth=2, label="this row"
        )
        (self.population,) = self.ax_scores.plot(
            [], [], color="dimgray", linestyle="--", linewidth=1.5, label="random q, k"
        )
        self.legend = self.ax_scores.legend(fontsize=FONT_SIZE - 1, loc="upper right")
        self.bars = self.ax_weights.stairs(
            [0.0], [0.5, 1.5], fill=True, color="tab:orange"
        )
        (self.uniform,) = self.ax_weights.plot(
            [], [], color="black", linestyle="--", linewidth=1.5
        )
        self.ax_weights.set_ylim(0.0, 1.0)
        plotting.style_axes(self.ax_weights, "weights, largest first", "rank", "weight")
        self.ax_weights.xaxis.set_major_locator(MaxNLocator(integer=True))
        self.update()

    def compute(self, **values):
        return attention_stats(**values)

    def draw(self, data):
        scores = data["scores"]
        row_std, std = data["row_predicted_std"], data["predicted_std"]
        ax = self.ax_scores
        title = (
            r"scores $\langle q, k_s\rangle / \sqrt{d_k}$"
            if data["scaled"]
            else r"scores $\langle q, k_s\rangle$ (unscaled)"
        )
        if ax.get_title() != title:
            plotting.style_axes(ax, title, "score", "density")
        spread = max(row_std, std)
        limit = render.nice_ceil(max(4.0 * spread, 1.05 * np.abs(scores).max()))
        bins = int(np.clip(round(2 * math.sqrt(scores.size)), 6, 40))
        edges = np.linspace(-limit, limit, 2 * math.ceil(bins / 2) + 1)
        density, _ = np.histogram(scores, bins=edges, density=True)
        self.hist.set_data(density, edges)
        x = np.linspace(-limit, limit, 201)
        self.curve.set_data(x, normal_density(x, row_std))
        self.population.set_data(x, normal_density(x, std))
        ax.set_xlim(-limit, limit)
        peak = max(density.max(), 1 / (std * math.sqrt(2 * math.pi)))
        ax.set_ylim(0.0, render.nice_ceil(1.1 * peak))  # a narrow row curve clips

        seq_len = data["seq_len"]
        ranks = np.arange(seq_len + 1) + 0.5  # bar edges around ranks 1..seq_len
        self.bars.set_data(np.sort(data["weights"])[::-1], ranks)
        self.uniform.set_data([0.5, seq_len + 0.5], [1 / seq_len, 1 / seq_len])
        shown = min(2 ** math.ceil(math.log2(seq_len)), SHOWN_RANKS)
        self.ax_weights.set_xlim(0.5, shown + 0.5)
        label = "rank" if seq_len <= SHOWN_RANKS else f"rank (top {SHOWN_RANKS} shown)"
        self.ax_weights.set_xlabel(label, fontsize=FONT_SIZE)
        artists = [self.hist, self.curve, self.population, self.bars, self.uniform]
        return [*artists, self.legend]  # the legend over the bars

    def readout_html(self, data):
        return readouts.attention_readout(data)


class TemperatureExplorer(render.Explorer):
    """Softmax with a temperature: bars of softmax(scores / temperature).

    The dotted outline is temperature 1 and the dashed line the uniform 1/m.
    ``labels`` name the keys (default k_0 ... k_{m-1}). The slider offers
    ``TEMPERATURE_CHOICES`` (1.0 among them). See ``temperature_weights``.
    """

    describe = descriptions.temperature

    def __init__(self, scores, temperature=1.0, labels=None):
        self.scores = to_array(scores, "scores")
        if self.scores.ndim != 1 or self.scores.size == 0:
            raise ValueError(
                f"scores must be 1-D with one score per key, shape (m,); got shape "
                f"{tuple(self.scores.shape)}"
            )
        temperature_weights(self.scores, temperature)  # validate
        m = self.scores.size
        labels = check_labels(labels, m, "labels", "keys")
        self.labels = labels or plotting.default_key_labels(m)
        slider = render.make_control(
            N_("temperature"),
            float(temperature),
            choices=TEMPERATURE_CHOICES,
            width="28em",
        )
        super().__init__({"temperature": float(temperature)}, {"temperature": slider})
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
        plotting.set_token_ticks(ax.xaxis, self.labels, m, rotate=True)
        ax.legend(fontsize=FONT_SIZE - 1, loc="upper right")
        title = r"weights  softmax(score / temperature)"
        plotting.style_axes(ax, title, "key s", "weight")
        self.update()

    def compute(self, temperature):
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

    def draw(self, data):
        if isinstance(self.bars, BarContainer):
            for bar, height in zip(self.bars, data["weights"], strict=True):
                bar.set_height(height)
            artists = list(self.bars)
        else:
            self.bars.set_data(data["weights"])
            artists = [self.bars]
        return [*artists, self.reference, self.uniform]  # lines over the bars

    def readout_html(self, data):
        return readouts.temperature_readout(data)

    def __repr__(self):
        return (
            f"TemperatureExplorer(scores of shape ({self.scores.size},), "
            f"temperature={self.values['temperature']:.3g})"
        )


class HeadsExplorer(render.Explorer):
    """One heatmap per head of multi-head self-attention on random tokens.

    Controls: the number of heads (a dropdown of the divisors of d_model),
    d_model, the sequence length, the seed, and what makes heads differ: the
    ``scale`` 1/sqrt(d_k) (the rule) or 1/sqrt(d_model), the input std
    ``sigma`` of the tokens, and the ``projections`` W_Q, W_K: "random"
    (N(0, 1/d_model)) or "ones" (seed 003's all-ones W_Q, W_K: identical heads,
    saturated at large sigma). Colours run from 0 to 1 in every panel; the
    weights are float32. When seq_len exceeds a panel's size in pixels each
    cell shows the largest weight of a k x k block (``display_block``), and the
    readout says so. See ``heads_weights``.
    """

    describe = descriptions.heads

    figsize = (9.0, 4.0)

    def __init__(
        self,
        num_heads=2,
        d_model=8,
        seq_len=6,
        seed=0,
        *,
        scale="d_k",
        sigma=1.0,
        projections="random",
    ):
        values = {
            "num_heads": num_heads,
            "d_model": d_model,
            "seq_len": seq_len,
            "seed": seed,
            "scale": scale,
            "sigma": sigma,
            "projections": projections,
        }
        heads_weights(**values)  # validate before building anything
        control = render.make_control
        sliders = {
            "num_heads": control(
                "num_heads",
                num_heads,
                choices=divisors(d_model),
                dropdown=True,
                width="11em",
            ),
            "d_model": control(
                "d_model", d_model, choices=D_MODEL_CHOICES, dropdown=True, width="10em"
            ),
            "seq_len": control("seq_len", seq_len, low=2, high=128),
            "seed": control("seed", seed, low=0, high=99),
            "scale": control(
                N_("scale"), scale, choices=SCALE_LABELS, dropdown=True, width="13em"
            ),
            "sigma": control(N_("input std σ"), float(sigma), choices=SIGMA_CHOICES),
            "projections": control(
                "W_Q, W_K",
                projections,
                choices=PROJECTIONS,
                dropdown=True,
                width="20em",
            ),
        }
        super().__init__(values, sliders)
        self.images = []
        self._layout = None
        self._title = None
        self.panel_pixels = None  # the side of one square panel, in pixels
        self.display_block = 1  # k: each cell shows the max of a k x k block
        self.update()

    def update(self, **values):
        """As ``Explorer.update``; a new d_model snaps num_heads to a divisor."""
        if "d_model" in values and "num_heads" not in values:
            d_model = _validate.positive_int("d_model", values["d_model"])
            fits = [h for h in divisors(d_model) if h <= self.values["num_heads"]]
            values["num_heads"] = fits[-1]
        return super().update(**values)

    def choices_for(self, name):
        """num_heads offers the divisors of the current d_model."""
        return divisors(self.values["d_model"]) if name == "num_heads" else None

    def compute(self, **values):
        weights = heads_weights(**values, dtype=np.float32)
        num_heads, d_model = int(values["num_heads"]), int(values["d_model"])
        return {
            **values,
            "num_heads": num_heads,
            "d_model": d_model,
            "seq_len": int(values["seq_len"]),
            "seed": int(values["seed"]),
            "sigma": float(values["sigma"]),
            "d_k": d_model // num_heads,
            "weights": weights,
            **heads_summary(weights),
        }

    def _build_axes(self, num_heads):
        self.figure.clear()
        placeholder = np.zeros((num_heads, 2, 2))  # draw() puts the weights in
        self.images = plotting.plot_heads(
            placeholder, figure=self.figure, interpolation_stage="data"
        )  # interpolation_stage "data": 3x faster than "rgba" here
        width, height = self.canvas.get_width_height()
        box = self.images[0].axes.get_position(original=True)  # a square inside
        self.panel_pixels = max(
            1, math.floor(min(box.width * width, box.height * height))
        )
        self._layout = num_heads
        self._title = None

    def _set_title(self, data):
        d_k, scale = data["d_k"], data["scale"]
        divisor = f"√{d_k}" if scale == "d_k" else f"√d_model = √{data['d_model']}"
        ones = data["projections"] == "ones"
        title = (
            f"{data['num_heads']} head(s), d_model = {data['d_model']}, "
            f"d_k = {d_k}; scores / {divisor}; {'all-ones' if ones else 'random'} W"
        )
        if title != self._title:  # the suptitle is part of the background
            self.figure.suptitle(title, fontsize=FONT_SIZE, y=0.97)
            self._title = title
            self.forget_backgrounds()

    def draw(self, data):
        if self._layout != data["num_heads"]:
            self._build_axes(data["num_heads"])
        self._set_title(data)
        n = data["seq_len"]
        k = 1 if n <= self.panel_pixels else math.ceil(n / self.panel_pixels)
        self.display_block = k
        shown = data["weights"] if k == 1 else block_max(data["weights"], k)
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

    def readout_html(self, data):
        return readouts.heads_readout(data, self.display_block, self.panel_pixels)
