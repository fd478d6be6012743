"""Checker for lesson 09's build exercise: the recall layer with several heads.

``check_recall_attention`` (exercise 9.4) runs the learner's NumPy layer,
multi-head cross-attention from the questions to a padded memory, on fresh
cases (several heads and one, full memories and padded ones), compares it with
``recall_attention`` and names the likely mistake. The exercise asks for the
layer written by hand, so a call of the course's attention helpers while the
learner's function runs is told as a known mistake (``_ByHand``). NumPy only.
"""

import dataclasses
import math
import sys

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.checks import _mistakes as mk

__all__ = ["check_recall_attention"]

# --------------------------------------------------------------------------
# The model's attention layer with several heads (exercise 9.4)
# --------------------------------------------------------------------------


def recall_attention(
    memory, asked, W_Q, W_K, W_V, num_heads, lengths, *, slip=None, mask_mode="before"
):
    """Multi-head cross-attention from the questions to the memory, padding masked.

    Shapes: memory (batch, m, d_model), asked (batch, n, d_model), W_Q and W_K
    (d_model, H d_k), W_V (d_model, H d_v), lengths (batch,). Returns y
    (batch, n, H d_v) and weights (batch, H, n, m).
    """
    batch, m, _ = memory.shape
    n = asked.shape[1]

    def split(x):  # (batch, t, H d) -> (batch, H, t, d)
        t = x.shape[1]
        if slip == "no_transpose":
            return x.reshape(batch, num_heads, t, -1)
        return x.reshape(batch, t, num_heads, -1).transpose(0, 2, 1, 3)

    Q, K, V = split(asked @ W_Q), split(memory @ W_K), split(memory @ W_V)
    d_k = Q.shape[-1]
    scale = math.sqrt(d_k * num_heads) if slip == "full_width" else math.sqrt(d_k)
    scores = Q @ np.swapaxes(K, -1, -2) / scale  # (batch, H, n, m)
    slots = np.arange(m)[None, :]
    real = (
        slots <= lengths[:, None] if slip == "off_by_one" else slots < lengths[:, None]
    )
    mask = None if slip == "no_mask" else real[:, None, None, :]  # (batch, 1, 1, m)
    axis = -2 if slip == "axis" else -1
    if mask_mode == "flipped_nan":  # s >= lengths[b], -inf: a full memory is NaN
        weights = mk.masked_softmax(scores, ~mask, "unguarded", axis=axis)
    elif mask_mode == "flipped_fill":  # s >= lengths[b], -1e9: a full one uniform
        weights = mk.masked_softmax(scores, ~mask, "fill", axis=axis)
    elif mask_mode == "multiplied":  # scores * mask: a padding slot scores 0
        weights = anp.softmax(scores * mask, axis)
    else:
        weights = mk.masked_softmax(scores, mask, mask_mode, axis=axis)
    heads = weights @ V  # (batch, H, n, d_v)
    if slip == "merge_no_transpose":
        return heads.reshape(batch, n, -1), weights
    return heads.transpose(0, 2, 1, 3).reshape(batch, n, -1), weights


_RECALL_FULL_WIDTH = ck.Mistake(
    symptom="your scores are divided by the square root of the full width "
    "num_heads * d_k = {width}, not of one head's d_k = {d_k}",
    why="each head's score is a dot product of d_k numbers: its spread grows like "
    "sqrt(d_k) of that head, whatever the other heads hold",
    fix="divide by math.sqrt(d_k) with d_k = W_Q.shape[1] // num_heads",
)
_RECALL_NO_MASK = ck.Mistake(
    symptom="your questions give weight to the padding slots (slots at or after "
    "`lengths[b]` in memory b): the padding was not masked",
    why="padding slots hold no pair; a question that spreads weight over them "
    "reads noise, and the weights on the real slots no longer sum to 1",
    fix="mask = np.arange(m) < lengths[:, None], shape (batch, m), broadcast as "
    "(batch, 1, 1, m); scores -> -inf where it is False, before the softmax",
)
_RECALL_OFF_BY_ONE = ck.Mistake(
    symptom="your mask lets each question see one padding slot: slot lengths[b] of "
    "memory b (the first empty one) gets weight",
    why="a memory of L pairs fills slots 0..L-1; slot L is the first padding slot",
    fix="real slots are np.arange(m) < lengths[:, None] (strictly less)",
)
_RECALL_FLIPPED = ck.Mistake(
    symptom="your weights sit on the padding slots and are zero on the real ones "
    "(a memory with no padding gets NaN or uniform weights): your mask blocks the "
    "real slots and lets the questions see the padding",
    why="the course's masks mean True = may attend, so the mask must be True on the "
    "real slots, slot s < lengths[b]; the opposite comparison, s >= lengths[b], is "
    "True on the padding, and a full memory then has no slot left to attend to",
    fix="real = np.arange(m)[None, :] < lengths[:, None] (batch, m); scores = "
    "np.where(real[:, None, None, :], scores, -np.inf)",
    line=r">=|~|logical_not",
)
_RECALL_MULTIPLIED = ck.Mistake(
    symptom="your padding slots still get weight, as much as a score of 0 would "
    "give: the scores were multiplied by the 0/1 mask, which sets a padding "
    "slot's score to 0 rather than blocking it",
    why="the softmax gives every finite score a weight, exp(0) = 1 included: only a "
    "score of -inf gets weight exactly 0, so a mask must replace the blocked "
    "scores, not scale them",
    fix="scores = np.where(real[:, None, None, :], scores, -np.inf) instead of "
    "scores * real[:, None, None, :]",
    line=r"\*\s*\w*(mask|real|keep)|(mask|real|keep)\w*(\[.*\])?\s*\*",
)
_RECALL_HELPER = ck.Mistake(
    symptom="your layer calls the course's helpers ({helpers}): this exercise asks "
    "for the attention written by hand, with NumPy operations",
    why="9.4 is the build that shows you can write what those helpers hide: the "
    "split into heads, the padding mask from lengths and the softmax over the "
    "slots. A helper's answer passes the comparison without any of it being yours",
    fix="replace each helper call with the NumPy lines it stands for: "
    "x.reshape(batch, t, num_heads, -1).transpose(0, 2, 1, 3) for the heads; "
    "np.arange(m)[None, :] < lengths[:, None] for the mask; np.where(mask, scores, "
    "-np.inf), then e = np.exp(scores - scores.max(-1, keepdims=True)) and "
    "e / e.sum(-1, keepdims=True) for the softmax; the reverse transpose and "
    "reshape to merge the heads",
)

# The course's helpers that 9.4 asks the learner to write by hand.
_BY_HAND = (
    "softmax",
    "attention_one_query",
    "scaled_dot_product_attention",
    "padding_mask",
    "causal_mask",
    "split_heads",
    "merge_heads",
    "multi_head_attention",
)


class _ByHand:
    """Runs the learner's layer and records any call of the course's helpers.

    While the learner's function runs, each helper of ``_BY_HAND`` in
    ``helpers.attention_np`` (and ``helpers.attention_torch``, if a lesson has
    already imported it) is wrapped so that a call is recorded, under the name
    the learner's code uses for it; the originals are put back in a ``finally``.
    The helper still answers, so a recorded call is told as a known mistake
    (``inspect`` of ``ck.run``), not as an error. Named and located as the
    learner's function.
    """

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "your function")
        self.__code__ = getattr(fn, "__code__", None)
        self.used = []
        self._inside = False

    def _recorder(self, label, original):
        def recorded(*args, **kwargs):
            if self._inside:  # a helper calling another: only the outer counts
                return original(*args, **kwargs)
            if label not in self.used:
                self.used.append(label)
            self._inside = True
            try:
                return original(*args, **kwargs)
            finally:
                self._inside = False

        return recorded

    def __call__(self, *args):
        self.used = []
        names = getattr(self.fn, "__globals__", None)
        names = names if isinstance(names, dict) else {}
        modules = [anp, sys.modules.get("helpers.attention_torch")]
        patched, rebound = [], []
        try:
            for module in [m for m in modules if m is not None]:
                alias = next(
                    (k for k, v in names.items() if v is module),
                    module.__name__.removeprefix("helpers."),
                )
                for name in _BY_HAND:
                    original = getattr(module, name, None)
                    if original is None:
                        continue
                    for key, value in list(names.items()):
                        if value is original:  # from helpers.attention_np import ...
                            rebound.append((key, value))
                            names[key] = self._recorder(f"`{key}`", original)
                    patched.append((module, name, original))
                    setattr(module, name, self._recorder(f"`{alias}.{name}`", original))
            return self.fn(*args)
        finally:
            for module, name, original in reversed(patched):
                setattr(module, name, original)
            for key, value in reversed(rebound):
                names[key] = value

    def mistake(self):
        """The known mistake for the helpers this call used, or None."""
        if not self.used:
            return None
        helpers = ", ".join(self.used)
        mistake = _RECALL_HELPER.format(helpers=helpers)
        pattern = "|".join(label.strip("`").split(".")[-1] for label in self.used)
        return dataclasses.replace(mistake, line=rf"\b({pattern})\b")


_RECALL_AFTER = ck.Mistake(
    symptom="your padding weights are zero but the rows no longer sum to 1: the "
    "mask was applied to the weights, after the softmax",
    why="the real slots must share all of the weight: mask the scores, so that the "
    "softmax normalises over the real slots only",
    fix="scores -> -inf where the mask is False, then the softmax",
)
_RECALL_NO_TRANSPOSE = ck.Mistake(
    symptom="your heads were split with a reshape alone, without moving the heads "
    "axis: each head mixes coordinates of different tokens",
    why="(batch, t, H * d) reshapes to (batch, t, H, d), whose head axis must then "
    "move in front of the tokens; reshaping straight to (batch, H, t, d) cuts the "
    "rows in the wrong places",
    fix="x.reshape(batch, t, num_heads, d).transpose(0, 2, 1, 3)",
)
_RECALL_MERGE = ck.Mistake(
    symptom="your weights are right but your y is not: the heads were merged with a "
    "reshape alone, without moving the heads axis back",
    why="(batch, H, n, d_v) must become (batch, n, H, d_v) before the reshape to "
    "(batch, n, H * d_v), so that each question's row holds its own heads",
    fix="heads.transpose(0, 2, 1, 3).reshape(batch, n, -1)",
)
_RECALL_AXIS = ck.Mistake(
    symptom="your weights sum to 1 over the questions, not over the slots",
    why="each question chooses among the memory slots: its weights over the m "
    "slots must sum to 1",
    fix="take the softmax over the last axis, the slots",
)


def check_recall_attention(fn, *, seed=0):
    """Check ``fn(memory, asked, W_Q, W_K, W_V, num_heads, lengths)``: (y, weights)."""
    rng = np.random.default_rng(seed)
    names = ("memory", "asked", "W_Q", "W_K", "W_V", "num_heads", "lengths")
    cases = []
    for batch, m, n, d_model, H, d_k, d_v, lengths in [
        (2, 6, 3, 8, 2, 3, 5, [6, 4]),
        (3, 5, 4, 6, 3, 2, 4, [2, 5, 3]),
        (1, 4, 2, 5, 1, 4, 3, [3]),
    ]:
        cases.append(
            ck.make_case(
                names,
                rng.standard_normal((batch, m, d_model)),
                rng.standard_normal((batch, n, d_model)),
                rng.standard_normal((d_model, H * d_k)),
                rng.standard_normal((d_model, H * d_k)),
                rng.standard_normal((d_model, H * d_v)),
                H,
                np.array(lengths),
                sizes={"batch": batch, "m": m, "n": n, "d_model": d_model},
                facts={"width": H * d_k, "d_k": d_k},
                note="one head" if H == 1 else "",
            )
        )

    def slip(kind, mode="before"):
        return lambda *a: recall_attention(*a, slip=kind, mask_mode=mode)

    mistakes = [
        (_RECALL_FULL_WIDTH, slip("full_width")),
        (_RECALL_NO_MASK, slip("no_mask")),
        (_RECALL_OFF_BY_ONE, slip("off_by_one")),
        (_RECALL_FLIPPED, slip(None, "flipped")),
        (_RECALL_FLIPPED, slip(None, "flipped_nan")),
        (_RECALL_FLIPPED, slip(None, "flipped_fill")),
        (_RECALL_MULTIPLIED, slip(None, "multiplied")),
        (_RECALL_AFTER, slip(None, "after")),
        (_RECALL_NO_TRANSPOSE, slip("no_transpose")),
        (_RECALL_MERGE, slip("merge_no_transpose")),
        (_RECALL_AXIS, slip("axis")),
    ]
    layer = _ByHand(fn)
    return ck.run(
        "check_recall_attention",
        layer,
        cases,
        recall_attention,
        (
            ck.Out("y", "(batch, n, num_heads * d_v)"),
            ck.Out("weights", "(batch, num_heads, n, m)"),
        ),
        mistakes,
        mk.diagnose_weights,
        inspect=lambda case, got: layer.mistake(),
        signature="my_recall_attention(memory, asked, W_Q, W_K, W_V, num_heads, "
        "lengths)",
        hint="memory is (batch, m, d_model) and asked (batch, n, d_model); split "
        "each projection into (batch, num_heads, t, d) before the scores",
    )
