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

import math

import numpy as np

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


def _config_mistake(changed):
    return ck.Mistake(
        symptom=f"your config differs from the experiment in {changed}",
        why="an experiment changes one thing at a time, so that the change explains "
        "the difference with the baseline",
        fix="start from a copy of QUICK and set only the entries the exercise names",
    )


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
    if config != expected:
        raise ck.CheckFailed(name, _config_mistake(_changed_keys(config, expected)))
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
    print(f"✓ {name}: your prediction was right: {seen}")
    return True


def check_scale_experiment(fn, train=None, quick=None, baseline=None):
    """Check ``fn() -> (config, saturated, slower)``: d_k = 256 without the scale."""
    name = "check_scale_experiment"
    config, frozen, (saturated, slower) = _run_experiment(
        name, fn, train, quick, baseline, 3
    )
    expected = {**frozen, "d_k": 256, "scaled": False}
    if config != expected:
        raise ck.CheckFailed(name, _config_mistake(_changed_keys(config, expected)))
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
    print(f"✓ {name}: both predictions were right: {seen_sat}; {seen_slow}")
    return True


def check_mask_experiment(fn, train=None, quick=None, baseline=None):
    """Check ``fn() -> (config, prediction)``: the mask flipped, above 30%?"""
    name = "check_mask_experiment"
    config, frozen, (prediction,) = _run_experiment(name, fn, train, quick, baseline, 2)
    expected = {**frozen, "mask": "flipped"}
    if config != expected:
        raise ck.CheckFailed(name, _config_mistake(_changed_keys(config, expected)))
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
    print(f"✓ {name}: your prediction was right: {seen}")
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
    if axis == -2:
        weights = mk.masked_softmax(scores, mask, mask_mode, axis=-2)
    else:
        weights = mk.masked_softmax(scores, mask, mask_mode)
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
    symptom="your weights sit on the padding slots and are zero on the real ones: "
    "the mask's polarity is flipped",
    why="the course's masks mean True = may attend, so the mask must be True on "
    "the real slots",
    fix="np.where(mask, scores, -np.inf) with mask True on the real slots",
)
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
        (_RECALL_AFTER, slip(None, "after")),
        (_RECALL_NO_TRANSPOSE, slip("no_transpose")),
        (_RECALL_MERGE, slip("merge_no_transpose")),
        (_RECALL_AXIS, slip("axis")),
    ]
    return ck.run(
        "check_recall_attention",
        fn,
        cases,
        recall_attention,
        (
            ck.Out("y", "(batch, n, num_heads * d_v)"),
            ck.Out("weights", "(batch, num_heads, n, m)"),
        ),
        mistakes,
        mk.diagnose_weights,
        signature="my_recall_attention(memory, asked, W_Q, W_K, W_V, num_heads, "
        "lengths)",
        hint="memory is (batch, m, d_model) and asked (batch, n, d_model); split "
        "each projection into (batch, num_heads, t, d) before the scores",
    )
