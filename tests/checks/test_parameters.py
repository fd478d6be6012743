"""The checker of lesson 07's prediction (helpers.checks.parameters)."""

import pytest

from helpers import checks
from helpers.checks import CheckFailed
from helpers.checks.parameters import check_parameter_count
from tests.checks.catalogue import right, topic_tests, wrong
from tests.checks.staged import assert_staged


def my_parameter_count(d_model, num_heads, bias):
    return 4 * d_model * d_model + (4 * d_model if bias else 0)


def count_per_head(d_model, num_heads, bias):
    return num_heads * my_parameter_count(d_model, num_heads, bias)


def count_head_sized(d_model, num_heads, bias):
    d_k = d_model // num_heads
    return 4 * num_heads * d_k * d_k + (4 * d_model if bias else 0)


def count_no_w_o(d_model, num_heads, bias):
    return 3 * d_model * d_model + (3 * d_model if bias else 0)


def count_no_bias(d_model, num_heads, bias):
    return 4 * d_model * d_model


def count_three_biases(d_model, num_heads, bias):
    return 4 * d_model * d_model + (3 * d_model if bias else 0)


def count_by_building(d_model, num_heads, bias):
    """Builds the layer the exercise says to count without."""
    from torch import nn

    layer = nn.MultiheadAttention(d_model, num_heads, bias=bias)
    return sum(p.numel() for p in layer.parameters())


def count_float(d_model, num_heads, bias):
    return float(my_parameter_count(d_model, num_heads, bias))


RIGHT = [right(check_parameter_count, my_parameter_count)]
WRONG = wrong(
    check_parameter_count,
    [
        (count_per_head, "grows with num_heads"),
        (count_head_sized, "shrinks with num_heads"),
        (count_no_w_o, "output projection is missing"),
        (count_no_bias, "this layer has bias=True"),
        (count_float, "whole number"),
        (count_three_biases, "only three bias vectors"),
        (count_by_building, "you called nn.MultiheadAttention"),
    ],
)
test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


@pytest.mark.parametrize("fn", [count_per_head, count_head_sized, count_no_w_o])
def test_the_symptom_names_the_mistake_without_the_fix(fn):
    with pytest.raises(CheckFailed) as info:
        check_parameter_count(fn)
    mistake = info.value.mistake
    assert mistake is not None and mistake.why and mistake.fix
    assert mistake.fix not in mistake.symptom


@pytest.mark.parametrize(
    ("fn", "says"),
    [
        (count_per_head, "grows with num_heads"),
        (count_head_sized, "shrinks with num_heads"),
        (count_no_w_o, "output projection is missing"),
    ],
)
def test_hints_come_in_steps(fn, says, capsys):
    assert_staged(checks.check_parameter_count, (fn,), says, capsys)


def test_building_the_layer_is_refused_at_the_line_that_builds_it():
    with pytest.raises(CheckFailed) as info:
        check_parameter_count(count_by_building)
    text = str(info.value)
    assert "layer = nn.MultiheadAttention(d_model, num_heads, bias=bias)" in text
    assert "Refused" not in text and "Error" not in text


def test_the_layer_is_back_after_the_check():
    from torch import nn

    with pytest.raises(CheckFailed):
        check_parameter_count(count_by_building)
    assert nn.MultiheadAttention(8, 2).embed_dim == 8


def test_an_unrecognised_count_gets_the_method_and_the_right_answer(capsys):
    def off_by_one(d_model, num_heads, bias):
        return my_parameter_count(d_model, num_heads, bias) + 1

    with pytest.raises(CheckFailed, match="the right answer has"):
        checks.check_parameter_count(off_by_one)
    checks.hint("parameter_count")
    out = capsys.readouterr().out
    assert "add up their sizes" in out
    assert "fn(d_model, num_heads, bias) ->" not in out
