"""Lesson 09's checkers (helpers.checks.capstone) against wrong answers.

The three experiment checkers run with a stand-in for the lesson's ``train``
(a few lines that return a history of the same form, at once), so these tests
check the checkers' logic: the shared QUICK refused, a changed QUICK refused, a
wrong config named, each prediction compared with what the run measured. The
build checker, ``check_recall_attention``, is tested in ``test_recall.py``.
"""

import math
import re

import pytest

from helpers import checks
from helpers.checks import CheckFailed, _hints

# --------------------------------------------------------------------------
# The experiments, with a stand-in trainer
# --------------------------------------------------------------------------

QUICK_AS_DEFINED = {
    "d_model": 32,
    "d_k": 16,
    "scaled": True,
    "mask": "padding",
    "steps": 300,
    "seed": 0,
}


def fake_train(config):
    """What the lesson's train measures, in the shape it returns it."""
    config = dict(config)
    accuracy = 0.99
    if config["d_k"] == 1:
        accuracy = 0.51
    if config["mask"] == "flipped":
        accuracy = 0.10
    unscaled = not config["scaled"]
    return {
        "config": config,
        "step": [0, 100, 300],
        "accuracy": [0.1, 0.29 if unscaled else 0.97 * accuracy, accuracy],
        "loss": [2.4, 2.3, 2.30 if config["mask"] == "flipped" else 0.1],
        "weight_on_key": [0.0, 0.0, 0.0 if config["mask"] == "flipped" else 0.9],
        "max_weight": [0.96 if unscaled else 0.53, 0.9, 0.95],
    }


@pytest.fixture
def lab():
    quick = dict(QUICK_AS_DEFINED)
    return quick, fake_train(quick)


def d_k_right(quick):
    def my_d_k_experiment():
        return {**quick, "d_k": 1}, False

    return my_d_k_experiment


def test_the_d_k_experiment_passes_with_the_right_prediction(lab, capsys):
    quick, baseline = lab
    assert checks.check_d_k_experiment(d_k_right(quick), fake_train, quick, baseline)
    out = capsys.readouterr().out
    assert "your prediction was right: accuracy 0.51 with d_k = 1" in out


def test_a_wrong_prediction_is_told_what_happened_then_why(lab):
    quick, baseline = lab
    _hints.reset()

    def my_d_k_experiment():
        return {**quick, "d_k": 1}, True

    with pytest.raises(CheckFailed, match="is not what happened: accuracy 0.51"):
        checks.check_d_k_experiment(my_d_k_experiment, fake_train, quick, baseline)
    with pytest.raises(CheckFailed, match="Why: with d_k = 1"):
        checks.check_d_k_experiment(my_d_k_experiment, fake_train, quick, baseline)
    _hints.reset()


def test_config_is_quick_itself_is_refused_and_named(lab):
    quick, baseline = lab

    def my_d_k_experiment():
        config = quick
        config["d_k"] = 1
        return config, False

    with pytest.raises(CheckFailed, match="QUICK itself, not a copy") as info:
        checks.check_d_k_experiment(my_d_k_experiment, fake_train, quick, baseline)
    assert "config = quick" in info.value.where  # the learner's line
    assert "{**QUICK" not in str(info.value)  # the fix only on request


def test_a_quick_changed_earlier_is_refused_by_every_experiment(lab):
    quick, baseline = lab
    quick["d_k"] = 1  # an in-place edit somewhere before the check

    def my_mask_experiment():
        return {**quick, "mask": "flipped"}, False

    for checker, fn in [
        (checks.check_d_k_experiment, d_k_right(quick)),
        (checks.check_mask_experiment, my_mask_experiment),
    ]:
        with pytest.raises(CheckFailed, match="its `d_k` changed since"):
            checker(fn, fake_train, quick, baseline)


def test_the_trainer_gets_a_copy_of_the_config(lab):
    quick, baseline = lab
    seen = []

    def spying_train(config):
        seen.append(config)
        config["d_k"] = 99  # a trainer that scribbles on its argument
        return fake_train({**config, "d_k": 1})

    config = {**quick, "d_k": 1}
    checks.check_d_k_experiment(lambda: (config, False), spying_train, quick, baseline)
    assert config["d_k"] == 1 and seen[0] is not config


WRONG_CONFIGS = [
    (lambda q: ({**q, "d_k": 2}, False), "sets `d_k` = 2, which is not the change"),
    (lambda q: ({**q, "d_k": 1, "steps": 600}, False), "also changes `steps`"),
    (lambda q: ({"d_k": 1}, False), "has no `d_model`, `scaled`, `mask`"),
    (lambda q: ({**q}, False), "leaves `d_k` as QUICK has it (16)"),
    (lambda q: ({**q, "dk": 1}, False), "has `dk`, which is not a key of the config"),
    (lambda q: ({**q, "d_k": 1}, "no"), "must be True or False"),
    (lambda q: {**q, "d_k": 1}, "must return a tuple of 2 values"),
]


@pytest.mark.parametrize(("make", "says"), WRONG_CONFIGS)
def test_a_wrong_d_k_answer_is_named(lab, make, says):
    quick, baseline = lab
    with pytest.raises(CheckFailed, match=re.escape(says)):
        checks.check_d_k_experiment(lambda: make(quick), fake_train, quick, baseline)


def _config_failure(checker, quick, baseline, config, *extra):
    with pytest.raises(CheckFailed) as info:
        checker(lambda: (config, *extra), fake_train, quick, baseline)
    return info.value


def test_an_unknown_key_is_named_as_unknown_with_the_valid_keys(lab):
    quick, baseline = lab
    err = _config_failure(
        checks.check_d_k_experiment, quick, baseline, {**quick, "dk": 1}, False
    )
    assert "`dk`, which is not a key of the config" in err.diagnosis
    assert "`d_model`, `d_k`, `scaled`, `mask`, `steps`, `seed`" in err.diagnosis
    assert "one thing at a time" not in err.mistake.why
    assert "misspelt" in err.mistake.why
    assert '"d_k": 1' in err.mistake.fix and '"d_k": 1' not in str(err)


def test_a_wrong_value_is_told_the_expected_value_only_in_the_fix(lab):
    quick, baseline = lab
    err = _config_failure(
        checks.check_mask_experiment, quick, baseline, {**quick, "mask": False}, False
    )
    assert "sets `mask` = False, which is not the change" in err.diagnosis
    assert "flipped" not in err.diagnosis and "flipped" not in err.mistake.why
    assert err.mistake.fix == 'config = {**QUICK, "mask": "flipped"}'
    assert "one thing at a time" not in err.mistake.why


def test_a_missing_key_and_an_extra_change_get_their_own_why(lab):
    quick, baseline = lab
    missing = _config_failure(
        checks.check_scale_experiment, quick, baseline, {"d_k": 256}, True, True
    )
    assert "has no `d_model`" in missing.diagnosis
    assert "from scratch" in missing.mistake.why
    extra = _config_failure(
        checks.check_scale_experiment,
        quick,
        baseline,
        {**quick, "d_k": 256, "scaled": False, "seed": 3},
        True,
        True,
    )
    assert "also changes `seed`" in extra.diagnosis
    assert "one thing at a time" in extra.mistake.why
    assert '"d_k": 256, "scaled": False}' in extra.mistake.fix


def test_a_passed_experiment_says_what_happened(lab, capsys):
    quick, baseline = lab
    checks.check_d_k_experiment(d_k_right(quick), fake_train, quick, baseline)
    assert "What happened: In one dimension" in capsys.readouterr().out


def test_the_scale_experiment_checks_both_predictions(lab, capsys):
    quick, baseline = lab
    config = {**quick, "d_k": 256, "scaled": False}
    assert checks.check_scale_experiment(
        lambda: (config, True, True), fake_train, quick, baseline
    )
    assert "both predictions were right" in capsys.readouterr().out
    for said, name in [((False, True), "saturated"), ((True, False), "slower")]:
        with pytest.raises(CheckFailed, match=f"prediction `{name}`"):
            checks.check_scale_experiment(
                lambda s=said: (config, *s), fake_train, quick, baseline
            )
    with pytest.raises(CheckFailed, match="`scaled`"):
        checks.check_scale_experiment(
            lambda: ({**quick, "d_k": 256}, True, True), fake_train, quick, baseline
        )


def test_the_mask_experiment(lab, capsys):
    quick, baseline = lab
    config = {**quick, "mask": "flipped"}
    assert checks.check_mask_experiment(
        lambda: (config, False), fake_train, quick, baseline
    )
    assert f"ln 10 = {math.log(10):.2f}" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match="is not what happened: accuracy 0.10"):
        checks.check_mask_experiment(
            lambda: (config, True), fake_train, quick, baseline
        )
