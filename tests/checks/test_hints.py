"""Staged hints (helpers.checks._hints): the steps in which a mistake is told.

For every known-wrong answer of the catalogue (each topic file's ``WRONG``),
run its checker twice from a fresh hint state: the first message names the
mistake (the topic file's keyword) without its why or its fix; the second adds
the why and points at ``checks.hint``; ``checks.hint(...)`` then prints the fix
(for a generated message, the why of its kind on the repeat, and its code and
method on request; with none, what the checker expects). Then the
engine's memory: per checker and mistake, a different mistake starts at step
one, a pass forgets the checker's steps, and the messages of ``checks.hint``
when nothing failed or the name is unknown.
"""

import re

import numpy as np
import pytest

from helpers import attention_np as anp
from helpers import checks
from helpers.checks import _engine as ck
from helpers.checks import _hints
from helpers.checks._engine import CheckFailed
from tests.checks.catalogue import _name, simple_sdpa, simple_softmax, topic_modules


@pytest.fixture(autouse=True)
def fresh_hints():
    """Each test starts as a fresh kernel does: no steps, no last failure."""
    _hints.reset()
    yield
    _hints.reset()


def every_wrong_answer():
    """``(checker, fns, says)`` of every topic file's WRONG list, seed or not."""
    entries = []
    for topic, module in topic_modules():
        for entry in getattr(module, "WRONG", []):
            checker, fns, says = tuple(getattr(entry, "values", entry))[:3]
            name = getattr(entry, "id", None) or "+".join(map(_name, fns))
            entries.append(pytest.param(checker, fns, says, id=f"{topic}-{name}"))
    return entries


def exported(checker):
    """The checker as a learner calls it, through helpers.checks (staged)."""
    return getattr(checks, checker.__name__)


def fail(checker, fns):
    with pytest.raises(CheckFailed) as info:
        checker(*fns)
    return info.value


def parts(text):
    """A fix or why as the words a message would quote (fields already filled)."""
    return " ".join(text.split())


def flat(err):
    return " ".join(str(err).split())


@pytest.mark.parametrize(("checker", "fns", "says"), every_wrong_answer())
def test_a_mistake_is_told_in_steps(checker, fns, says, capsys):
    checker = exported(checker)
    first = fail(checker, fns)
    if says is not None:
        assert says in str(first)  # the diagnosis keyword is in the symptom
    mistake = first.mistake
    second = fail(checker, fns)
    capsys.readouterr()
    checks.hint(checker.__name__)
    hinted = " ".join(capsys.readouterr().out.split())
    if mistake is None:  # a generated message (a shape, a value, a crash)
        assert_generated_in_steps(checker, first, second, hinted)
        return
    assert first.stage == 1
    assert first.diagnosis == mistake.symptom
    if mistake.fix:
        assert parts(mistake.fix) not in flat(first), "the first failure gave the fix"
        assert parts(mistake.fix) not in flat(second), "the fix came unasked"
        assert parts(mistake.fix) in hinted
    if mistake.why:
        assert parts(mistake.why) not in flat(first)
        assert second.mistake.key == mistake.key  # the same mistake, told again
        assert second.stage == 2 and parts(mistake.why) in flat(second)
    assert "checks.hint(" in str(second)


def assert_generated_in_steps(checker, first, second, hinted):
    """A generated message: the words first; on a repeat the why of its kind (a
    shape, a crash) and the pointer; the code and the method only on request."""
    assert first.stage == 1 and second.mistake is None
    if first.key is None:  # nothing more to tell (e.g. returned None)
        assert second.diagnosis == first.diagnosis
        assert "checks.hint" not in str(second)
        assert f"The method: {checker.__name__} checks" in hinted
        return
    assert second.stage == 2 and "checks.hint(" in str(second)
    if first.why:
        assert "Why:" not in str(first)
        assert f"Why: {parts(first.why)}" in flat(second)
    if first.fix:
        assert parts(first.fix) not in flat(first), "the first failure gave code"
        assert parts(first.fix) not in flat(second), "the code came unasked"
        assert f"Fix: {parts(first.fix)}" in hinted
    if first.method:
        assert f"The method: {parts(first.method)}" in hinted


# --------------------------------------------------------------------------
# The engine's memory
# --------------------------------------------------------------------------


def softmax_axis_0(x, axis=-1):
    return simple_softmax(x, axis=0)


def softmax_no_max(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def attention_unscaled(Q, K, V):
    return simple_sdpa(Q, K, V, scale=1.0)


def self_attention_unscaled(X, W_Q, W_K, W_V):
    return simple_sdpa(X @ W_Q, X @ W_K, X @ W_V, scale=1.0)


def test_a_repeated_mistake_adds_why_and_a_pointer_to_the_hint():
    first = fail(checks.check_softmax, (softmax_axis_0,))
    second = fail(checks.check_softmax, (softmax_axis_0,))
    assert (first.stage, second.stage) == (1, 2)
    assert "Why:" not in str(first) and "Why:" in str(second)
    lines = second._render_traceback_()
    assert any('checks.hint("softmax")' in line for line in lines)
    third = fail(checks.check_softmax, (softmax_axis_0,))
    assert third.stage == 2  # stays at the why: the fix only on request


def test_steps_are_kept_per_checker():
    """The same mistake in another checker starts at its symptom."""
    fail(checks.check_attention, (attention_unscaled,))
    again = fail(checks.check_attention, (attention_unscaled,))
    other = fail(checks.check_self_attention, (self_attention_unscaled,))
    assert again.mistake.key == other.mistake.key  # one shared NO_SCALE
    assert (again.stage, other.stage) == (2, 1)


def test_a_different_mistake_starts_at_step_one_and_the_first_is_remembered():
    fail(checks.check_softmax, (softmax_axis_0,))
    other = fail(checks.check_softmax, (softmax_no_max,))
    assert other.stage == 1
    back = fail(checks.check_softmax, (softmax_axis_0,))
    assert back.stage == 2


def test_a_pass_forgets_the_checkers_steps(capsys):
    """A decision: a mistake that comes back after a pass is a new attempt."""
    fail(checks.check_softmax, (softmax_axis_0,))
    assert checks.check_softmax(simple_softmax) is True
    checks.hint("softmax")
    assert "passed on its last run" in capsys.readouterr().out
    assert fail(checks.check_softmax, (softmax_axis_0,)).stage == 1


def test_hint_gives_the_fix_of_the_last_mistake_by_either_name(capsys):
    err = fail(checks.check_causal_mask, (lambda n, m: np.tril(np.ones((n, m), bool)),))
    assert "aligned upper-left" in str(err) and "k=m - n" not in str(err)
    for name in ("causal_mask", "check_causal_mask", " causal_mask "):
        checks.hint(name)
        out = capsys.readouterr().out
        assert "Fix: np.tril(..., k=m - n), here k=" in out
        assert "Why: the n new queries follow m - n earlier keys" in out


def test_hint_without_a_failure_or_with_an_unknown_name(capsys):
    checks.hint("softmax")
    out = capsys.readouterr().out
    assert "check_softmax has not failed in this kernel yet" in out
    checks.hint("sofmax")
    out = capsys.readouterr().out
    assert "no checker called 'sofmax'" in out and "check_softmax" in out


def test_hint_after_a_generated_message_gives_the_method(capsys):
    fail(checks.check_softmax, (lambda x, axis=-1: None,))
    checks.hint("softmax")
    out = capsys.readouterr().out
    assert "The method: check_softmax checks fn(x, axis=-1), a stable softmax" in out


def test_a_stub_says_not_implemented_even_as_the_second_function(capsys):
    """check_online_softmax takes two functions; the stub is named either way."""
    from tests.checks.test_online import update

    def finish(m, l, acc):
        raise NotImplementedError("Exercise")

    err = fail(checks.check_online_softmax, (update, finish))
    assert str(err).startswith(
        "check_online_softmax: finish is not implemented yet: replace the "
        "`raise NotImplementedError(...)` line with your code"
    )
    checks.hint("online_softmax")
    assert "The method: check_online_softmax checks" in capsys.readouterr().out


def test_a_stub_inside_a_checker_that_catches_exceptions_itself():
    """Lesson 11's checkers catch the learner's exceptions; the wrapper still sees
    the NotImplementedError and gives the one message."""

    def my_prefix_matching_score(weights, lengths):
        raise NotImplementedError("Exercise")

    err = fail(checks.check_prefix_matching_score, (my_prefix_matching_score,))
    assert "my_prefix_matching_score is not implemented yet" in str(err)
    assert "my_prefix_matching_score (test_hints.py, line" in err.where


def test_the_first_step_alone_says_what_and_where(capsys):
    """nbgrader runs each check cell once in a fresh kernel: step one must do."""

    def my_mask(n, m):
        ones = np.ones((n, m), dtype=bool)
        return np.tril(ones)

    err = fail(checks.check_causal_mask, (my_mask,))
    assert err.stage == 1
    assert "n=3 queries and m=5 keys" in err.diagnosis  # the case, in words
    assert err.case == "case 2 of 6: n=3, m=5"
    assert re.search(
        r"my_mask, test_hints\.py, line \d+: return np\.tril\(ones\)", err.where
    )


def test_the_learners_stub_is_not_the_line_for_a_reference_helper():
    """The watcher passes a helper through unchanged (it is not the learner's)."""
    assert checks.check_softmax(anp.softmax) is True


# --------------------------------------------------------------------------
# The engine's own messages (no Mistake names them), told in the same steps
# --------------------------------------------------------------------------


def softmax_rows_reversed(x, axis=-1):
    w = simple_softmax(x, axis)
    return w[..., ::-1]  # the right numbers, in the wrong places


def softmax_kept_axis(x, axis=-1):
    return simple_softmax(x, axis)[..., None]


def softmax_broadcast_crash(x, axis=-1):
    e = np.exp(x - x.max(axis=axis))
    return e / e.sum(axis=axis)


def test_a_wrong_value_gets_a_method_naming_the_output_case_and_index(capsys):
    first = fail(checks.check_softmax, (softmax_rows_reversed,))
    assert first.mistake is None and "`result` is wrong at index (1, 1)" in str(first)
    assert "checks.hint" not in str(first)
    second = fail(checks.check_softmax, (softmax_rows_reversed,))
    assert 'checks.hint("softmax") shows how to find it' in str(second)
    checks.hint("softmax")
    out = " ".join(capsys.readouterr().out.split())
    assert "The method: run your function on this case's inputs (x (3, 5))" in out
    assert "print each intermediate" in out
    assert "the first output that differs is `result` at index (1, 1)" in out
    assert "fn(x, axis=-1)" not in out  # not the signature again


def test_a_wrong_shape_adds_why_of_its_kind_on_the_repeat(capsys):
    first = fail(checks.check_softmax, (softmax_kept_axis,))
    assert "Why:" not in str(first)
    assert "rescales every entry" not in str(first)  # Out.hint: on request only
    second = fail(checks.check_softmax, (softmax_kept_axis,))
    assert "Why: each axis of an output has a meaning" in flat(second)
    assert "an axis was kept or added" in flat(second)
    checks.hint("softmax")
    out = " ".join(capsys.readouterr().out.split())
    assert "Fix: Softmax rescales every entry" in out
    assert "print the shape of each array it computes" in out


def test_a_crash_gives_words_first_then_why_and_its_code_on_request(capsys):
    first = fail(checks.check_softmax, (softmax_broadcast_crash,))
    assert "raised ValueError" in str(first)
    assert "dropped the axis it reduced" in str(first)  # the checker's words
    assert "keepdims" not in str(first) and "Why:" not in str(first)
    assert re.search(
        r"softmax_broadcast_crash, test_hints\.py, line \d+: e = ", first.where
    )
    second = fail(checks.check_softmax, (softmax_broadcast_crash,))
    assert "Why: NumPy lines two shapes up from their last axis" in flat(second)
    assert "keepdims" not in str(second)
    checks.hint("softmax")
    out = " ".join(capsys.readouterr().out.split())
    assert "Fix: keep the reduced axis: x.max(axis=axis, keepdims=True)" in out
    assert "print the shape of every array that goes into the line that raised" in out


def test_a_checker_documented_steps_join_the_method():
    def check_demo(fn):
        """Check ``fn(x) -> y``.

        Steps: square x, then add one.
        """
        return ck.run(
            "check_demo",
            fn,
            [ck.make_case(("x",), np.arange(3.0))],
            lambda x: x**2 + 1,
            (ck.Out("y", "(3,)"),),
            signature="fn(x)",
        )

    demo = _hints.checker(check_demo)
    with pytest.raises(CheckFailed):
        demo(lambda x: x**2)
    text = _hints.hint_text("demo", {"check_demo": demo})
    assert "The method: run your function" in text
    assert "Steps: square x, then add one." in text


def attention_nan_row(Q, K, V):
    out, w = simple_sdpa(Q, K, V)
    return out, np.where(np.arange(w.shape[-2])[:, None] == 0, np.nan, w)


def test_a_checkers_own_words_without_a_mistake_get_the_method_too(capsys):
    """diagnose_weights' "nan or inf" is a plain string: still a method, not the
    signature again."""
    fail(checks.check_attention, (attention_nan_row,))
    second = fail(checks.check_attention, (attention_nan_row,))
    assert "nan or inf" in str(second) and "shows how to find it" in str(second)
    checks.hint("attention")
    out = " ".join(capsys.readouterr().out.split())
    assert "the first output that differs is `weights`" in out
