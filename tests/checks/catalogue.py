"""The catalogue of right and wrong answers, one topic file per checker module.

Each ``helpers/checks/<topic>.py`` has its tests in ``tests/checks/test_<topic>.py``,
which lists the answers its checkers must accept and reject::

    RIGHT = [right(check_softmax, simple_softmax), ...]
    WRONG = [
        *wrong(check_softmax, [(softmax_no_max, "Subtract the max"), ...]),
        ...
    ]
    test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
        topic_tests(RIGHT, WRONG)
    )

``topic_tests`` writes the two tests once for every topic file. The engine's
tests (``test_engine.py``) then run every listed answer again with other seeds:
:func:`gathered` finds the lists by discovery, in ``tests.checks.test_<topic>``
for each public module of ``helpers.checks``, so a new checker module's test
file joins by defining ``RIGHT`` and ``WRONG`` with :func:`right` and
:func:`wrong`; nothing else to register.

The right answers more than one topic builds on (a softmax, a stable softmax,
a direct attention) are written here once, independently of
``helpers.attention_np``.
"""

import importlib
import inspect
import math
import pkgutil
import re

import numpy as np
import pytest

from helpers import checks
from helpers.checks import CheckFailed

# --------------------------------------------------------------------------
# Right answers several topics build on
# --------------------------------------------------------------------------


def simple_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def stable_rows(scores):
    """Softmax over the last axis; rows that are all -inf give zeros."""
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def simple_sdpa(Q, K, V, mask=None, scale=None):
    scale = 1 / math.sqrt(Q.shape[-1]) if scale is None else scale
    scores = Q @ np.swapaxes(K, -1, -2) * scale  # (..., n, m)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = stable_rows(scores)
    return weights @ V, weights


# --------------------------------------------------------------------------
# Entries of RIGHT and WRONG, and the two tests every topic file runs
# --------------------------------------------------------------------------


def _name(fn):
    return getattr(fn, "__name__", "")


def right(checker, *fns, id=None, prints=None):
    """``checker(*fns)`` must pass, printing one line that matches ``prints``.

    ``prints`` is a regex, by default the engine's ``✓ check_x: 6 cases passed``;
    the id is the functions' names unless given.
    """
    if prints is None:
        prints = rf"✓ {re.escape(checker.__name__)}: \d+ cases passed(; .+)?"
    return pytest.param(checker, fns, prints, id=id or "+".join(map(_name, fns)))


def wrong(checker, table):
    """``checker(fn)`` must fail saying ``says``, for each ``(fn, says)`` of ``table``.

    ``fn`` may be a tuple of functions (check_online_softmax takes two); ``says``
    None accepts any diagnosis; a third item is the entry's id, for lambdas (the
    functions' names otherwise).
    """
    entries = []
    for fns, says, *given in table:
        fns = fns if isinstance(fns, tuple) else (fns,)
        name = given[0] if given else "+".join(map(_name, fns))
        entries.append(pytest.param(checker, fns, says, id=name))
    return entries


def matching(says):
    """The ``match=`` of pytest.raises for a diagnosis that contains ``says``."""
    return None if says is None else re.escape(says)


def topic_tests(right_answers, wrong_answers):
    """A topic file's two tests: each right answer passes, each wrong one is named."""

    @pytest.mark.parametrize(("checker", "fns", "prints"), right_answers)
    def test_accepts_a_right_answer(checker, fns, prints, capsys):
        assert checker(*fns) is True
        printed = capsys.readouterr().out.strip().splitlines()
        assert len(printed) == 1
        assert re.fullmatch(prints, printed[0])

    @pytest.mark.parametrize(("checker", "fns", "says"), wrong_answers)
    def test_rejects_a_wrong_answer_with_its_diagnosis(checker, fns, says, capsys):
        with pytest.raises(CheckFailed, match=matching(says)) as info:
            checker(*fns)
        assert info.value.args[0].startswith(checker.__name__)  # says which check
        assert "✓" not in capsys.readouterr().out  # no success line on failure

    return test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis


# --------------------------------------------------------------------------
# Every topic file's entries, gathered
# --------------------------------------------------------------------------


def topic_modules():
    """``(topic, module)`` for each ``helpers.checks.<topic>`` with a test file."""
    found = []
    for info in pkgutil.iter_modules(checks.__path__):
        if info.name.startswith("_"):
            continue
        name = f"tests.checks.test_{info.name}"
        try:
            found.append((info.name, importlib.import_module(name)))
        except ModuleNotFoundError as missing:
            if missing.name != name:
                raise
    return found


def takes_a_seed(checker):
    return "seed" in inspect.signature(checker).parameters


def gathered(kind):
    """Every topic file's ``RIGHT`` or ``WRONG`` entries whose checker takes a seed.

    A RIGHT entry gives ``(checker, fns)``, a WRONG one ``(checker, fns, says)``:
    the values that follow (what a right answer prints) stay in the topic file,
    so a list of plain ``pytest.param(checker, fns)`` joins too. The ids are
    prefixed with the topic: ``softmax-softmax_no_max``.
    """
    width = {"RIGHT": 2, "WRONG": 3}[kind]
    entries = []
    for topic, module in topic_modules():
        for entry in getattr(module, kind, []):
            values = tuple(getattr(entry, "values", entry))[:width]
            name = getattr(entry, "id", None) or "+".join(map(_name, values[1]))
            if takes_a_seed(values[0]):
                entries.append(pytest.param(*values, id=f"{topic}-{name}"))
    return entries


def checkers():
    """Every ``check_*`` that ``helpers.checks`` exports."""
    return [getattr(checks, n) for n in checks.__all__ if n.startswith("check_")]


def functions_taken(checker):
    """How many learner functions ``checker`` takes (check_online_softmax: 2)."""
    parameters = inspect.signature(checker).parameters.values()
    return sum(
        p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty for p in parameters
    )
