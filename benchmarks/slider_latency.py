"""Slider latency: one explorer update() against re-creating the figure each time.

For every explorer in ``helpers.explorers`` this times ``update(...)`` over a sweep
(sequence length 8, 32, 128, 512; d_k 4, 64, 512 for AttentionExplorer; 4 and 8
heads with d_model 64 for HeadsExplorer; 10 checkpoints of (seq_len, seq_len)
weights for CheckpointExplorer) and, interleaved in the same run,
the baseline: what a plain ``ipywidgets.interact`` callback does on every slider
move. The baseline creates a new pyplot figure, draws the same content with the
same pure function (``attention_stats``, ``temperature_weights``,
``heads_weights``, ``checkpoint_weights``) and the same artists, figure size and
dpi, encodes it as a PNG the way the inline backend does
(``fig.savefig(BytesIO(), format="png")``, default settings) and closes the
figure. Both sides are timed on the Python side only (no browser).

Every update changes the data (the seed and the sequence length by one, the
temperature, or the checkpoint). Reported: the warm median and 90th percentile
per configuration (after one warm-up pass over the same values, so every
axis-limit set has its cached background), the cold first update (background
cache cleared: a full redraw) and the time to build the explorer, both reported
separately, and the ratio of the medians, baseline / explorer.

Run from the repository root::

    .venv/bin/python benchmarks/slider_latency.py          # about 2 minutes
    .venv/bin/python benchmarks/slider_latency.py --quick  # fewer repeats

Exit code 0 whether the targets are met or not: this is a benchmark, not a test.
"""

import argparse
import datetime
import io
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field

import matplotlib

matplotlib.use("Agg")  # before pyplot: render off-screen, as the inline backend

import ipywidgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import PIL  # noqa: E402

from helpers import plotting  # noqa: E402
from helpers.explorers import checkpoint, widgets  # noqa: E402

SEQ_LENS = (8, 32, 128, 512)
D_KS = (4, 64, 512)
NUM_HEADS = (4, 8)
D_MODEL = 64
REPEATS = 15  # measured updates per configuration, explorer and baseline each
QUICK_REPEATS = 4
BASELINE_WARMUP = 2  # the first pyplot figures of a process load fonts and caches
TEMPERATURES = (0.1, 0.2, 0.35, 0.5, 0.7, 1.0, 1.4, 2.0, 3.0, 5.0)
TARGETS = ((128, 25.0), (512, 35.0))  # (seq_len, median update at most, ms)
MIN_SPEEDUP = 2.0
CHECKPOINTS = 10  # CheckpointExplorer: saved checkpoints of (seq_len, seq_len)


@dataclass
class Result:
    """Timings of one configuration, in milliseconds."""

    explorer: str
    config: str
    seq_len: int
    build_ms: float  # constructing the explorer (widgets, figure, first draw)
    cold_ms: float  # first update() with no cached background: a full redraw
    explorer_ms: list = field(default_factory=list)  # warm update() times
    baseline_ms: list = field(default_factory=list)  # re-create the figure

    @property
    def explorer_median(self):
        return statistics.median(self.explorer_ms)

    @property
    def baseline_median(self):
        return statistics.median(self.baseline_ms)

    @property
    def explorer_p90(self):
        return float(np.percentile(self.explorer_ms, 90))

    @property
    def baseline_p90(self):
        return float(np.percentile(self.baseline_ms, 90))

    @property
    def ratio(self):
        """How many times faster the explorer is: baseline / explorer medians."""
        return self.baseline_median / self.explorer_median


def _ms(start):
    return (time.perf_counter() - start) * 1e3


def _png_of(fig):
    """What the inline backend does with a finished figure: PNG bytes, then close."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


# -- the baselines: a new figure per update, as a plain interact callback -----------


def _normal(x, std):
    return np.exp(-0.5 * (x / std) ** 2) / (std * math.sqrt(2 * math.pi))


def baseline_attention(seq_len, d_k, scaled=True, seed=0, sigma=1.0):
    """Re-create AttentionExplorer's figure: score histogram, sorted weights."""
    data = widgets.attention_stats(seq_len, d_k, scaled, seed, sigma)
    scores, weights, std = data["scores"], data["weights"], data["predicted_std"]
    row_std = data["row_predicted_std"]
    fig, (ax_s, ax_w) = plt.subplots(
        1, 2, figsize=widgets.AttentionExplorer.figsize, dpi=widgets.DPI
    )
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.18, top=0.88, wspace=0.3)
    limit = max(4.0 * max(std, row_std), 1.05 * np.abs(scores).max())
    bins = int(np.clip(round(2 * math.sqrt(seq_len)), 6, 40))
    ax_s.hist(
        scores,
        bins=np.linspace(-limit, limit, bins + 1),
        density=True,
        histtype="stepfilled",
        color="tab:blue",
        alpha=0.8,
    )
    x = np.linspace(-limit, limit, 201)
    ax_s.plot(x, _normal(x, row_std), "k")  # this row's predicted spread
    ax_s.plot(x, _normal(x, std), color="dimgray", linestyle="--")  # population
    ax_s.set_xlim(-limit, limit)
    plotting.style_axes(
        ax_s, r"scores $\langle q, k_s\rangle / \sqrt{d_k}$", "score", "density"
    )
    ranks = np.arange(seq_len + 1) + 0.5
    ax_w.stairs(np.sort(weights)[::-1], ranks, fill=True, color="tab:orange")
    ax_w.plot([0.5, seq_len + 0.5], [1 / seq_len] * 2, "k--")
    ax_w.set_xlim(0.5, min(seq_len, widgets.SHOWN_RANKS) + 0.5)
    ax_w.set_ylim(0.0, 1.0)
    plotting.style_axes(ax_w, "weights, largest first", "rank", "weight")
    return _png_of(fig)


def baseline_temperature(scores, temperature):
    """Re-create TemperatureExplorer's figure: bars of softmax(scores / T)."""
    weights = widgets.temperature_weights(scores, temperature)
    m = weights.size
    fig, ax = plt.subplots(figsize=widgets.TemperatureExplorer.figsize, dpi=widgets.DPI)
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.2, top=0.88)
    x = np.arange(m)
    if m <= widgets.MAX_BARS:  # the same artists as the explorer
        ax.bar(x, weights, color="tab:orange")
    else:
        ax.stairs(weights, np.arange(m + 1) - 0.5, fill=True, color="tab:orange")
    reference = widgets.temperature_weights(scores, 1.0)
    ax.step(
        np.r_[x - 0.5, m - 0.5],
        np.r_[reference, reference[-1]],
        where="post",
        color="black",
        linestyle=":",
        label="temperature 1",
    )
    ax.axhline(1 / m, color="black", linestyle="--", linewidth=1, label="uniform")
    ax.set_ylim(0.0, 1.0)
    step = math.ceil(m / 16)
    ax.set_xticks(x[::step], [f"$k_{{{s + 1}}}$" for s in x[::step]])
    ax.legend(fontsize=widgets.FONT_SIZE - 1, loc="upper right")
    plotting.style_axes(ax, "weights  softmax(score / temperature)", "key s", "weight")
    return _png_of(fig)


def baseline_heads(num_heads, d_model, seq_len, seed=0, **options):
    """Re-create HeadsExplorer's figure: one heatmap per head and a colorbar.

    ``options``: scale, sigma, projections, as ``heads_weights`` takes them.
    """
    weights = widgets.heads_weights(num_heads, d_model, seq_len, seed, **options)
    cols = min(num_heads, 4) if num_heads <= 8 else 8
    rows = math.ceil(num_heads / cols)
    fig, axes = plt.subplots(
        rows,
        cols,
        squeeze=False,
        figsize=widgets.HeadsExplorer.figsize,
        dpi=widgets.DPI,
        gridspec_kw={"left": 0.08, "right": 0.88, "bottom": 0.14, "top": 0.84},
    )
    fig.suptitle(
        f"{num_heads} head(s), d_model = {d_model}, d_k = {d_model // num_heads}",
        fontsize=widgets.FONT_SIZE,
    )
    images = []
    for h, ax in enumerate(axes.ravel()):
        images.append(
            ax.imshow(
                weights[h],
                cmap=widgets.CMAP,
                vmin=0.0,
                vmax=1.0,
                interpolation="nearest",
                interpolation_stage="data",  # the explorer's (fast) setting
            )
        )
        ax.set_title(f"head {h}", fontsize=widgets.FONT_SIZE)
        ax.tick_params(labelsize=12)
        if h % cols == 0:
            ax.set_ylabel("queries (n)", fontsize=widgets.FONT_SIZE)
        if h >= num_heads - cols:
            ax.set_xlabel("keys (m)", fontsize=widgets.FONT_SIZE)
    cax = fig.add_axes((0.91, 0.14, 0.018, 0.7))
    fig.colorbar(images[0], cax=cax).set_label("attention weight")
    return _png_of(fig)


def baseline_checkpoint(weights_per_step, steps, sharpness, step_index):
    """Re-create CheckpointExplorer's figure: heatmap and the sharpness curve."""
    data = widgets.checkpoint_weights(weights_per_step, steps, step_index)
    fig, (ax, curve) = plt.subplots(
        1,
        2,
        figsize=checkpoint.CheckpointExplorer.figsize,
        dpi=widgets.DPI,
        gridspec_kw={"width_ratios": (1.15, 1.0)},
    )
    fig.subplots_adjust(left=0.1, right=0.97, bottom=0.24, top=0.9, wspace=0.45)
    image = ax.imshow(
        data["weights"],
        cmap=widgets.CMAP,
        vmin=0.0,
        vmax=1.0,
        aspect="auto",
        interpolation="nearest",
    )
    fig.colorbar(image, ax=ax, fraction=0.05, pad=0.03)
    plotting.style_axes(ax, "attention weights", "keys (m)", "queries (n)")
    curve.plot(steps, sharpness, color="tab:blue", marker="o", ms=4)
    curve.plot([data["step"]], [data["mean_max_weight"]], "o", color="tab:orange")
    curve.axvline(data["step"], color="tab:orange", linewidth=1.5)
    curve.set_ylim(0.0, 1.05)
    plotting.style_axes(
        curve, "sharpness over training", "training step", "mean largest weight"
    )
    return _png_of(fig)


# -- measuring ----------------------------------------------------------------------


def _measure(explorer_name, config, seq_len, build, steps, baseline, repeats):
    """Time ``build()``, a cold update, then warm updates interleaved with baseline.

    ``steps`` is a list of keyword dicts for ``update``; update i uses
    ``steps[i % len(steps)]`` and the baseline draws the same values.
    """
    start = time.perf_counter()
    explorer = build()
    build_ms = _ms(start)
    explorer.forget_backgrounds()  # the next update redraws everything
    start = time.perf_counter()
    explorer.update(**steps[0])
    cold_ms = _ms(start)
    used = steps[: min(repeats, len(steps))]
    for values in used:  # warm-up: each axis-limit set drawn once
        explorer.update(**values)
    for values in used[:BASELINE_WARMUP]:
        baseline({**explorer.values, **values})
    result = Result(explorer_name, config, seq_len, build_ms, cold_ms)
    for i in range(repeats):
        values = used[i % len(used)]
        for side in (0, 1) if i % 2 == 0 else (1, 0):  # alternate who goes first
            start = time.perf_counter()
            if side == 0:
                explorer.update(**values)
                result.explorer_ms.append(_ms(start))
            else:
                baseline({**explorer.values, **values})
                result.baseline_ms.append(_ms(start))
    explorer.figure.clear()
    return result


def _length_steps(seq_len, count=10):
    """Updates that move seq_len by one (seq_len, seq_len - 1, ...) and the seed."""
    return [{"seq_len": max(2, seq_len - i % 2), "seed": i % 5} for i in range(count)]


def measure_attention(seq_len, d_k, repeats=REPEATS):
    """AttentionExplorer at (seq_len, d_k) against ``baseline_attention``."""
    return _measure(
        "AttentionExplorer",
        f"seq_len={seq_len} d_k={d_k}",
        seq_len,
        lambda: widgets.AttentionExplorer(seq_len=seq_len, d_k=d_k),
        _length_steps(seq_len),
        lambda values: baseline_attention(**values),
        repeats,
    )


def measure_temperature(seq_len, repeats=REPEATS):
    """TemperatureExplorer on seq_len seeded N(0, 2^2) scores, sweeping T."""
    scores = 2.0 * np.random.default_rng(0).standard_normal(seq_len)  # (seq_len,)
    return _measure(
        "TemperatureExplorer",
        f"seq_len={seq_len} T=0.1..5",
        seq_len,
        lambda: widgets.TemperatureExplorer(scores, temperature=1.0),
        [{"temperature": t} for t in TEMPERATURES],
        lambda values: baseline_temperature(scores, values["temperature"]),
        repeats,
    )


def measure_heads(seq_len, num_heads, repeats=REPEATS):
    """HeadsExplorer at d_model 64 with ``num_heads`` heads and seq_len tokens."""
    return _measure(
        "HeadsExplorer",
        f"seq_len={seq_len} heads={num_heads}",
        seq_len,
        lambda: widgets.HeadsExplorer(
            num_heads=num_heads, d_model=D_MODEL, seq_len=seq_len
        ),
        _length_steps(seq_len),
        lambda values: baseline_heads(**values),
        repeats,
    )


def checkpoint_data(seq_len, count=CHECKPOINTS):
    """Seeded weights that sharpen over ``count`` checkpoints, and their steps.

    Shapes:
        returns weights_per_step (count, seq_len, seq_len), steps (count,)
    """
    scores = np.random.default_rng(0).standard_normal((seq_len, seq_len))  # (n, m)
    sharpen = 1.0 + 0.5 * np.arange(count)[:, None, None]  # (count, 1, 1)
    weights = np.exp(scores * sharpen)  # (count, n, m)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights, 100 * np.arange(count)


def measure_checkpoint(seq_len, repeats=REPEATS):
    """CheckpointExplorer on (CHECKPOINTS, seq_len, seq_len) weights."""
    weights, steps = checkpoint_data(seq_len)
    sharpness = weights.max(axis=-1).mean(axis=-1)  # (count,) computed once
    return _measure(
        "CheckpointExplorer",
        f"seq_len={seq_len} ckpts={steps.size}",
        seq_len,
        lambda: checkpoint.CheckpointExplorer(weights, steps),
        [{"step_index": (3 * i + 1) % steps.size} for i in range(steps.size)],
        lambda values: baseline_checkpoint(
            weights, steps, sharpness, values["step_index"]
        ),
        repeats,
    )


def cases(seq_lens=SEQ_LENS, only=None):
    """Every (explorer name, measure function, args) of the sweep.

    ``only``: keep the explorers whose name contains this (case-insensitive).
    """
    out = [
        ("AttentionExplorer", measure_attention, (n, d_k))
        for n in seq_lens
        for d_k in D_KS
    ]
    out += [("TemperatureExplorer", measure_temperature, (n,)) for n in seq_lens]
    out += [
        ("HeadsExplorer", measure_heads, (n, h)) for n in seq_lens for h in NUM_HEADS
    ]
    out += [("CheckpointExplorer", measure_checkpoint, (n,)) for n in seq_lens]
    return [c for c in out if (only or "").lower() in c[0].lower()]


def run(seq_lens=SEQ_LENS, repeats=REPEATS, only=None, log=print):
    """Measure every case, logging one progress line per case."""
    results = []
    todo = cases(seq_lens, only)
    for k, (_, measure, args) in enumerate(todo, 1):
        r = measure(*args, repeats=repeats)
        results.append(r)
        log(
            f"[{k:2}/{len(todo)}] {r.explorer:<19} {r.config:<20} "
            f"explorer {r.explorer_median:6.1f} ms  baseline {r.baseline_median:6.1f}"
            f" ms  load {os.getloadavg()[0]:.2f}"
        )
    return results


# -- reporting ----------------------------------------------------------------------


def header():
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return "\n".join(
        [
            "Slider latency: explorer update() vs re-creating the figure (ms)",
            f"date       {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M:%S %z}",
            f"machine    {platform.platform()}, {platform.machine()}, "
            f"nproc {cpus} (cpu_count {os.cpu_count()})",
            f"load avg   {load} (1, 5, 15 min) at start",
            f"python     {platform.python_version()}; numpy {np.__version__}, "
            f"matplotlib {matplotlib.__version__} ({matplotlib.get_backend()}), "
            f"ipywidgets {ipywidgets.__version__}, Pillow {PIL.__version__}",
            "threads    "
            + ", ".join(
                f"{name}={os.environ.get(name, 'unset')}"
                for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
            ),
        ]
    )


def table(results, repeats):
    lines = [
        f"warm: {repeats} updates per configuration after one warm-up pass; "
        "cold: first update with no cached background; build: constructor",
        "",
        f"{'explorer':<19} {'configuration':<20} {'build':>6} {'cold':>6} "
        f"{'median':>7} {'p90':>6} | {'base med':>8} {'p90':>6} | {'ratio':>6}",
        "-" * 96,
    ]
    for r in results:
        lines.append(
            f"{r.explorer:<19} {r.config:<20} {r.build_ms:6.1f} {r.cold_ms:6.1f} "
            f"{r.explorer_median:7.1f} {r.explorer_p90:6.1f} | "
            f"{r.baseline_median:8.1f} {r.baseline_p90:6.1f} | {r.ratio:5.1f}x"
        )
    return "\n".join(lines)


def verdicts(results):
    """One line per target and explorer: the worst configuration, MET or NOT MET."""
    lines = []
    names = list(dict.fromkeys(r.explorer for r in results))
    for seq_len, limit in TARGETS:
        for name in names:
            rows = [r for r in results if r.explorer == name and r.seq_len == seq_len]
            if not rows:
                continue
            worst = max(rows, key=lambda r: r.explorer_median)
            ok = worst.explorer_median <= limit
            lines.append(
                f"target median <= {limit:.0f} ms at seq_len {seq_len}: "
                f"{worst.explorer_median:.1f} ms  {'MET' if ok else 'NOT MET'}"
                f"  ({name}, worst: {worst.config})"
            )
    for name in names:
        worst = min((r for r in results if r.explorer == name), key=lambda r: r.ratio)
        ok = worst.ratio >= MIN_SPEEDUP
        lines.append(
            f"target >= {MIN_SPEEDUP:.0f}x faster than the baseline: "
            f"{worst.ratio:.1f}x  {'MET' if ok else 'NOT MET'}"
            f"  ({name}, worst: {worst.config})"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK_REPEATS} updates per configuration instead of {REPEATS}",
    )
    parser.add_argument(
        "--repeats", type=int, default=None, help="updates per configuration"
    )
    parser.add_argument(
        "--only", help="only the explorers whose name contains this, e.g. heads"
    )
    parser.add_argument(
        "--seq-lens",
        type=lambda text: tuple(int(n) for n in text.split(",")),
        default=SEQ_LENS,
        help="comma-separated sequence lengths (default 8,32,128,512)",
    )
    args = parser.parse_args(argv)
    repeats = args.repeats or (QUICK_REPEATS if args.quick else REPEATS)
    if not cases(args.seq_lens, args.only):
        parser.error(f"no explorer name contains {args.only!r}")
    print(header())
    print()
    results = run(
        args.seq_lens,
        repeats,
        args.only,
        log=lambda line: print(line, flush=True),
    )
    print()
    print(table(results, repeats))
    print()
    print(verdicts(results))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\nload avg   {load} (1, 5, 15 min) at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
