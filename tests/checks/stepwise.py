"""The staged-hint assertion of lessons 04-06's new checkers (not a test file of
its own: ``assert_staged`` is imported by test_sqrt_dk, test_decoder_masks and
test_projections).

A wrong answer run twice: the first message names the symptom, without the why
or the fix; the second adds the why, still without the fix; ``checks.hint``
prints the fix. Skipped where the engine has no staged hints.
"""

import pytest

from helpers import checks
from helpers.checks import CheckFailed


def _failure(checker, fns):
    with pytest.raises(CheckFailed) as info:
        checker(*fns)
    return info.value


def assert_staged(checker, fns, says, capsys):
    """First the symptom (with ``says``), then the why; the fix only on request."""
    hints = pytest.importorskip("helpers.checks._hints")
    hints.reset()
    try:
        first = _failure(checker, fns)
        mistake = first.mistake
        assert mistake is not None, str(first)
        assert says in first.diagnosis
        assert mistake.fix and mistake.fix not in str(first)
        assert mistake.why and mistake.why not in str(first)
        second = _failure(checker, fns)
        assert mistake.why in second.diagnosis
        assert mistake.fix not in str(second)
        capsys.readouterr()
        checks.hint(checker.__name__)
        assert mistake.fix in capsys.readouterr().out
    finally:
        hints.reset()
