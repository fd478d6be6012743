"""The helpers' messages catalogue: locale/zh_CN/LC_MESSAGES/helpers.po.

Usage::

    python -m tools.i18n_messages extract   # write helpers.po from helpers/**
    python -m tools.i18n_messages check     # untranslated, fuzzy, broken entries

``extract`` reads every module under ``helpers/`` with ``ast`` (nothing is
imported) and collects the English templates a learner may read:

- the string given to ``_("...")`` or ``N_("...")``: a literal (``_(name)``,
  a variable, is a template written elsewhere); an f-string, a ``+``, a ``%`` or
  a ``.format(...)`` inside ``_`` is an error, since its text is not known
  before it runs and is no template;
- the ``symptom``, ``why`` and ``fix`` of ``Mistake(...)`` (positionally or by
  keyword) and of ``dataclasses.replace(...)``; the ``text``, ``why``, ``fix``
  and ``method`` of ``Generated(...)``; the ``hint`` of ``Out(...)`` and of a
  checker's ``run(...)``. An f-string there is an error too: a template's
  fields are ``{name}``, filled by the engine after translation.

Each template becomes one entry (no msgctxt; occurrences ``file:line``; the
``python-brace-format`` flag when it has ``{fields}``). On re-extraction an
unchanged msgid keeps its translation; a changed one takes the translation of
the most similar now-unused entry of the same file (difflib ratio >= 0.6),
marked ``fuzzy`` with the old msgid as ``#| msgid``, so a translator sees what
changed; entries no longer in the code are dropped.
"""

import argparse
import ast
import difflib
import string
import sys
from pathlib import Path

import polib

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "helpers"
CATALOGUE = ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / "helpers.po"
SIMILAR = 0.6  # difflib ratio above which a changed entry keeps its translation

# call name -> (positional indices, keywords) whose strings are templates
TEMPLATE_ARGS = {
    "_": ((0,), ()),
    "N_": ((0,), ()),
    "Mistake": ((0, 1, 2), ("symptom", "why", "fix")),
    "replace": ((), ("symptom", "why", "fix")),
    "Generated": ((0, 1, 2, 3), ("text", "why", "fix", "method")),
    "Out": ((), ("hint",)),
    "run": ((), ("hint",)),
}
HEADER = {
    "Project-Id-Version": "attention-step-by-step helpers",
    "Language": "zh_CN",
    "MIME-Version": "1.0",
    "Content-Type": "text/plain; charset=UTF-8",
    "Content-Transfer-Encoding": "8bit",
    "Plural-Forms": "nplurals=1; plural=0;",
}


class ExtractError(ValueError):
    """A template the extraction cannot read (an f-string, a computed string)."""


def _call_name(node):
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _template_nodes(call):
    """The argument nodes of ``call`` that hold templates, if it is one we read."""
    name = _call_name(call)
    if name not in TEMPLATE_ARGS:
        return []
    positions, keywords = TEMPLATE_ARGS[name]
    nodes = [call.args[i] for i in positions if i < len(call.args)]
    nodes += [k.value for k in call.keywords if k.arg in keywords]
    if name in ("_", "N_") and len(call.args) != 1:
        raise ExtractError(
            f"line {call.lineno}: _ takes one argument, a string literal"
        )
    return [(name, n) for n in nodes]


def _constants(tree):
    """The module's ``NAME = "text"`` assignments: text known before it runs."""
    found = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            found[node.targets[0].id] = node.value.value
    return found


def _static(node, constants):
    """The text of ``node`` if it is known without running: a literal, or an
    f-string or ``+`` of literals and module string constants; else None."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _static(node.left, constants), _static(node.right, constants)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.JoinedStr):
        parts = []
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                if part.conversion != -1 or part.format_spec is not None:
                    return None
                part = part.value
            text = _static(part, constants)
            if text is None:
                return None
            parts.append(text)
        return "".join(parts)
    return None


def _literal(name, node, where, constants):
    """The template in ``node``, or None when it is not a string we read."""
    if name in ("_", "N_"):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value or None
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
            return None  # a template held in a variable: extracted where written
        raise ExtractError(
            f"{where}: {name}(...) takes a string literal (or a variable holding "
            "one), not a computed string: translate the template, then format it"
        )
    text = _static(node, constants)
    if text is not None or not isinstance(node, ast.JoinedStr):
        return text or None  # None: a variable, whose text is a template elsewhere
    raise ExtractError(
        f"{where}: an f-string in {name}(...): write a template with "
        "{fields} and .format(...) it after translation"
    )


def templates_in(path):
    """``[(template, line)]`` of one module, in source order."""
    rel = path.relative_to(ROOT).as_posix()
    found, errors = [], []
    tree = ast.parse(path.read_text(encoding="utf-8"), rel)
    constants = _constants(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        try:
            for name, arg in _template_nodes(node):
                text = _literal(name, arg, f"{rel}:{arg.lineno}", constants)
                if text is not None:
                    found.append((text, arg.lineno))
        except ExtractError as err:
            errors.append(str(err))
    if errors:
        raise ExtractError("\n".join(sorted(errors)))
    return sorted(found, key=lambda item: item[1])


def collect(source=SOURCE):
    """``{template: [(file, line), ...]}`` over every module under ``source``."""
    entries, errors = {}, []
    for path in sorted(source.rglob("*.py")):
        try:
            found = templates_in(path)
        except ExtractError as err:
            errors.append(str(err))
            continue
        rel = path.relative_to(ROOT).as_posix()
        for text, line in found:
            entries.setdefault(text, []).append((rel, str(line)))
    if errors:
        raise ExtractError("\n".join(errors))
    return entries


def fields(text):
    """The ``{fields}`` of a template (name, conversion, spec), sorted, and the
    number of escaped braces; what a translation must keep."""
    found, escaped = [], text.count("{{") + text.count("}}")
    try:
        for _literal_text, name, spec, conversion in string.Formatter().parse(text):
            if name is not None:
                found.append((name, conversion or "", spec or ""))
    except ValueError:
        return None  # not a format string: compared as literal braces
    return sorted(found), escaped


def _carry_over(entry, unused):
    """The most similar unused old entry sharing a file with ``entry``, or None."""
    files = {f for f, _line in entry.occurrences}
    best, best_ratio = None, SIMILAR
    for old in unused.values():
        if not old.msgstr or not files & {f for f, _line in old.occurrences}:
            continue
        ratio = difflib.SequenceMatcher(None, old.msgid, entry.msgid).ratio()
        if ratio >= best_ratio:
            best, best_ratio = old, ratio
    return best


def build(entries, old=None):
    """The catalogue for ``entries``, keeping ``old``'s translations."""
    po = polib.POFile(wrapwidth=78)
    po.metadata = dict(HEADER)
    previous = {e.msgid: e for e in (old or []) if not e.obsolete}
    unused = {k: v for k, v in previous.items() if k not in entries}
    for msgid, occurrences in entries.items():
        entry = polib.POEntry(msgid=msgid, msgstr="", occurrences=occurrences)
        if fields(msgid) and fields(msgid)[0]:
            entry.flags.append("python-brace-format")
        if msgid in previous:
            entry.msgstr = previous[msgid].msgstr
            if "fuzzy" in previous[msgid].flags:
                entry.flags.append("fuzzy")
                entry.previous_msgid = previous[msgid].previous_msgid
        else:
            match = _carry_over(entry, unused)
            if match is not None:
                entry.msgstr = match.msgstr
                entry.flags.append("fuzzy")
                entry.previous_msgid = match.msgid
                del unused[match.msgid]
        po.append(entry)
    return po


def extract(path=CATALOGUE):
    """Write the catalogue at ``path`` from the code; return it."""
    old = polib.pofile(str(path)) if path.exists() else None
    po = build(collect(), old)
    path.parent.mkdir(parents=True, exist_ok=True)
    po.save(str(path))
    return po


def problems(po):
    """``[(msgid, what is wrong)]``: untranslated, fuzzy, a field or a backtick
    of the msgid missing from the msgstr."""
    found = []
    for entry in po:
        if entry.obsolete:
            continue
        if not entry.msgstr:
            found.append((entry.msgid, "untranslated"))
            continue
        if "fuzzy" in entry.flags:
            found.append((entry.msgid, "fuzzy: check it, then remove the flag"))
        if fields(entry.msgid) != fields(entry.msgstr):
            found.append((entry.msgid, "its {fields} differ from the msgid's"))
        if entry.msgid.count("`") != entry.msgstr.count("`"):
            found.append((entry.msgid, "its number of backticks differs"))
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.i18n_messages")
    parser.add_argument("command", choices=["extract", "check"])
    parser.add_argument("catalogue", nargs="?", default=str(CATALOGUE))
    args = parser.parse_args(argv)
    path = Path(args.catalogue)
    if args.command == "extract":
        try:
            po = extract(path)
        except ExtractError as err:
            print(err, file=sys.stderr)
            return 1
        done = len(po.translated_entries())
        fuzzy = len(po.fuzzy_entries())
        print(f"{path}: {len(po)} entries, {done} translated, {fuzzy} fuzzy")
        return 0
    found = problems(polib.pofile(str(path)))
    for msgid, what in found:
        print(f"{what}: {msgid[:70]!r}")
    print(f"{path}: {len(found)} problems")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
