"""The staged-hint assertion the checker tests share (not a test file itself).

A wrong answer run twice: the first message names the symptom without the why
or the fix; the second adds the why, still without the fix; ``checks.hint``
prints the fix.
"""

import pytest

from helpers import checks
from helpers.checks import CheckFailed, _hints


def failure(checker, *fns):
    with pytest.raises(CheckFailed) as info:
        checker(*fns)
    return info.value


def assert_staged(checker, fns, says, capsys):
    """First the symptom (with ``says``), then the why, the fix only on request."""
    _hints.reset()
    try:
        first = failure(checker, *fns)
        mistake = first.mistake
        assert mistake is not None, str(first)
        assert says in first.diagnosis
        assert mistake.fix and mistake.fix not in str(first)
        assert mistake.why and mistake.why not in str(first)
        second = failure(checker, *fns)
        assert mistake.why in second.diagnosis
        assert mistake.fix not in str(second)
        capsys.readouterr()
        checks.hint(checker.__name__)
        assert mistake.fix in capsys.readouterr().out
    finally:
        _hints.reset()
