"""In a Chinese kernel the explorers' controls and readouts speak Chinese (issue 24).

Every explorer is built with ``COURSE_LANG=zh``; each control's description and
each label it shows must be Chinese, or a bare name or number the lesson's code
uses as it is (``d_k``, ``seq_len``, ``seed``, ``1/√d_k``, a model's name):
no English word of 3+ letters outside such a name. The readout under each
explorer is Chinese too, but for the symbols in :data:`SYMBOLS` and the
model's own name.
"""

import re

import numpy as np

from helpers import explorers

_WORD = re.compile(r"(?<![\w/√])[A-Za-z]{3,}(?![\w(])")
NAMES = {"seed"}  # a parameter of the lessons' code, shown as the code names it
# units, functions written as in the lessons' formulas, and an architecture's name
SYMBOLS = {
    "nats",
    "KiB",
    "MiB",
    "GiB",
    "log",
    "softmax",
    "Delta",
    "MLA",
    "Gated",
    "DeltaNet",
}


def _shown(control):
    """The description and each option label that is not its own value (a
    model's name in the KV-budget menu is a value of the code, shown as is)."""
    texts = [control.description]
    for option in getattr(control, "options", ()):
        if isinstance(option, tuple) and option[0] != str(option[1]):
            texts.append(option[0])
    return texts


def test_every_control_and_readout_is_in_chinese(monkeypatch):
    monkeypatch.setenv("COURSE_LANG", "zh")
    weights = np.full((3, 4, 4), 0.25)  # (checkpoints, n, m)
    built = [
        explorers.AttentionExplorer(),
        explorers.TemperatureExplorer([1.0, 2.0, 0.5]),
        explorers.HeadsExplorer(),
        explorers.CheckpointExplorer(weights, [0, 10, 20], list("abcd"), list("wxyz")),
        explorers.KVBudgetExplorer(),
        explorers.TopKExplorer(),
        explorers.RandomFeaturesExplorer(),
        explorers.RecallExplorer(),
    ]
    english = {}
    for explorer in built:
        for control in explorer.sliders.values():
            for text in _shown(control):
                words = [w for w in _WORD.findall(text) if w not in NAMES]
                if words:
                    english[text] = words
        readout = explorer.readout_text()
        # a list in a Chinese readout is joined with 、, not ASCII ", "
        assert not re.search(r"\d, \d|;&rarr;|\w&rarr;\w+, ", readout), readout
        model = set(_WORD.findall(str(explorer.values.get("model", ""))))
        words = [w for w in _WORD.findall(readout) if w not in SYMBOLS | model]
        if words:
            english[readout] = words
    assert not english, english
