"""In a Chinese kernel, a checker's feedback holds no English sentence (issue 24).

Every wrong answer the topic files list (``WRONG`` of tests/checks/test_*.py,
the planted mistakes the checkers must name) is checked twice with
``COURSE_LANG=zh`` (the first failure shows the symptom, the second adds the
why and the hint line), then ``checks.hint`` is asked for its fix. No text may
hold an English word of running prose.

What counts as English: a whole word of :data:`PROSE` (English function words:
every English sentence or clause has some; code almost never does, since
Python's own keywords such as ``not``, ``for`` and ``and`` are left out). Not
read: text in backticks, the source line quoted after ``line N:``, and the
learner's own exception text (``ValueError: ...``, numpy's words), which no
catalogue can translate. Identifiers, shapes and symbols (``softmax``, ``d_k``,
``np.where``) are thus never flagged, and no per-message allow-list is needed.

Topics in :data:`NOT_YET` still leak English; each is a strict xfail, so a fix
that makes one pass must take it off the list.
"""

import contextlib
import io
import re

import pytest

from helpers import checks
from helpers.checks import CheckFailed, _hints
from tests.checks import catalogue

PROSE = frozenset(
    "the with from its your this that them each every per where whose then after "
    "before lets what happened was were has have been into onto than only but "
    "also when which there their they you can should must does gets are".split()
)
_BACKTICKS = re.compile(r"`[^`\n]*`")
_QUOTED_LINE = re.compile(r"line \d+: .*$", re.MULTILINE)
_EXCEPTION = re.compile(r"\b[A-Z]\w*(Error|Exception)[:：(（].*?(?= — |）|$)", re.M)
_WORD = re.compile(r"(?<![\w.'])[A-Za-z]+(?![\w(])")

NOT_YET = {}  # topic -> why it still leaks English


def english_words(text):
    """The words of ``text`` that are English prose (see the module doc)."""
    for pattern in (_BACKTICKS, _QUOTED_LINE, _EXCEPTION):
        text = pattern.sub(" ", text)
    return sorted({w for w in _WORD.findall(text) if w.lower() in PROSE})


def test_the_detector_finds_english_and_spares_code():
    assert english_words("你的掩码also lets them read key 3") == ["lets", "them"]
    assert english_words("修改方法：Return every head's weights, one per key.") == [
        "every",
        "per",
    ]
    spared = (
        "修改方法：phi = feature_map if feature_map is not None else elu_plus_one；"
        "`the mask` np.where(mask, scores, -np.inf) "
        "你的函数抛出了 ValueError：operands could not be broadcast with shapes — 检查"
        "\n  查看：f, test_x.py, line 3: return the_value"
    )
    assert english_words(spared) == []


def _feedback(checker, fns):
    """The texts a learner reads for one wrong answer: two failures, the hint."""
    texts = []
    for _attempt in (1, 2):
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                checker(*fns)
        except CheckFailed as err:
            texts.append(err.args[0])
    known = {n: getattr(checks, n) for n in checks.__all__ if n.startswith("check_")}
    known.setdefault(checker.__name__, checker)
    texts.append(_hints.hint_text(checker.__name__, known))
    return texts


def _topics():
    params = []
    for topic, module in catalogue.topic_modules():
        if getattr(module, "WRONG", None):
            why = NOT_YET.get(topic)
            marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
            params.append(pytest.param(topic, module, marks=marks, id=topic))
    return params


@pytest.mark.parametrize(("topic", "module"), _topics())
def test_every_planted_mistake_is_told_in_chinese(topic, module, monkeypatch):
    monkeypatch.setenv("COURSE_LANG", "zh")
    leaks = {}
    for entry in module.WRONG:
        checker, fns = tuple(getattr(entry, "values", entry))[:2]
        _hints.reset()
        for text in _feedback(checker, fns):
            words = english_words(text)
            if words:
                leaks.setdefault(" ".join(words), text)
    assert not leaks, f"{len(leaks)} texts with English in {topic}:\n" + "\n".join(
        f"  {words}: {text}" for words, text in list(leaks.items())[:6]
    )
