"""Lessons 09 and 11's explorer: attention weights over training checkpoints.

A thin shell like ``widgets``: the maths is ``checkpoint_arrays`` and
``checkpoint_summary`` in ``explorers.maths``, the readout in
``explorers.readouts``, each frame's description in ``explorers.descriptions``,
the engine in ``explorers.render``, the heatmap in ``helpers.plotting``. Never
imports torch. Usage: an explorer shows itself as a cell's last expression,
``explorers.CheckpointExplorer(weights_per_step, steps)``.
"""

from helpers import plotting
from helpers._arrays import check_labels
from helpers.explorers import descriptions, readouts, render
from helpers.explorers.maths import checkpoint_arrays, checkpoint_summary
from helpers.i18n import N_, _

__all__ = ["CheckpointExplorer"]


# -- lesson 09: attention weights over training checkpoints -------------------------


class CheckpointExplorer(render.Explorer):
    """Attention weights of one example as training goes on: drag the checkpoint.

    Left: the (n, m) heatmap saved at the chosen checkpoint, drawn by
    ``plotting.plot_attention``. Right: the mean largest weight per query at
    every checkpoint, with the chosen one marked. The slider counts checkpoints
    from 1 ("9 of 15"), as the lessons do; its value ``step_index`` is 0-based.
    See ``checkpoint_weights``.
    """

    describe = descriptions.checkpoint

    figsize = (9.0, 3.8)

    def __init__(
        self,
        weights_per_step,
        steps,
        query_labels=None,
        key_labels=None,
        step_index=0,
    ):
        # validated once here; a slider move only checks its index
        self.weights_per_step, self.steps = checkpoint_arrays(weights_per_step, steps)
        checkpoint_summary(self.weights_per_step, self.steps, step_index)
        count, n, m = self.weights_per_step.shape
        self.query_labels = check_labels(query_labels, n, "query_labels", "queries")
        self.key_labels = check_labels(key_labels, m, "key_labels", "keys")
        slider = render.make_control(
            N_("checkpoint"),
            int(step_index),
            choices=range(count),
            labels=[
                _("{step} of {count}").format(step=i + 1, count=count)
                for i in range(count)
            ],
            width="28em",
        )
        super().__init__({"step_index": int(step_index)}, {"step_index": slider})
        fig = self.figure
        self.ax_heat, self.ax_curve = fig.subplots(
            1, 2, gridspec_kw={"width_ratios": (1.15, 1.0)}
        )
        fig.subplots_adjust(left=0.1, right=0.97, bottom=0.24, top=0.9, wspace=0.45)
        self.heatmap = plotting.plot_attention(
            self.weights_per_step[0],
            self.query_labels,
            self.key_labels,
            ax=self.ax_heat,
            colorbar=False,
            title="attention weights",
            aspect="auto",
        )
        plotting.add_colorbar(self.heatmap, ax=self.ax_heat, fraction=0.05, pad=0.03)

        self.sharpness = self.weights_per_step.max(axis=-1).mean(axis=-1)  # (count,)
        curve = self.ax_curve
        curve.plot(self.steps, self.sharpness, color="tab:blue", marker="o", ms=4)
        (self.marker,) = curve.plot([], [], "o", color="tab:orange", ms=12, zorder=3)
        self.cursor = curve.axvline(self.steps[0], color="tab:orange", linewidth=1.5)
        curve.set_ylim(0.0, 1.05)
        span = max(int(self.steps[-1] - self.steps[0]), 1)
        curve.set_xlim(self.steps[0] - 0.03 * span, self.steps[-1] + 0.03 * span)
        plotting.style_axes(
            curve, "sharpness over training", "training step", "mean largest weight"
        )
        self.update()

    def compute(self, step_index):
        return checkpoint_summary(self.weights_per_step, self.steps, step_index)

    def draw(self, data):
        self.heatmap.set_data(data["weights"])
        self.marker.set_data([data["step"]], [data["mean_max_weight"]])
        self.cursor.set_xdata([data["step"], data["step"]])
        return [self.heatmap, self.cursor, self.marker]

    def readout_html(self, data):
        return readouts.checkpoint_readout(data, self.query_labels, self.key_labels)

    def __repr__(self):
        count, n, m = self.weights_per_step.shape
        return (
            f"CheckpointExplorer({count} checkpoints of shape ({n}, {m}), steps "
            f"{int(self.steps[0])}..{int(self.steps[-1])}, "
            f"checkpoint {self.values['step_index'] + 1} of {count})"
        )
