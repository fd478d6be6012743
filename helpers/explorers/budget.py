"""Lesson 13's explorers: the KV-cache budget of published models, top-k attention.

``KVBudgetExplorer``: drag the context length and pick a model; the figure
shows every model's cache against the context (log-log), the chosen one bold,
and the readout breaks its size down by layer kind. ``TopKExplorer``: drag k;
one query's weights with all keys and with its k best, and the error of top-k
attention against full attention for every k. The maths is in
``explorers.budget_maths``; the engine is ``explorers.render``. Never imports
torch.
"""

import numpy as np
from matplotlib.ticker import FixedLocator, FuncFormatter

from helpers import plotting
from helpers.explorers import descriptions, render
from helpers.explorers.budget_maths import (
    CONFIGS,
    GIB,
    TOP_K_PRESETS,
    cache_bytes,
    cache_curve,
    top_k_stats,
)
from helpers.explorers.readouts import SEP, span
from helpers.i18n import N_, _
from helpers.plotting import FONT_SIZE

__all__ = ["CONTEXT_CHOICES", "KVBudgetExplorer", "TopKExplorer"]

CONTEXT_CHOICES = tuple(2**p for p in range(10, 19))  # 1,024 to 262,144 tokens
COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")
MARKERS = ("o", "s", "^", "D", "v")  # the models told apart without colour
KIND_WORDS = {
    "full": N_("full-attention layers"),
    "sliding": N_("sliding-window layers"),
    "mla": N_("MLA latents"),
    "linear": N_("Gated DeltaNet states (fixed)"),
}


def _gib_label(value, _position):
    """1/64, 1/16, ... 1, 4, 16, 64 on the GiB axis."""
    return f"{value:g}" if value >= 1 else f"1/{1 / value:g}"


def size_text(nbytes):
    """Bytes as MiB below 1 GiB, else GiB."""
    if nbytes < GIB:
        return f"{nbytes / 2**20:,.1f} MiB"
    return f"{nbytes / GIB:,.2f} GiB"


class KVBudgetExplorer(render.Explorer):
    """KV-cache bytes per sequence against context length, for five published models.

    Every model's curve is drawn (bfloat16 caches, one sequence); ``model`` is
    drawn bold with a dot at ``context``. See ``budget_maths.cache_bytes`` and
    ``budget_maths.CONFIGS`` (each configuration with its source).
    """

    describe = descriptions.budget

    figsize = (9.0, 4.2)

    def __init__(self, context=32768, model="Llama 3 8B"):
        values = {"context": int(context), "model": model}
        self.compute(**values)  # validate before building anything
        control = render.make_control
        sliders = {
            "context": control(
                N_("context (tokens)"),
                int(context),
                choices=CONTEXT_CHOICES,
                width="30em",
            ),
            "model": control(
                N_("model"),
                model,
                choices={c: c for c in CONFIGS},
                dropdown=True,
                width="20em",
            ),
        }
        super().__init__(values, sliders)
        ax = self.ax = self.figure.subplots()
        self.figure.subplots_adjust(left=0.1, right=0.72, bottom=0.17, top=0.9)
        grid = np.array(CONTEXT_CHOICES)
        self.lines = {}
        for name, color, marker in zip(CONFIGS, COLORS, MARKERS, strict=True):
            (self.lines[name],) = ax.plot(
                grid,
                cache_curve(name, grid) / GIB,
                color=color,
                marker=marker,
                lw=1.5,
                label=name,
            )
        (self.bold,) = ax.plot([], [], color="black", lw=4, alpha=0.35)
        (self.dot,) = ax.plot([], [], "o", color="black", markersize=9)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlim(grid[0] / 1.2, grid[-1] * 1.2)
        ax.set_ylim(1 / 64, 64)
        ax.yaxis.set_major_locator(FixedLocator([4.0**p for p in range(-3, 4)]))
        ax.yaxis.set_major_formatter(FuncFormatter(_gib_label))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1024:g}K"))
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=FONT_SIZE - 2, loc="upper left", bbox_to_anchor=(1.01, 1))
        plotting.style_axes(
            ax, "KV cache of one sequence (bfloat16)", "context (tokens)", "GiB"
        )
        self.update()

    def compute(self, context, model):
        parts = cache_bytes(model, context)
        return {"context": int(context), "model": model, "parts": parts}

    def draw(self, data):
        grid = np.array(CONTEXT_CHOICES)
        name = data["model"]
        self.bold.set_data(grid, cache_curve(name, grid) / GIB)
        self.dot.set_data([data["context"]], [data["parts"]["total"] / GIB])
        return [self.bold, self.dot]

    def readout_html(self, data):
        parts = data["parts"]
        pieces = SEP.join(
            f"{_(KIND_WORDS[kind])} {size_text(nbytes)}"
            for kind, nbytes in parts.items()
            if kind != "total"
        )
        head = _(
            "<b>{model}</b> at {context} tokens: <b>{total}</b> per sequence"
        ).format(
            model=data["model"],
            context=f"{data['context']:,}",
            total=size_text(parts["total"]),
        )
        return span(f"{head}<br>{pieces}")


class TopKExplorer(render.Explorer):
    """Top-k sparse attention: one query's weights kept and dropped, and the error.

    Left: query 0's weights over m = 128 keys, largest first, with the k kept
    ones coloured. Right: the mean output error (in units of a value's length)
    and the mean dropped weight, for every k, with a dot at this k. ``preset``:
    random queries and keys, or queries that match a few keys. See
    ``budget_maths.top_k_stats``.
    """

    describe = descriptions.top_k

    figsize = (9.0, 3.6)

    def __init__(self, k=8, preset="spread"):
        values = {"k": int(k), "preset": preset}
        top_k_stats(**values)  # validate
        control = render.make_control
        ks = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)
        sliders = {
            "k": control(N_("k (keys kept)"), int(k), choices=ks, width="26em"),
            "preset": control(
                N_("attention"),
                preset,
                choices=TOP_K_PRESETS,
                dropdown=True,
                width="22em",
            ),
        }
        super().__init__(values, sliders)
        self.ax_w, self.ax_e = self.figure.subplots(1, 2)
        self.figure.subplots_adjust(
            left=0.08, right=0.98, bottom=0.2, top=0.88, wspace=0.3
        )
        m = 128
        self.all_bars = self.ax_w.stairs(
            np.zeros(m), np.arange(m + 1) + 0.5, fill=True, color="lightgray"
        )
        self.kept_bars = self.ax_w.stairs(
            np.zeros(m), np.arange(m + 1) + 0.5, fill=True, color="tab:orange"
        )
        self.ax_w.set_xlim(0.5, m + 0.5)
        plotting.style_axes(
            self.ax_w, "query 0: weights, largest first", "rank", "weight"
        )
        (self.error_line,) = self.ax_e.plot([], [], color="tab:blue", label="error")
        (self.dropped_line,) = self.ax_e.plot(
            [], [], color="tab:red", ls="--", label="weight dropped"
        )
        (self.error_dot,) = self.ax_e.plot([], [], "o", color="tab:blue")
        (self.dropped_dot,) = self.ax_e.plot([], [], "o", color="tab:red")
        self.ax_e.set_xscale("log", base=2)
        self.ax_e.set_xlim(0.9, m * 1.1)
        self.ax_e.set_ylim(0, 1.05)
        self.ax_e.legend(fontsize=FONT_SIZE - 2, loc="upper right")
        plotting.style_axes(self.ax_e, "top-k against full attention", "k", "")
        self.update()

    def compute(self, k, preset):
        return top_k_stats(k, preset)

    def draw(self, data):
        order = np.argsort(-data["full"], kind="stable")
        self.all_bars.set_data(data["full"][order])
        self.kept_bars.set_data(data["kept"][order])
        top = render.nice_ceil(float(data["full"].max()) * 1.05)
        if self.ax_w.get_ylim() != (0.0, top):
            self.ax_w.set_ylim(0.0, top)
        ks, k = data["ks"], data["k"]
        self.error_line.set_data(ks, data["errors"])
        self.dropped_line.set_data(ks, data["dropped_curve"])
        self.error_dot.set_data([k], [data["error"]])
        self.dropped_dot.set_data([k], [data["dropped"]])
        return [
            self.all_bars,
            self.kept_bars,
            self.error_line,
            self.dropped_line,
            self.error_dot,
            self.dropped_dot,
        ]

    def readout_html(self, data):
        return span(
            _(
                "<b>k</b> {k} of {m} keys{sep}<b>output error</b> {error} (in units "
                "of a value's length){sep}<b>weight dropped</b> {dropped} on average"
            ).format(
                k=data["k"],
                m=data["m"],
                sep=SEP,
                error=f"{data['error']:.3f}",
                dropped=f"{data['dropped']:.1%}",
            )
        )
