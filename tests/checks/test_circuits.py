"""The checkers of lesson 11's build and predict exercises (helpers.checks.circuits).

check_induction_scores must accept the score of every head of every layer and
name each wrong one (offsets, ranges, pooling, axes), and must refuse an answer
that calls the one-layer helper induction.prefix_matching_score;
check_fixed_repeat_prediction wants a bool and compares it with a training run
(monkeypatched here, so the tests do not train).
"""

import numpy as np
import pytest

from helpers import checks, induction
from helpers.checks import CheckFailed, circuits
from helpers.checks.circuits import (
    check_fixed_repeat_prediction,
    check_induction_scores,
)
from tests.checks.catalogue import right, topic_tests, wrong
from tests.checks.staged import assert_staged


def induction_scores(weights, lengths):
    weights = np.asarray(weights)
    picked = []
    for b, p in enumerate(np.asarray(lengths).tolist()):
        i = np.arange(p, 2 * p)
        picked.append(weights[b, :, :, i, i - p + 1])  # (P, layers, heads)
    return np.concatenate(picked, axis=0).mean(axis=0)


def scores_loop(weights, lengths):
    _, layers, heads, _, _ = weights.shape
    out = np.zeros((layers, heads))
    count = 0
    for b, p in enumerate(lengths):
        for i in range(p, 2 * p):
            out += weights[b, :, :, i, i - p + 1]
            count += 1
    return out / count


def scores_duplicate(weights, lengths):
    picked = [
        weights[b][:, :, np.arange(p, 2 * p), np.arange(p, 2 * p) - p]
        for b, p in enumerate(lengths)
    ]
    return np.concatenate(picked, axis=-1).mean(-1)


def scores_previous(weights, lengths):
    picked = [
        weights[b][:, :, np.arange(p, 2 * p), np.arange(p, 2 * p) - 1]
        for b, p in enumerate(lengths)
    ]
    return np.concatenate(picked, axis=-1).mean(-1)


def scores_both_copies(weights, lengths):
    picked = [
        weights[b][:, :, np.arange(0, 2 * p), np.arange(0, 2 * p) - p + 1]
        for b, p in enumerate(lengths)
    ]
    return np.concatenate(picked, axis=-1).mean(-1)


def scores_swapped(weights, lengths):
    picked = [
        weights[b][:, :, np.arange(p, 2 * p) - p + 1, np.arange(p, 2 * p)]
        for b, p in enumerate(lengths)
    ]
    return np.concatenate(picked, axis=-1).mean(-1)


def scores_per_sequence(weights, lengths):
    means = [
        weights[b][:, :, np.arange(p, 2 * p), np.arange(p, 2 * p) - p + 1].mean(-1)
        for b, p in enumerate(lengths)
    ]
    return np.mean(means, axis=0)


def scores_too_far(weights, lengths):
    picked = [
        weights[b][:, :, np.arange(p, 2 * p), np.arange(p, 2 * p) - p + 2]
        for b, p in enumerate(lengths)
    ]
    return np.concatenate(picked, axis=-1).mean(-1)


def scores_short_range(weights, lengths):
    picked = [
        weights[b][:, :, np.arange(p, 2 * p - 1), np.arange(p, 2 * p - 1) - p + 1]
        for b, p in enumerate(lengths)
    ]
    return np.concatenate(picked, axis=-1).mean(-1)


def scores_heads_first(weights, lengths):
    return induction_scores(weights, lengths).T


def scores_by_helper(weights, lengths):
    return np.stack(
        [
            induction.prefix_matching_score(weights[:, layer], lengths)
            for layer in range(weights.shape[1])
        ]
    )


def predict_false():
    return False


def predict_true():
    return True


def predict_text():
    return "no"


RIGHT = [
    right(check_induction_scores, induction_scores),
    right(check_induction_scores, scores_loop),
]
WRONG = [
    *wrong(
        check_induction_scores,
        [
            (scores_duplicate, "duplicate-token score"),
            (scores_previous, "previous-token score"),
            (scores_both_copies, "queries of the first copy"),
            (scores_swapped, "above the diagonal"),
            (scores_per_sequence, "averaged each sequence first"),
            (scores_heads_first, "(layers, num_heads)"),
            (scores_short_range, "leaves out the last query"),
            (scores_too_far, "one position past"),
            (scores_by_helper, "you called induction.prefix_matching_score"),
        ],
    ),
]
test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


@pytest.mark.parametrize(
    "fn", [scores_duplicate, scores_previous, scores_both_copies, scores_swapped]
)
def test_the_symptom_names_the_mistake_without_the_fix(fn):
    with pytest.raises(CheckFailed) as info:
        check_induction_scores(fn)
    mistake = info.value.mistake
    assert mistake is not None and mistake.why and mistake.fix
    assert mistake.fix not in mistake.symptom


def test_the_helper_works_again_after_the_check():
    with pytest.raises(CheckFailed):
        check_induction_scores(scores_by_helper)
    weights = np.full((1, 1, 4, 4), 0.25)
    assert induction.prefix_matching_score(weights, np.array([2])).shape == (1,)


@pytest.fixture
def no_training(monkeypatch):
    """A stand-in for the 400-step run: no previous-token head in layer 1."""
    seen = []

    def fake_run(config):
        seen.append(dict(config))
        return {"previous_token": np.array([[[0.1, 0.2], [0.5, 0.6]]])}

    monkeypatch.setattr(circuits, "fixed_repeat_run", fake_run)
    return seen


def test_prediction_right_and_wrong(no_training, capsys):
    config = {"seed": 0}
    assert check_fixed_repeat_prediction(predict_false, config) is True
    assert "✓ check_fixed_repeat_prediction" in capsys.readouterr().out
    with pytest.raises(
        CheckFailed, match="you predicted that layer 1 would grow"
    ) as info:
        check_fixed_repeat_prediction(predict_true, config)
    assert info.value.mistake.fix not in info.value.mistake.symptom
    with pytest.raises(CheckFailed, match="return True or False"):
        check_fixed_repeat_prediction(predict_text, config)
    assert config == {"seed": 0}  # the learner's config is not changed


def test_unsolved_prediction_does_not_train(no_training):
    def stub(*args):
        raise NotImplementedError("Exercise: replace this line with your code")

    with pytest.raises(CheckFailed, match="not implemented yet"):
        check_fixed_repeat_prediction(stub, {})
    with pytest.raises(CheckFailed, match="not implemented yet"):
        check_induction_scores(stub)
    assert no_training == []


def test_fixed_repeat_run_copies_the_config(monkeypatch):
    calls = []
    monkeypatch.setattr(induction, "train", lambda c, progress: calls.append(c) or {})
    monkeypatch.setattr(circuits, "_RUNS", {})
    config = {"seed": 3, "steps": 1000}
    circuits.fixed_repeat_run(config)
    circuits.fixed_repeat_run(dict(config))
    assert config == {"seed": 3, "steps": 1000}
    assert len(calls) == 1  # cached: the check and the cell after it train once
    assert calls[0]["min_repeat"] == calls[0]["max_repeat"] == 16
    assert calls[0]["steps"] == 400


BUILD_WRONG = [
    (scores_duplicate, "duplicate-token score"),
    (scores_previous, "previous-token score"),
    (scores_both_copies, "queries of the first copy"),
    (scores_swapped, "above the diagonal"),
    (scores_per_sequence, "averaged each sequence first"),
]


@pytest.mark.parametrize(
    ("fn", "says"), BUILD_WRONG, ids=lambda x: getattr(x, "__name__", str(x))[:30]
)
def test_build_hints_come_in_steps(fn, says, capsys):
    assert_staged(checks.check_induction_scores, (fn,), says, capsys)


def test_prediction_hints_come_in_steps(no_training, capsys):
    assert_staged(
        checks.check_fixed_repeat_prediction,
        (predict_true, {"seed": 0}),
        "you predicted that layer 1 would grow",
        capsys,
    )


@pytest.mark.parametrize(
    ("fn", "line"),
    [
        (scores_duplicate, "np.arange(p, 2 * p) - p]"),
        (scores_previous, "np.arange(p, 2 * p) - 1]"),
        (scores_swapped, "np.arange(p, 2 * p) - p + 1, np.arange(p, 2 * p)]"),
        (scores_by_helper, "induction.prefix_matching_score(weights[:, layer]"),
    ],
)
def test_look_at_quotes_the_learners_line(fn, line):
    with pytest.raises(CheckFailed) as info:
        check_induction_scores(fn)
    assert line in info.value.where
    assert "RuntimeError" not in str(info.value)


def test_the_prediction_hint_reads_as_a_sentence(no_training, capsys):
    checks.check_fixed_repeat_prediction(predict_false, {"seed": 0})
    capsys.readouterr()
    checks.hint("fixed_repeat_prediction")
    checks._hints.reset()
    with pytest.raises(CheckFailed):
        checks.check_fixed_repeat_prediction(predict_text, {"seed": 0})
    checks.hint("fixed_repeat_prediction")
    out = capsys.readouterr().out
    assert "checks Ask" not in out
    assert "checks a prediction fn() -> bool" in out
