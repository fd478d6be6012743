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


# Lesson 09's experiments take a trainer, so the topic file lists them apart:
# each wrong config, a wrong prediction of each experiment, and each success
# line with its "What happened" paragraph.
_CAPSTONE_ANSWERS = [
    (checks.check_d_k_experiment, {"d_k": 1}, (True,)),
    (checks.check_scale_experiment, {"d_k": 256, "scaled": False}, (False, False)),
    (checks.check_mask_experiment, {"mask": "flipped"}, (True,)),
]


def test_the_capstone_experiments_are_told_in_chinese(monkeypatch):
    from tests.checks.test_capstone import QUICK_AS_DEFINED, WRONG_CONFIGS, fake_train

    monkeypatch.setenv("COURSE_LANG", "zh")
    quick = dict(QUICK_AS_DEFINED)
    baseline = fake_train(quick)
    runs = [
        (checks.check_d_k_experiment, lambda m=m: m(quick)) for m, _ in WRONG_CONFIGS
    ]
    runs += [(checks.check_d_k_experiment, lambda: ({**quick, "dk": 1, "dq": 2}, 0))]
    runs += [(checks.check_d_k_experiment, lambda: ({**quick, "steps": 1}, False))]
    for checker, change, wrong in _CAPSTONE_ANSWERS:
        right = tuple(not said for said in wrong)
        for said in (wrong, right):
            runs.append((checker, lambda c=change, s=said: ({**quick, **c}, *s)))
    texts = []
    for checker, fn in runs:
        _hints.reset()
        for _attempt in (1, 2):
            printed = io.StringIO()
            try:
                with contextlib.redirect_stdout(printed):
                    checker(fn, fake_train, quick, baseline)
            except CheckFailed as err:
                texts.append(err.args[0])
            texts.append(printed.getvalue())
    assert sum("✓" in text for text in texts) == 2 * len(_CAPSTONE_ANSWERS)
    leaks = {" ".join(w): t for t in texts if (w := english_words(t))}
    assert not leaks, "\n".join(f"  {words}: {text}" for words, text in leaks.items())


def test_chinese_is_wrapped_by_display_width_and_english_as_textwrap_does():
    import textwrap

    from helpers.checks._failure import _columns, wrap

    text = (
        "✗ check_decoder_mask: 你的填充边界差了一个键：lengths = [6, 4, 5] 时，"
        "序列 b 的真实键是前 lengths[b] 个位置，而你的掩码还让它们读取了键 "
        "lengths[b]。原因：位置从 0 开始，所以序列 b 的真实键是 j = 0 .. "
        "lengths[b] - 1（键 j = lengths[b] 已经是第一个填充位置）"
    )
    lines = wrap(text, 40, subsequent_indent="  ")
    assert len(lines) > 3 and all(_columns(line) <= 40 for line in lines)
    assert not any(line.strip()[0] in "，。；：、）" for line in lines[1:])
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")
    english = "your padding boundary is one key off: " * 5
    assert wrap(english, 30, "  ", "    ") == textwrap.wrap(
        english,
        30,
        initial_indent="  ",
        subsequent_indent="    ",
        break_on_hyphens=False,
        break_long_words=False,
    )
