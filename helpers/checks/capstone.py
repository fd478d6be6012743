"""Checkers for lesson 09, the capstone: three experiments and a multi-head layer.

``check_d_k_experiment``, ``check_scale_experiment`` and ``check_mask_experiment``
take the learner's ``my_..._experiment()`` (a config and predictions), the
lesson's ``train`` function, its shared ``QUICK`` config and the ``baseline``
history trained from it. They refuse a config that is ``QUICK`` itself, or a
``QUICK`` changed since the baseline (a learner's in-place edit would poison
every later experiment), train a copy of the config, and compare each
prediction with what the run measured: the answers are computed here, never
written in the check cell. ``check_recall_attention`` checks the build
exercise, the model's attention layer with several heads, on fresh NumPy cases.
No torch here: ``train`` is the lesson's.
"""

import dataclasses
import math
import sys
import textwrap

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.checks import _mistakes as mk

__all__ = [
    "check_d_k_experiment",
    "check_scale_experiment",
    "check_mask_experiment",
    "check_recall_attention",
]

# --------------------------------------------------------------------------
# The experiments (exercises 9.1 to 9.3)
# --------------------------------------------------------------------------

_SHARED = ck.Mistake(
    symptom="your config is QUICK itself, not a copy: your function changed the "
    "shared QUICK dict in place (`config = QUICK` names the same dict)",
    why="every later experiment starts from QUICK; after an in-place edit they all "
    "run with your change, and nothing says so. Re-run the cell that defines QUICK "
    "to restore it",
    fix="build a new dict: config = {**QUICK, ...: ...} (or dict(QUICK), then edit "
    "the copy)",
    line=r"(?i)=\s*quick\s*$|quick\s*\[",
)
_QUICK_CHANGED = ck.Mistake(
    symptom="QUICK is no longer the config the baseline was trained with: its "
    "{changed} changed since (an in-place edit such as QUICK[...] = ...)",
    why="the experiments compare with the baseline; a changed QUICK changes every "
    "later run. Re-run the cell that defines QUICK to restore it",
    fix="never assign into QUICK; copy it: config = {**QUICK, ...: ...}",
)


_UNKNOWN_KEY = ck.Mistake(
    symptom="your config has {unknown}, which {is_are} not a key of the config: "
    "QUICK's keys are {keys}",
    why="a dict takes any key without complaint: train never reads a misspelt "
    "one, so the run would quietly keep QUICK's value of the key you meant",
    fix="spell the key as QUICK does: {change}",
)
_MISSING_KEY = ck.Mistake(
    symptom="your config has no {missing}: it must hold every key of QUICK ({keys})",
    why="train reads every entry of the config; a dict written from scratch "
    "leaves out the ones you did not name",
    fix="start from a copy of QUICK and change only what the exercise names: {change}",
)
_WRONG_VALUE = ck.Mistake(
    symptom="your config sets {key} = {value!r}, which is not the change this "
    "experiment makes (re-read the exercise: which value does it name?)",
    why="the check trains with your config and compares your prediction with that "
    "run; another value would measure another experiment than the one you "
    "predicted",
    fix="{change}",
)
_UNCHANGED = ck.Mistake(
    symptom="your config leaves {key} as QUICK has it ({value!r}): the change this "
    "experiment makes is missing",
    why="without the change the run is the baseline again, and it cannot tell "
    "whether your prediction was right",
    fix="{change}",
)
_EXTRA_CHANGE = ck.Mistake(
    symptom="your config also changes {extra}, which this experiment leaves as "
    "QUICK has {them_it}",
    why="an experiment changes one thing at a time, so that the change explains "
    "the difference with the baseline; a second change would share the credit",
    fix="leave {extra} as in QUICK: {change}",
)


def _keys(names):
    return ", ".join(f"`{k}`" for k in names)


def _config_problem(config, quick, expected):
    """The first thing wrong with ``config`` (a Mistake), or None if it is right."""
    needed = {k: v for k, v in expected.items() if quick.get(k, object()) != v}
    change = (
        "config = {**QUICK, "
        + ", ".join(f"{k!r}: {v!r}" for k, v in needed.items()).replace("'", '"')
        + "}"
    )
    facts = {"keys": _keys(expected), "change": change}
    unknown = [k for k in config if k not in expected]
    if unknown:
        return _UNKNOWN_KEY.format(
            **facts,
            unknown=_keys(unknown),
            is_are="is" if len(unknown) == 1 else "are",
        )
    missing = [k for k in expected if k not in config]
    if missing:
        return _MISSING_KEY.format(**facts, missing=_keys(missing))
    for key, value in needed.items():
        if config[key] != value:
            mistake = _UNCHANGED if config[key] == quick[key] else _WRONG_VALUE
            return mistake.format(**facts, key=f"`{key}`", value=config[key])
    extra = [k for k in expected if config[k] != expected[k]]
    if extra:
        them_it = "it" if len(extra) == 1 else "them"
        return _EXTRA_CHANGE.format(**facts, extra=_keys(extra), them_it=them_it)
    return None


def _check_config(name, fn, config, quick, expected):
    mistake = _config_problem(config, quick, expected)
    if mistake is not None:
        raise ck.CheckFailed(name, mistake, where=ck.defined_at(fn))


def _wrong_prediction(name, said, seen, why):
    return ck.Mistake(
        symptom=f"your prediction `{name}` = {said!r} is not what happened: {seen}",
        why=why,
        fix=f"{name} = {not said!r}: the run above shows it; the why says what "
        "made it so",
    )


def _changed_keys(a, b):
    keys = sorted(set(a) | set(b), key=str)
    return ", ".join(f"`{k}`" for k in keys if a.get(k, "?") != b.get(k, "?"))


def _run_experiment(name, fn, train, quick, baseline, count):
    """Call ``fn``; return (config, predictions) once QUICK and the config are sound."""
    case = ck.make_case((), note="no inputs")
    result = ck.call(name, fn, case, f"{ck.fn_name(fn)}()", "")
    if not isinstance(result, tuple | list) or len(result) != count:
        raise ck.CheckFailed(
            name, f"{ck.fn_name(fn)} must return a tuple of {count} values"
        )
    if train is None or quick is None or baseline is None:
        raise TypeError(f"{name}(fn, train, QUICK, baseline): pass all four")
    config = result[0]
    if config is quick:
        raise ck.CheckFailed(name, _SHARED, where=ck.look_at(fn, _SHARED))
    frozen = dict(baseline["config"])
    if dict(quick) != frozen:
        mistake = _QUICK_CHANGED.filled({"changed": _changed_keys(quick, frozen)})
        raise ck.CheckFailed(name, mistake)
    if not isinstance(config, dict):
        raise ck.CheckFailed(name, f"the config must be a dict; got {type(config)}")
    return dict(config), frozen, result[1:]


# What each run showed, told once the learner's prediction has passed: written
# here rather than in the lesson, so that no answer sits above a check cell.
_D_K_HAPPENED = (
    "In one dimension the scores q_t k_s rank the slots the same way whatever the "
    "question: a positive q_t by k_s, a negative one in reverse. So a question can "
    "only point at the slot with the largest or the smallest key; it is right when "
    "its key happens to be one of those two, and otherwise gets a blurred average. "
    'More training does not help (try "steps": 2000). With d_k >= 2 the keys can '
    "sit at different angles and a query can point at any one of them: a lookup "
    "among many keys needs enough dimensions to tell them apart, one reason real "
    "models use d_k = 64 or 128 per head."
)
_SCALE_HAPPENED = (
    'Without the scale the untrained model is already "sure" of itself: each '
    "question puts almost all its weight on one slot, chosen by the random initial "
    "weights. The gradients through a saturated softmax are tiny, so the first "
    "hundred steps achieve much less than with the scale. Then it catches up: Adam "
    "divides each gradient by its own running size, which partly undoes the tiny "
    "gradients, and the task is easy. In a deep model, with plain SGD or a harder "
    "task, such a start can stall training much longer: dividing by sqrt(d_k) is "
    "cheap insurance that the softmax starts soft."
)
_MASK_HAPPENED = (
    "A flipped mask does not crash and gives no NaN; the loss even goes down a "
    "little, to ln 10, the loss of a uniform guess (the readout learns that every "
    "digit is equally likely). It silently makes the task impossible: every "
    "question sees only padding, and a full memory gives fully masked rows, so zero "
    "weights and a zero output (lesson 05). The weight on the right key is 0 at "
    "every checkpoint: the first thing to check when a model with a mask will not "
    "learn."
)


def _passed(name, result, happened):
    """Print the success line, then what happened, wrapped for a notebook."""
    print(f"✓ {name}: {result}")
    print(textwrap.fill(f"What happened: {happened}", 88, break_on_hyphens=False))


def _predicted(name, fn, pairs):
    """Raise the first wrong prediction: pairs of (name, said, observed, seen, why)."""
    for label, said, observed, seen, why in pairs:
        if not isinstance(said, bool | np.bool_):
            raise ck.CheckFailed(name, f"`{label}` must be True or False; got {said!r}")
        if bool(said) != bool(observed):
            mistake = _wrong_prediction(label, bool(said), seen, why)
            raise ck.CheckFailed(name, mistake, where=ck.defined_at(fn))


def check_d_k_experiment(fn, train=None, quick=None, baseline=None):
    """Check ``fn() -> (config, prediction)``: QUICK with d_k = 1, above 90%?"""
    name = "check_d_k_experiment"
    config, frozen, (prediction,) = _run_experiment(name, fn, train, quick, baseline, 2)
    expected = {**frozen, "d_k": 1}
    _check_config(name, fn, config, frozen, expected)
    run = train(dict(config))
    observed = run["accuracy"][-1]
    seen = f"accuracy {observed:.2f} with d_k = 1 (d_k = {frozen['d_k']}: "
    seen += f"{baseline['accuracy'][-1]:.2f})"
    why = (
        "with d_k = 1 the score q_t * k_s is a product of two numbers: for a "
        "positive q_t it is largest at the largest k_s whatever key was asked, so "
        "a question can only point at the slot with the largest or smallest key"
    )
    _predicted(name, fn, [("prediction", prediction, observed > 0.9, seen, why)])
    _passed(name, f"your prediction was right: {seen}", _D_K_HAPPENED)
    return True


def check_scale_experiment(fn, train=None, quick=None, baseline=None):
    """Check ``fn() -> (config, saturated, slower)``: d_k = 256 without the scale."""
    name = "check_scale_experiment"
    config, frozen, (saturated, slower) = _run_experiment(
        name, fn, train, quick, baseline, 3
    )
    expected = {**frozen, "d_k": 256, "scaled": False}
    _check_config(name, fn, config, frozen, expected)
    unscaled = train(dict(config))
    scaled = train({**frozen, "d_k": 256})

    def at_100(run):
        return run["accuracy"][run["step"].index(100)]

    top = unscaled["max_weight"][0]
    seen_sat = f"the unscaled model's mean largest weight at step 0 is {top:.2f}"
    seen_sat += f" (scaled: {scaled['max_weight'][0]:.2f})"
    seen_slow = (
        f"accuracy at step 100: unscaled {at_100(unscaled):.2f}, scaled "
        f"{at_100(scaled):.2f}"
    )
    _predicted(
        name,
        fn,
        [
            (
                "saturated",
                saturated,
                top > 0.9,
                seen_sat,
                "unscaled scores at d_k = 256 spread about 23: exp(23) against "
                "exp(0) makes the softmax nearly one-hot on whichever slot is "
                "largest by chance",
            ),
            (
                "slower",
                slower,
                at_100(unscaled) < at_100(scaled),
                seen_slow,
                "a saturated softmax has near-zero gradients (lesson 04): the "
                "unscaled model starts slowly, stuck on random slots",
            ),
        ],
    )
    _passed(
        name, f"both predictions were right: {seen_sat}; {seen_slow}", _SCALE_HAPPENED
    )
    return True


def check_mask_experiment(fn, train=None, quick=None, baseline=None):
    """Check ``fn() -> (config, prediction)``: the mask flipped, above 30%?"""
    name = "check_mask_experiment"
    config, frozen, (prediction,) = _run_experiment(name, fn, train, quick, baseline, 2)
    expected = {**frozen, "mask": "flipped"}
    _check_config(name, fn, config, frozen, expected)
    run = train(dict(config))
    observed = run["accuracy"][-1]
    seen = (
        f"accuracy {observed:.2f} (chance 0.10), final loss {run['loss'][-1]:.2f} "
        f"(a uniform guess: ln 10 = {math.log(10):.2f}), largest weight on the "
        f"right key at any checkpoint {max(run['weight_on_key']):.2f}"
    )
    why = (
        "with the mask flipped a question may only look at the padding slots, "
        "which hold no information; a full memory has no visible slot at all "
        "(zero weights, a zero output)"
    )
    _predicted(name, fn, [("prediction", prediction, observed > 0.3, seen, why)])
    _passed(name, f"your prediction was right: {seen}", _MASK_HAPPENED)
    return True


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
