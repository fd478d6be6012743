"""Lesson 12's explorers: random features for the softmax kernel, and recall.

Thin shells, like ``widgets``: the maths is in ``explorers.kernels_maths``, the
engine in ``explorers.render``. Never imports torch.

- ``RandomFeaturesExplorer``: drag the number of positive random features r and
  watch the estimated kernel exp(q . k / sqrt(d_k)) close in on the exact one;
  drag the input size and watch it need many more.
- ``RecallExplorer``: drag the number m of stored key -> value pairs past d_k
  and watch linear attention and the delta rule (fixed-size states) lose them
  while softmax attention keeps a cache of every pair (at d_k = 4 its fixed
  scale of 30 blurs 64 keys: the cache holds them, the lookup misses).
"""

import numpy as np

from helpers import plotting
from helpers.explorers import descriptions, render
from helpers.explorers.kernels_maths import random_feature_attention, recall_errors
from helpers.explorers.readouts import SEP, span
from helpers.i18n import N_, _
from helpers.plotting import FONT_SIZE

__all__ = ["RandomFeaturesExplorer", "RecallExplorer"]

FEATURE_CHOICES = tuple(2**p for p in range(13))  # 1 .. 4096
RF_SIGMA_CHOICES = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5)
RECALL_D_K_CHOICES = (4, 8, 16, 32)
# told apart by line style too, not by colour alone
METHOD_STYLE = {
    "softmax": {"color": "black", "label": "softmax attention (cache of m pairs)"},
    "linear": {
        "color": "tab:orange",
        "ls": "--",
        "label": "linear attention, S = Σ k vᵀ",
    },
    "delta": {"color": "tab:blue", "ls": ":", "label": "delta rule, β = 1"},
}


class RandomFeaturesExplorer(render.Explorer):
    """The softmax kernel against its estimate from r positive random features.

    Left: every (query, key) pair, the estimate phi(q') . phi(k') against the
    exact exp(q . k / sqrt(d_k)); on the diagonal when r is large. Right: query
    0's weights, exact (black outline) and estimated (bars). Controls: r, the
    std sigma of the entries of q and k, the seed. See
    ``random_feature_attention``.
    """

    describe = descriptions.random_features

    def __init__(self, num_features=16, sigma=0.5, seed=0):
        values = {"num_features": num_features, "sigma": sigma, "seed": seed}
        random_feature_attention(**values)  # validate before building anything
        control = render.make_control
        sliders = {
            "num_features": control(
                N_("features r"), num_features, choices=FEATURE_CHOICES
            ),
            "sigma": control(N_("input std σ"), float(sigma), choices=RF_SIGMA_CHOICES),
            "seed": control("seed", seed, low=0, high=99),
        }
        super().__init__(values, sliders)
        fig = self.figure
        self.ax_kernel, self.ax_weights = fig.subplots(1, 2)
        fig.subplots_adjust(left=0.09, right=0.98, bottom=0.18, top=0.88, wspace=0.3)
        self.points = self.ax_kernel.scatter([], [], s=18, color="tab:blue")
        (self.diagonal,) = self.ax_kernel.plot(
            [], [], color="black", linestyle="--", linewidth=1
        )
        plotting.style_axes(
            self.ax_kernel,
            "kernel: estimate vs exact",
            "exact exp(q·k/√d_k)",
            "estimate φ(q')·φ(k')",
        )
        m = 12
        self.bars = self.ax_weights.bar(np.arange(m), np.zeros(m), color="tab:orange")
        (self.exact_line,) = self.ax_weights.step(
            np.arange(m + 1) - 0.5,
            np.zeros(m + 1),
            where="post",
            color="black",
            linewidth=1.5,
        )
        self.ax_weights.set_xlim(-0.6, m - 0.4)
        self.ax_weights.set_xticks(np.arange(0, m, 2))  # keys are whole numbers
        plotting.style_axes(self.ax_weights, "query 0's weights", "key s", "weight")
        self.update()

    def compute(self, **values):
        return random_feature_attention(**values)

    def draw(self, data):
        exact, estimate = data["exact"].ravel(), data["estimate"].ravel()
        top = render.nice_ceil(1.5 * exact.max())
        if self.ax_kernel.get_xlim() != (0.0, top):
            self.ax_kernel.set_xlim(0.0, top)
            self.ax_kernel.set_ylim(0.0, top)
        shown = np.clip(estimate, 0.0, top)  # off-scale estimates sit on the edge
        self.points.set_offsets(np.column_stack([exact, shown]))
        self.diagonal.set_data([0.0, top], [0.0, top])
        weights, estimated = data["weights"][0], data["weights_estimate"][0]
        w_top = render.nice_ceil(1.2 * max(weights.max(), estimated.max()))
        if self.ax_weights.get_ylim() != (0.0, w_top):
            self.ax_weights.set_ylim(0.0, w_top)
        for bar, height in zip(self.bars, estimated, strict=True):
            bar.set_height(height)
        self.exact_line.set_ydata(np.r_[weights, weights[-1]])
        return [self.points, self.diagonal, *self.bars, self.exact_line]

    def readout_html(self, data):
        return span(
            _(
                "<b>r</b> = {r} features{sep}<b>kernel error</b> {kernel} (mean "
                "relative){sep}<b>largest weight error</b> {weight}"
            ).format(
                r=data["num_features"],
                sep=SEP,
                kernel=f"{data['kernel_error']:.1%}",
                weight=f"{data['weight_error']:.3f}",
            )
        )


class RecallExplorer(render.Explorer):
    """Store m key -> value pairs, read each back: the error per pair, per memory.

    Pairs are numbered in the order written. Softmax attention keeps every pair
    (its cache grows with m); linear attention and the delta rule keep one
    (d_k, d_v) state. The delta rule recalls the pair it wrote last exactly.
    At small d_k and large m, softmax's fixed scale is not sharp enough for keys
    that crowd together (mean error 0.23 at d_k = 4, m = 64); the readout shows it.
    Controls: m, d_k, the seed. See ``recall_errors``.
    """

    describe = descriptions.recall

    def __init__(self, m=8, d_k=16, seed=0):
        values = {"m": m, "d_k": d_k, "seed": seed}
        recall_errors(**values)  # validate before building anything
        control = render.make_control
        sliders = {
            "m": control(N_("stored pairs m"), m, low=1, high=64),
            "d_k": control("d_k", d_k, choices=RECALL_D_K_CHOICES),
            "seed": control("seed", seed, low=0, high=99),
        }
        super().__init__(values, sliders)
        self.ax = self.figure.subplots()
        self.figure.subplots_adjust(left=0.08, right=0.98, bottom=0.18, top=0.88)
        self.lines = {
            name: self.ax.stairs([0.0], [0.5, 1.5], linewidth=2.5, **style)
            for name, style in METHOD_STYLE.items()
        }
        self.ax.set_ylim(0.0, 3.2)  # errors clipped at 2.5; the legend above them
        self.ax.legend(fontsize=FONT_SIZE - 3, loc="upper center", ncol=3)
        plotting.style_axes(
            self.ax,
            "recall error per stored pair",
            "pair i (in the order written)",
            "|recalled − v_i| / |v_i|",
        )
        self.update()

    def compute(self, **values):
        return recall_errors(**values)

    def draw(self, data):
        m = data["m"]
        if self.ax.get_xlim() != (0.5, m + 0.5):
            self.ax.set_xlim(0.5, m + 0.5)
        edges = np.arange(m + 1) + 0.5
        for name, line in self.lines.items():
            line.set_data(np.minimum(data["errors"][name], 2.5), edges)
        return list(self.lines.values())

    def readout_html(self, data):
        mean = data["mean"]
        errors = _(
            "<b>mean error</b>: softmax {softmax}, linear {linear}, delta rule {delta}"
        ).format(
            softmax=f"{mean['softmax']:.3f}",
            linear=f"{mean['linear']:.3f}",
            delta=f"{mean['delta']:.3f}",
        )
        memory = _(
            "<b>memory</b>: softmax's cache m (d_k + d_v) = {cache} numbers{sep}the "
            "fixed state d_k d_v = {state} numbers"
        ).format(cache=data["cache_numbers"], sep=SEP, state=data["state_numbers"])
        return span(f"{errors}<br>{memory}")
