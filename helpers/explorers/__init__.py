"""The slider explorers: drag d_k, the input scale, the temperature, the heads.

Lessons use ``from helpers import explorers`` and show an explorer as a cell's
last expression, ``explorers.TemperatureExplorer(scores)``. The package:

- ``maths``: the pure, seeded NumPy functions each explorer plots and reads out
  (``attention_stats``, ``temperature_weights``, ``heads_weights``,
  ``heads_summary``, ``checkpoint_weights``, ``entropy``), tested without
  ipywidgets or matplotlib;
- ``readouts``: the line of numbers under each figure, as HTML;
- ``render``: the engine, one persistent figure updated in place;
- ``widgets``: the explorer classes (d_k, temperature, heads), thin shells over
  the three above;
- ``checkpoint``: lessons 09 and 11's explorer (attention weights over training
  checkpoints), a shell like them;
- ``kernels`` and ``kernels_maths``: lesson 12's explorers (random features,
  recall from a fixed-size state) and their maths;
- ``budget`` and ``budget_maths``: lesson 13's explorers (the KV-cache budget of
  published models, top-k attention) and their maths.

The explorer classes load ipywidgets and matplotlib on first use, so that
``helpers.explorers.maths`` stays importable without them. Never imports torch.
"""

from helpers.explorers import budget_maths
from helpers.explorers.maths import (
    attention_stats,
    checkpoint_weights,
    entropy,
    heads_summary,
    heads_weights,
    temperature_weights,
)

# from helpers.explorers.widgets, loaded on first use (ipywidgets, matplotlib)
_WIDGETS = (
    "AttentionExplorer",
    "HeadsExplorer",
    "TemperatureExplorer",
    "CMAP",
    "DPI",
    "FONT_SIZE",
    "png_bytes",
)
# from helpers.explorers.checkpoint (lessons 09, 11), loaded on first use like _WIDGETS
_CHECKPOINT = ("CheckpointExplorer",)
# from helpers.explorers.kernels (lesson 12), loaded on first use like _WIDGETS
_KERNELS = ("RandomFeaturesExplorer", "RecallExplorer")
# from helpers.explorers.budget (lesson 13), loaded on first use like _WIDGETS
_BUDGET = ("KVBudgetExplorer", "TopKExplorer")


def __getattr__(name):
    if name in _WIDGETS:
        from helpers.explorers import widgets

        return getattr(widgets, name)
    if name in _CHECKPOINT:
        from helpers.explorers import checkpoint

        return getattr(checkpoint, name)
    if name in _KERNELS:
        from helpers.explorers import kernels

        return getattr(kernels, name)
    if name in _BUDGET:
        from helpers.explorers import budget

        return getattr(budget, name)
    raise AttributeError(f"module 'helpers.explorers' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)


__all__ = [
    *_WIDGETS,
    *_CHECKPOINT,
    *_KERNELS,
    *_BUDGET,
    "budget_maths",
    "attention_stats",
    "checkpoint_weights",
    "entropy",
    "heads_summary",
    "heads_weights",
    "temperature_weights",
]
