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
  checker's ``run(...)``, the ``exercise`` of ``without_helpers(...)``. An
  f-string there is an error too: a template's
  fields are ``{name}``, filled by the engine after translation;
- the ``note=`` of any call (a case's note, e.g. ``note="one query"``, which
  ``make_case`` translates), when it is a literal: an f-string note stays
  English.

Each template becomes one entry (no msgctxt; occurrences ``file:line``; the
``python-brace-format`` flag when it has ``{fields}``; the header and metadata
of the lessons' catalogues, tools/i18n.py). On re-extraction the lessons' rule
holds, with the file in place of the cell: an unchanged msgid keeps its
translation; a changed one takes the translation of the most similar
now-unused entry of the same file (difflib ratio >= ``FUZZY_CUTOFF``), marked
``fuzzy`` with the old msgid as ``#| msgid``, so a translator sees what
changed; entries no longer in the code are dropped.

``check`` reports what ``tools.i18n check`` reports for a lesson (untranslated,
fuzzy, inline code, numbers, glossary terms) and a ``{field}`` set that differs
from the msgid's.
"""

import argparse
import ast
import difflib
import json
import re
import string
import sys
from pathlib import Path

import polib

if not __package__:  # run as a script: import the tools package from the repo root
    sys.path[0] = str(Path(__file__).resolve().parents[1])
from tools import i18n as lessons_i18n  # noqa: E402
from tools import i18n_terms, i18n_text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "helpers"
CATALOGUE = ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / "helpers.po"
HEADER = (
    "Chinese (zh_CN) translation of the helpers' messages of 'Attention, step by\n"
    "step' (checker diagnoses, hints, validation errors, readouts, figure text).\n"
    "Written by `python -m tools.i18n_messages extract`: edit only the msgstr\n"
    "lines (see the translators' guide). {fields} stay as they are."
)
METADATA = {
    **lessons_i18n.METADATA,
    "Project-Id-Version": "attention-step-by-step helpers",
}
FUZZY_CUTOFF = lessons_i18n.FUZZY_CUTOFF  # the lessons' rule: below it, no carry-over

# call name -> (positional indices, keywords) whose strings are templates
TEMPLATE_ARGS = {
    "_": ((0,), ()),
    "N_": ((0,), ()),
    "Mistake": ((0, 1, 2), ("symptom", "why", "fix")),
    "replace": ((), ("symptom", "why", "fix")),
    "Generated": ((0, 1, 2, 3), ("text", "why", "fix", "method")),
    "Out": ((2,), ("hint",)),
    "run": ((), ("hint",)),
    "without_helpers": ((2,), ("exercise",)),
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
    notes = [("note", k.value) for k in call.keywords if k.arg == "note"]
    if name not in TEMPLATE_ARGS:
        return notes
    positions, keywords = TEMPLATE_ARGS[name]
    nodes = [call.args[i] for i in positions if i < len(call.args)]
    nodes += [k.value for k in call.keywords if k.arg in keywords]
    if name in ("_", "N_") and len(call.args) != 1:
        raise ExtractError(
            f"line {call.lineno}: _ takes one argument, a string literal"
        )
    return [(name, n) for n in nodes] + notes


def _constants(tree):
    """The module's ``NAME = "text"`` (or ``NAME = N_("text")``) assignments:
    text known before it runs."""
    found = {}
    for node in tree.body:
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            continue
        value = node.value
        if isinstance(value, ast.Call) and _call_name(value) == "N_" and value.args:
            value = value.args[0]
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            found[node.targets[0].id] = value.value
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
    if text is not None or not isinstance(node, ast.JoinedStr) or name == "note":
        return text or None  # None: a variable, whose text is a template elsewhere
    raise ExtractError(
        f"{where}: an f-string in {name}(...): write a template with "
        "{fields} and .format(...) it after translation"
    )


def templates_in(path, root=ROOT):
    """``[(template, line)]`` of one module, in source order."""
    rel = path.relative_to(root).as_posix()
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
    if path.parent.name == "checks":  # the checkers, whose docstrings hints quote
        found += _checker_docs(tree)
    return sorted(found, key=lambda item: item[1])


def _checker_docs(tree):
    """``[(text, line)]``: what each ``check_*`` function's docstring says it
    checks and its "Steps:" paragraph, which ``checks.hint`` quotes (the same
    text as ``helpers.checks._hints.doc_method`` and ``doc_steps`` make)."""
    from helpers.checks._hints import doc_method, doc_steps

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("check_"):
            doc = ast.get_docstring(node) or ""
            for text in (doc_method(doc), doc_steps(doc)):
                if text:
                    found.append((text, node.body[0].lineno))
    return found


def _figure_texts(tree):
    """The literal texts a lesson's figure cell gives its description: the
    template of ``plotting.show(fig, text, ...)`` and a ``fig.suptitle(...)``
    (which ``plotting.figure_text`` reads first), as ``(node, is_title)``."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node)
        if name == "show":
            texts = node.args[1:2] + [k.value for k in node.keywords if k.arg == "text"]
            yield from ((text, False) for text in texts)
        elif name == "suptitle" and node.args:
            yield node.args[0], True
        elif name.startswith("plot_"):  # the plot helpers' title= is the suptitle
            yield from ((k.value, True) for k in node.keywords if k.arg == "title")


def lesson_templates(path, root=ROOT):
    """``[(template, cell id)]`` of one English lesson: its figures' description
    templates and suptitles (string literals; anything computed stays English),
    translated at run time by ``helpers.i18n._`` as the helpers' own are."""
    from helpers.descriptions import plain

    found = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        lines = "".join(cell["source"]).splitlines()
        code = "\n".join(
            "" if line.lstrip().startswith(("%", "!")) else line for line in lines
        )
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        for node, is_title in _figure_texts(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = plain(node.value).rstrip(".:") if is_title else node.value
                if text:
                    found.append((text, cell["id"]))
    return found


def collect(source=SOURCE, root=ROOT):
    """``{template: [(file, line), ...]}`` over every module under ``source``
    (files named relative to ``root``), and, for the helpers' catalogue, the
    English lessons' figure texts (``lesson_templates``; file and cell id)."""
    entries, errors = {}, []
    if Path(source) == SOURCE:
        for path in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")):
            rel = path.relative_to(root).as_posix()
            for text, cell_id in lesson_templates(path, root):
                entries.setdefault(text, []).append((rel, cell_id))
    for path in sorted(Path(source).rglob("*.py")):
        try:
            found = templates_in(path, root)
        except ExtractError as err:
            errors.append(str(err))
            continue
        rel = path.relative_to(root).as_posix()
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


def _files(entry):
    return {f for f, _line in entry.occurrences}


def merge(entries, old_entries):
    """Give the new ``entries`` the translations of ``old_entries``: the same
    msgid keeps its translation (and its fuzzy flag); a changed one gets the
    closest unused old entry of the same file as fuzzy (the lessons' rule, with
    the file for the cell)."""
    old = [e for e in old_entries if not e.obsolete and e.msgstr]
    by_id = {e.msgid: e for e in old}
    used, pending = set(), []
    for entry in entries:
        match = by_id.get(entry.msgid)
        if match is not None:
            lessons_i18n._carry(entry, match, fuzzy=False)
            used.add(match.msgid)
        else:
            pending.append(entry)
    pairs = []
    for entry in pending:
        for candidate in old:
            if candidate.msgid in used or not _files(entry) & _files(candidate):
                continue
            ratio = difflib.SequenceMatcher(None, entry.msgid, candidate.msgid).ratio()
            if ratio >= FUZZY_CUTOFF:
                pairs.append((ratio, entry.msgid, entry, candidate))
    taken = set()
    for _ratio, _msgid, entry, candidate in sorted(pairs, key=lambda p: -p[0]):
        if entry.msgid in taken or candidate.msgid in used:
            continue
        lessons_i18n._carry(entry, candidate, fuzzy=True)
        taken.add(entry.msgid)
        used.add(candidate.msgid)
    return entries


def build(found, old=None):
    """The catalogue of the templates ``found`` (see :func:`collect`), keeping
    the translations of the ``old`` catalogue's entries."""
    entries = []
    for msgid, occurrences in found.items():
        entry = polib.POEntry(msgid=msgid, msgstr="", occurrences=occurrences)
        entries.append(entry)
    merge(entries, old or [])
    po = polib.POFile(wrapwidth=78)
    po.header = HEADER
    po.metadata = dict(METADATA)
    for entry in entries:
        if (fields(entry.msgid) or ((),))[0]:
            entry.flags.append("python-brace-format")
        po.append(entry)
    return po


def extract(path=CATALOGUE):
    """Write the catalogue at ``path`` from the code; return it."""
    old = polib.pofile(str(path)) if path.exists() else None
    po = build(collect(), old)
    path.parent.mkdir(parents=True, exist_ok=True)
    po.save(str(path))
    return po


# code written outside backticks in a message: a call (two levels of parentheses)
# or a dotted name, e.g. np.where(mask, scores, -np.inf), mask.any, K.shape[-1]
_CALL = re.compile(r"[\w.]*\w\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")
_DOTTED = re.compile(r"\b\w+(?:\.\w+)+(?:\[[^\]]*\])?")


def _prose(text):
    """``text`` without the code it names outside backticks (for the term check)."""
    return _DOTTED.sub(" ", _CALL.sub(" ", text))


def entry_problems(entry):
    """What is wrong with one entry: untranslated, fuzzy, a ``{field}`` changed,
    and the lessons' markup and terminology checks (backticks, numbers, ...)."""
    if entry.obsolete:
        return []
    if not entry.msgstr:
        return ["untranslated"]
    found = []
    if "fuzzy" in entry.flags:
        found.append("fuzzy (the English changed: check, then remove the fuzzy flag)")
    if fields(entry.msgid) != fields(entry.msgstr):
        found.append("its {fields} (or {{ }} escapes) differ from the msgid's")
    found += i18n_text.markup_problems(entry.msgid, entry.msgstr, "block")
    found += i18n_terms.term_problems(_prose(entry.msgid), _prose(entry.msgstr))
    return list(dict.fromkeys(found))


def problems(po):
    """``[(entry, what is wrong)]`` over the catalogue ``po``."""
    return [(e, what) for e in po for what in entry_problems(e)]


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
    po = polib.pofile(str(path))
    found = problems(po)
    for entry, what in found:
        print(f"{path}:{entry.linenum}: {what}: {entry.msgid[:60]!r}")
    done = len(po.translated_entries())
    print(f"{path}: {done}/{len(po)} translated, {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
