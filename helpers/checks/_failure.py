"""A failed check and a known mistake: what a learner is shown, and how.

:class:`Mistake` is a known mistake's diagnosis in three parts (symptom, why,
fix); :class:`CheckFailed` is the failure a checker raises, shown at the step
that ``helpers.checks._hints`` chose for it. ``helpers.checks._engine``
re-exports both, so checkers write ``ck.Mistake`` and ``ck.CheckFailed``.

The language: a Mistake's parts and a checker's message are English templates,
translated (``helpers.i18n._``) before their ``{fields}`` are filled: by
:func:`fill`, by :meth:`Mistake.format` and :meth:`Mistake.filled`, and by
:class:`CheckFailed` for a Mistake that was never filled. A translated part is
no template any more, so translating it again leaves it as it is.
"""

import dataclasses
import re
import textwrap
import unicodedata
from dataclasses import dataclass, field

from helpers.i18n import _

_WIDTH = 88
_CJK_END = ("。", "！", "？", "…")


_WIDE = "\u3000-\u303f\u4e00-\u9fff\uff00-\uffef"  # Han, CJK and full-width signs
_UNITS = re.compile(rf"[{_WIDE}]|\s+|[^\s{_WIDE}]+")
_CLOSERS = "，。；：、！？）」》…"  # never start a line
_OPENERS = "（「《"  # never end one


def _columns(text):
    """The display width of ``text``: a Han character or full-width sign is 2."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _units(text):
    """``text`` cut where a line may break: between Han characters, at spaces;
    a closing sign stays with what it closes, an opening one with what follows."""
    units = []
    for unit in _UNITS.findall(text):
        if units and (unit[0] in _CLOSERS or units[-1][-1] in _OPENERS):
            if not unit.isspace() and not units[-1].isspace():
                units[-1] += unit
                continue
        units.append(unit)
    return units


def wrap(text, width=_WIDTH, initial_indent="", subsequent_indent=""):
    """``text`` as lines of at most ``width`` columns. English is wrapped as
    textwrap does (at spaces, hyphens and long words kept whole); Chinese, which
    has no spaces, between any two Han characters, each two columns wide."""
    if not re.search(f"[{_WIDE}]", text):
        return textwrap.wrap(
            text,
            width,
            initial_indent=initial_indent,
            subsequent_indent=subsequent_indent,
            break_on_hyphens=False,
            break_long_words=False,
        )
    lines, line, space = [], initial_indent, ""
    for unit in _units(" ".join(text.split())):
        if unit.isspace():
            space = " "
            continue
        fits = _columns(line + space + unit) <= width
        if fits or not line.strip():
            line += space + unit if line.strip() else unit
        else:
            lines.append(line)
            line = subsequent_indent + unit
        space = ""
    return lines + [line] if line.strip() else lines


def fill(template, facts):
    """``template`` translated, then ``.format_map(facts)``; the translated
    template itself if that fails."""
    if isinstance(template, Mistake):
        return template.filled(facts)
    template = _(template)
    try:
        return template.format_map(facts)
    except (KeyError, ValueError, IndexError, AttributeError):
        return template


@dataclass(frozen=True)
class Mistake:
    """A known mistake's diagnosis in the three steps a learner is told it.

    ``symptom``: what is wrong and where (the case, the value, the axis), never
    the corrected code; ``why``: the reason, added when the same mistake comes
    back; ``fix``: the corrected code, given only when the learner asks
    (``checks.hint(...)``). Each may hold ``{n}``-style fields filled from the
    case's sizes and facts. ``line``, a regular expression, finds the learner's
    line to look at (the first line of their function that matches it).
    """

    symptom: str
    why: str = ""
    fix: str = ""
    line: str = ""
    key: str = field(default="", compare=False, repr=False)

    def __post_init__(self):
        if not self.key:  # the unfilled symptom names the mistake
            object.__setattr__(self, "key", self.symptom)

    def _each(self, change):
        """The same mistake (same ``key``) with ``change`` applied to each part,
        translated first."""
        return dataclasses.replace(
            self,
            symptom=change(_(self.symptom)),
            why=change(_(self.why)),
            fix=change(_(self.fix)),
        )

    def translated(self):
        """The same mistake in the course's language (its fields unfilled)."""
        return self._each(lambda part: part)

    def filled(self, facts):
        return self._each(lambda part: fill(part, facts))

    def format(self, **values):
        return self._each(lambda part: fill(part, values))

    def replace(self, old, new):
        return self._each(lambda part: part.replace(old, new))

    def __str__(self):
        return " ".join(part for part in (self.symptom, self.why, self.fix) if part)


@dataclass(frozen=True)
class Generated:
    """A message the engine wrote for a failure no Mistake names (a shape, a crash).

    ``text`` is shown first; ``why`` is added when the same text comes back;
    ``fix`` (code) and ``method`` (how to find the mistake) are for
    ``checks.hint``.
    """

    text: str
    why: str = ""
    fix: str = ""
    method: str = ""

    def __str__(self):
        return self.text


def _sentence(text):
    """``text`` ending in one full stop ("。" for Chinese); an ellipsis ("...",
    "…") is kept as is."""
    text = text.rstrip()
    if text.endswith(("...", "…")) or text.endswith(_CJK_END):
        return text
    if any("\u4e00" <= c <= "\u9fff" for c in text):  # a Chinese sentence
        return text + "。"
    return text.removesuffix(".") + "."


def short_name(checker):
    """``check_online_softmax (update)`` -> ``online_softmax``, for checks.hint."""
    name = checker.split(" ")[0]
    return name.removeprefix("check_")


class CheckFailed(AssertionError):
    """A failed exercise check: the diagnosis, the case and where to look.

    ``str(err)`` is the message as the learner is shown it; IPython shows
    ``_render_traceback_()``, a few short lines, instead of a traceback through
    the checker's internals. ``err.mistake`` is the :class:`Mistake` (None for a
    generated message, e.g. a wrong shape), ``err.diagnosis`` the text shown:
    the symptom at step 1, the symptom and the why at step 2 (``err.stage``).
    A :class:`Generated` message is told in the same steps when it has a why,
    a fix or a method; ``err.why``, ``err.fix`` and ``err.method`` hold them.
    """

    def __init__(self, checker, message, case="", where=""):
        self.checker = checker
        self.mistake = message.translated() if isinstance(message, Mistake) else None
        told = message if isinstance(message, Generated) else None
        self.message = str(message) if self.mistake is None else ""
        source = self.mistake or told
        self.why = source.why if source else ""
        self.fix = source.fix if source else ""
        self.method = told.method if told else ""
        if self.mistake is not None:
            self.key = self.mistake.key
        else:  # a generated message repeats when its text does
            self.key = self.message if (self.why or self.fix or self.method) else None
        self.case = case
        self.where = where
        self.show(1)

    def show(self, stage):
        """Show step ``stage`` of the diagnosis: 1 the symptom, 2 adds the why."""
        self.stage = stage
        symptom = self.mistake.symptom if self.mistake is not None else self.message
        if stage >= 2 and self.why:
            self.diagnosis = _("{symptom} Why: {why}").format(
                symptom=_sentence(symptom), why=self.why
            )
        else:
            self.diagnosis = symptom
        text = f"{self.checker}: {self.diagnosis}"
        if self.case:
            text += f"\n  ({self.case})"
        if self.where:
            text += "\n  " + _("Look at: {where}").format(where=self.where)
        if self.offers_fix():
            text += f"\n  {self.hint_line()}"
        self.args = (text,)

    def offers_fix(self):
        """From step 2, when checks.hint has a fix or a method to give."""
        told = self.mistake is not None or self.fix or self.method
        return self.stage >= 2 and bool(told)

    def hint_line(self):
        name = short_name(self.checker)
        if self.fix or self.mistake is not None:
            return _('Still stuck? checks.hint("{name}") shows the fix.').format(
                name=name
            )
        return _('Still stuck? checks.hint("{name}") shows how to find it.').format(
            name=name
        )

    def _render_traceback_(self):
        red, bold, reset = "\x1b[31m", "\x1b[1m", "\x1b[0m"
        lines = wrap(f"✗ {self.checker}: {self.diagnosis}", subsequent_indent="  ")
        lines = lines or [f"✗ {self.checker}"]
        lines[0] = f"{red}{bold}{lines[0]}{reset}"
        extra = (
            self.case,
            _("look at: {where}").format(where=self.where) if self.where else "",
            self.hint_line() if self.offers_fix() else "",
        )
        for text in extra:
            if text:
                lines += wrap(text, initial_indent="  ", subsequent_indent="    ")
        return lines
