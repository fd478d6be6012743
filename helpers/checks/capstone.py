"""Checkers for lesson 09, the capstone: three experiments, predict then observe.

``check_d_k_experiment``, ``check_scale_experiment`` and ``check_mask_experiment``
take the learner's ``my_..._experiment()`` (a config and predictions), the
lesson's ``train`` function, its shared ``QUICK`` config and the ``baseline``
history trained from it. They refuse a config that is ``QUICK`` itself, or a
``QUICK`` changed since the baseline (a learner's in-place edit would poison
every later experiment), train a copy of the config, and compare each
prediction with what the run measured: the answers are computed here, never
written in the check cell. The build exercise, 9.4, has its checker in
``helpers.checks.recall``. No torch here: ``train`` is the lesson's.
"""

import dataclasses
import math

import numpy as np

from helpers.checks import _engine as ck
from helpers.checks._failure import wrap
from helpers.i18n import N_, _

__all__ = [
    "check_d_k_experiment",
    "check_scale_experiment",
    "check_mask_experiment",
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
    symptom="your config has {unknown}, which is not a key of the config: "
    "QUICK's keys are {keys}",
    why="a dict takes any key without complaint: train never reads a misspelt "
    "one, so the run would quietly keep QUICK's value of the key you meant",
    fix="spell the key as QUICK does: {change}",
    key="your config has {unknown}, which {is_are} not a key of the config: "
    "QUICK's keys are {keys}",
)
_UNKNOWN_KEYS = dataclasses.replace(
    _UNKNOWN_KEY,
    symptom="your config has {unknown}, which are not keys of the config: "
    "QUICK's keys are {keys}",
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
    why="the experiment is the change it names; without it (or without part of "
    "it) the run measures something else, at worst the baseline again, and it "
    "cannot tell whether your prediction was right",
    fix="{change}",
)
_EXTRA_CHANGE = ck.Mistake(
    symptom="your config also changes {extra}, which this experiment leaves as "
    "QUICK has it",
    why="an experiment changes one thing at a time, so that the change explains "
    "the difference with the baseline; a second change would share the credit",
    fix="leave {extra} as in QUICK: {change}",
    key="your config also changes {extra}, which this experiment leaves as "
    "QUICK has {them_it}",
)
_EXTRA_CHANGES = dataclasses.replace(
    _EXTRA_CHANGE,
    symptom="your config also changes {extra}, which this experiment leaves as "
    "QUICK has them",
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
        mistake = _UNKNOWN_KEY if len(unknown) == 1 else _UNKNOWN_KEYS
        return mistake.format(**facts, unknown=_keys(unknown))
    missing = [k for k in expected if k not in config]
    if missing:
        return _MISSING_KEY.format(**facts, missing=_keys(missing))
    for key, value in needed.items():
        if config[key] != value:
            mistake = _UNCHANGED if config[key] == quick[key] else _WRONG_VALUE
            return mistake.format(**facts, key=f"`{key}`", value=config[key])
    extra = [k for k in expected if config[k] != expected[k]]
    if extra:
        mistake = _EXTRA_CHANGE if len(extra) == 1 else _EXTRA_CHANGES
        return mistake.format(**facts, extra=_keys(extra))
    return None


def _check_config(name, fn, config, quick, expected):
    mistake = _config_problem(config, quick, expected)
    if mistake is not None:
        raise ck.CheckFailed(name, mistake, where=ck.defined_at(fn))


def _wrong_prediction(name, said, seen, why):
    return ck.Mistake(
        symptom="your prediction `{name}` = {said} is not what happened: {seen}",
        why=why,
        fix="{name} = {not_said}: the run above shows it; the why says what made it so",
        key=f"your prediction `{name}` = {said!r} is not what happened: {seen}",
    ).format(name=name, said=repr(said), seen=seen, not_said=repr(not said))


def _changed_keys(a, b):
    keys = sorted(set(a) | set(b), key=str)
    return ", ".join(f"`{k}`" for k in keys if a.get(k, "?") != b.get(k, "?"))


def _run_experiment(name, fn, train, quick, baseline, count):
    """Call ``fn``; return (config, predictions) once QUICK and the config are sound."""
    case = ck.make_case((), note="no inputs")
    result = ck.call(name, fn, case, f"{ck.fn_name(fn)}()", "")
    if not isinstance(result, tuple | list) or len(result) != count:
        raise ck.CheckFailed(
            name,
            _("{function} must return a tuple of {count} values").format(
                function=ck.fn_name(fn), count=count
            ),
        )
    if train is None or quick is None or baseline is None:
        raise TypeError(
            _("{name}(fn, train, QUICK, baseline): pass all four").format(name=name)
        )
    config = result[0]
    if config is quick:
        raise ck.CheckFailed(name, _SHARED, where=ck.look_at(fn, _SHARED))
    frozen = dict(baseline["config"])
    if dict(quick) != frozen:
        mistake = _QUICK_CHANGED.filled({"changed": _changed_keys(quick, frozen)})
        raise ck.CheckFailed(name, mistake)
    if not isinstance(config, dict):
        raise ck.CheckFailed(
            name,
            _("the config must be a dict; got {kind}").format(kind=type(config)),
        )
    return dict(config), frozen, result[1:]


# What each run showed, told once the learner's prediction has passed: written
# here rather than in the lesson, so that no answer sits above a check cell.
_D_K_HAPPENED = N_(
    "In one dimension the scores q_t k_s rank the slots the same way whatever the "
    "question: a positive q_t by k_s, a negative one in reverse. So a question can "
    "only point at the slot with the largest or the smallest key; it is right when "
    "its key happens to be one of those two, and otherwise gets a blurred average. "
    'More training does not help (try "steps": 2000). With d_k >= 2 the keys can '
    "sit at different angles and a query can point at any one of them: a lookup "
    "among many keys needs enough dimensions to tell them apart, one reason real "
    "models use d_k = 64 or 128 per head."
)
_SCALE_HAPPENED = N_(
    'Without the scale the untrained model is already "sure" of itself: each '
    "question puts almost all its weight on one slot, chosen by the random initial "
    "weights. The gradients through a saturated softmax are tiny, so the first "
    "hundred steps achieve much less than with the scale. Then it catches up: Adam "
    "divides each gradient by its own running size, which partly undoes the tiny "
    "gradients, and the task is easy. In a deep model, with plain SGD or a harder "
    "task, such a start can stall training much longer: dividing by sqrt(d_k) is "
    "cheap insurance that the softmax starts soft."
)
_MASK_HAPPENED = N_(
    "A flipped mask does not crash and gives no NaN; the loss even goes down a "
    "little, to ln 10, the loss of a uniform guess (the readout learns that every "
    "digit is equally likely). It silently makes the task impossible: every "
    "question sees only padding, and a full memory gives fully masked rows, so zero "
    "weights and a zero output (lesson 05). The weight on the right key is 0 at "
    "every checkpoint: the first thing to check when a model with a mask will not "
    "learn."
)


_RIGHT = N_("your prediction was right: {seen}")


def _passed(name, result, happened):
    """Print the success line, then what happened, wrapped for a notebook."""
    print(_("✓ {name}: {result}").format(name=name, result=result))
    text = _("What happened: {happened}").format(happened=_(happened))
    print("\n".join(wrap(text)))


def _predicted(name, fn, pairs):
    """Raise the first wrong prediction: pairs of (name, said, observed, seen, why)."""
    for label, said, observed, seen, why in pairs:
        if not isinstance(said, bool | np.bool_):
            raise ck.CheckFailed(
                name,
                _("`{label}` must be True or False; got {said!r}").format(
                    label=label, said=said
                ),
            )
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
    seen = _("accuracy {observed} with d_k = 1 (d_k = {d_k}: {baseline})").format(
        observed=f"{observed:.2f}",
        d_k=frozen["d_k"],
        baseline=f"{baseline['accuracy'][-1]:.2f}",
    )
    why = N_(
        "with d_k = 1 the score q_t * k_s is a product of two numbers: for a "
        "positive q_t it is largest at the largest k_s whatever key was asked, so "
        "a question can only point at the slot with the largest or smallest key"
    )
    _predicted(name, fn, [("prediction", prediction, observed > 0.9, seen, why)])
    _passed(name, _(_RIGHT).format(seen=seen), _D_K_HAPPENED)
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
    seen_sat = _(
        "the unscaled model's mean largest weight at step 0 is {top} (scaled: {scaled})"
    ).format(top=f"{top:.2f}", scaled=f"{scaled['max_weight'][0]:.2f}")
    seen_slow = _("accuracy at step 100: unscaled {unscaled}, scaled {scaled}").format(
        unscaled=f"{at_100(unscaled):.2f}", scaled=f"{at_100(scaled):.2f}"
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
                N_(
                    "unscaled scores at d_k = 256 spread about 23: exp(23) against "
                    "exp(0) makes the softmax nearly one-hot on whichever slot is "
                    "largest by chance"
                ),
            ),
            (
                "slower",
                slower,
                at_100(unscaled) < at_100(scaled),
                seen_slow,
                N_(
                    "a saturated softmax has near-zero gradients (lesson 04): the "
                    "unscaled model starts slowly, stuck on random slots"
                ),
            ),
        ],
    )
    both = _("both predictions were right: {first}; {second}").format(
        first=seen_sat, second=seen_slow
    )
    _passed(name, both, _SCALE_HAPPENED)
    return True


def check_mask_experiment(fn, train=None, quick=None, baseline=None):
    """Check ``fn() -> (config, prediction)``: the mask flipped, above 30%?"""
    name = "check_mask_experiment"
    config, frozen, (prediction,) = _run_experiment(name, fn, train, quick, baseline, 2)
    expected = {**frozen, "mask": "flipped"}
    _check_config(name, fn, config, frozen, expected)
    run = train(dict(config))
    observed = run["accuracy"][-1]
    seen = _(
        "accuracy {observed} (chance 0.10), final loss {loss} (a uniform guess: "
        "ln 10 = {ln10}), largest weight on the right key at any checkpoint {top}"
    ).format(
        observed=f"{observed:.2f}",
        loss=f"{run['loss'][-1]:.2f}",
        ln10=f"{math.log(10):.2f}",
        top=f"{max(run['weight_on_key']):.2f}",
    )
    why = N_(
        "with the mask flipped a question may only look at the padding slots, "
        "which hold no information; a full memory has no visible slot at all "
        "(zero weights, a zero output)"
    )
    _predicted(name, fn, [("prediction", prediction, observed > 0.3, seen, why)])
    _passed(name, _(_RIGHT).format(seen=seen), _MASK_HAPPENED)
    return True
