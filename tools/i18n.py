"""The Chinese edition: gettext catalogues beside the English lessons.

    python -m tools.i18n extract            # lessons -> locale/zh_CN/LC_MESSAGES/
    python -m tools.i18n check [PO ...]     # untranslated, fuzzy, markup, terms
    python -m tools.i18n build [--allow-partial] [--no-execute] [NN ...]
                                            # lessons + catalogues -> notebooks/zh/

The English lessons are the source. ``extract`` writes one PO catalogue per
lesson (polib): an entry per markdown block and per code comment's text
(tools/i18n_text.py says which), ``msgctxt`` the cell's id and the occurrence
``NN_x.ipynb:<cell id>``. Re-extracting keeps the translation of every
unchanged entry; an entry whose text changed gets the old translation of the
closest now-unused entry of the same cell, marked ``fuzzy`` with the old text
as ``#| msgid``, so that the translator sees what changed; entries that left
the lesson are dropped.

``build`` writes notebooks/zh/NN_x.ipynb: the same cells and ids, the
markdown and the comments translated, code otherwise identical, relative
links to files without a Chinese copy pointed one folder up; then executes it
in a fresh kernel with COURSE_LANG=zh (tools/execute_notebooks.py). It fails
on an untranslated or fuzzy entry unless ``--allow-partial`` (English text
kept: a draft, written to build/zh-draft/, never to notebooks/zh/).
"""

import argparse
import difflib
import sys
from pathlib import Path

import nbformat
import polib

if not __package__:  # run as a script: import the tools package from the repo root
    sys.path[0] = str(Path(__file__).resolve().parents[1])
from tools import i18n_build, i18n_terms, i18n_text  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
ZH = NOTEBOOKS / "zh"
LOCALE = REPO / "locale" / "zh_CN" / "LC_MESSAGES"
LANGUAGE = "zh_CN"
FUZZY_CUTOFF = 0.5  # below this difflib ratio an old translation is not carried
HEADER = (
    "Chinese (zh_CN) translation of a lesson of 'Attention, step by step'.\n"
    "Written by `python -m tools.i18n extract`: edit only the msgstr lines\n"
    "(see the translators' guide). msgctxt is the cell id."
)
METADATA = {
    "Project-Id-Version": "attention-step-by-step",
    "Language": LANGUAGE,
    "Language-Team": "Chinese (simplified)",
    "MIME-Version": "1.0",
    "Content-Type": "text/plain; charset=UTF-8",
    "Content-Transfer-Encoding": "8bit",
    "Plural-Forms": "nplurals=1; plural=0;",
}


# the extracted comment (#.) of each kind of entry, read back by the checks
MARKDOWN = "markdown"
TRAILING = "code comment after code: one line, the text after '# '"
BLOCK = "code comment lines: each line of the translation becomes a '# ' line"


def comment_kind(entry):
    """ "trailing", "block" or False (markdown), for i18n_text.markup_problems."""
    return {TRAILING: "trailing", BLOCK: "block"}.get(entry.comment or "", False)


def lessons():
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def catalogue_path(lesson, locale=LOCALE):
    return Path(locale) / f"{Path(lesson).stem}.po"


# -- extract ---------------------------------------------------------------------------


def lesson_entries(nb, name):
    """The entries of a lesson, in cell order: a list of polib.POEntry with
    empty msgstr, one per distinct (cell id, text)."""
    entries, seen = [], set()
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            texts = [(t, MARKDOWN) for t in i18n_text.markdown_blocks(cell.source)]
        elif cell.cell_type == "code":
            try:
                comments = i18n_text.comment_texts(cell.source)
            except ValueError as error:
                raise ValueError(f"{name}, cell {cell.id}: {error}") from None
            texts = [(t, TRAILING if after else BLOCK) for t, after in comments]
        else:
            continue
        for text, note in texts:
            if (cell.id, text) in seen:
                continue
            seen.add((cell.id, text))
            entries.append(
                polib.POEntry(
                    msgctxt=cell.id,
                    msgid=text,
                    msgstr="",
                    comment=note,
                    occurrences=[(name, cell.id)],
                )
            )
    return entries


def _carry(entry, old, fuzzy):
    entry.msgstr = old.msgstr
    entry.tcomment = old.tcomment
    if fuzzy or "fuzzy" in old.flags:
        entry.flags = ["fuzzy"]
        entry.previous_msgid = old.previous_msgid if not fuzzy else old.msgid
        if fuzzy and old.previous_msgid and "fuzzy" in old.flags:
            entry.previous_msgid = old.previous_msgid  # still the last translated text


def merge(entries, old_entries):
    """Give ``entries`` the translations of ``old_entries`` (see module doc):
    the same text keeps its translation (the same cell first, then any cell);
    a changed text gets the closest unused one of its cell as fuzzy."""
    old = [e for e in old_entries if not e.obsolete and e.msgstr]
    by_key = {(e.msgctxt, e.msgid): e for e in old}
    used, pending = set(), []
    for entry in entries:
        match = by_key.get((entry.msgctxt, entry.msgid))
        if match is not None:
            _carry(entry, match, fuzzy=False)
            used.add(id(match))
        else:
            pending.append(entry)
    by_text = {}
    for e in old:
        if id(e) not in used:
            by_text.setdefault(e.msgid, e)
    for entry in list(pending):  # the same text, moved to another cell
        match = by_text.get(entry.msgid)
        if match is not None and id(match) not in used:
            _carry(entry, match, fuzzy=False)
            used.add(id(match))
            pending.remove(entry)
    pairs = []
    for entry in pending:
        for candidate in old:
            if id(candidate) in used or candidate.msgctxt != entry.msgctxt:
                continue
            ratio = difflib.SequenceMatcher(None, entry.msgid, candidate.msgid).ratio()
            if ratio >= FUZZY_CUTOFF:
                pairs.append((ratio, id(entry), entry, candidate))
    taken = set()
    for _, _, entry, candidate in sorted(pairs, key=lambda p: -p[0]):
        if id(entry) in taken or id(candidate) in used:
            continue
        _carry(entry, candidate, fuzzy=True)
        taken.add(id(entry))
        used.add(id(candidate))
    return entries


def new_catalogue(entries):
    po = polib.POFile(wrapwidth=78)
    po.header = HEADER
    po.metadata = dict(METADATA)
    for entry in entries:
        po.append(entry)
    return po


def extract_one(lesson, locale=LOCALE):
    """Write the catalogue of one lesson; returns (path, counts)."""
    lesson = Path(lesson)
    nb = nbformat.read(lesson, as_version=4)
    entries = lesson_entries(nb, lesson.name)
    path = catalogue_path(lesson, locale)
    if path.exists():
        merge(entries, polib.pofile(str(path)))
    path.parent.mkdir(parents=True, exist_ok=True)
    new_catalogue(entries).save(str(path))
    return path, counts(entries)


def counts(entries):
    fuzzy = sum("fuzzy" in e.flags for e in entries)
    done = sum(bool(e.msgstr) and "fuzzy" not in e.flags for e in entries)
    return {"entries": len(entries), "translated": done, "fuzzy": fuzzy}


def extract(paths=None, locale=LOCALE):
    for lesson in paths or lessons():
        path, c = extract_one(lesson, locale)
        print(
            f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}: "
            f"{c['entries']} entries, {c['translated']} translated, {c['fuzzy']} fuzzy"
        )


# -- check -----------------------------------------------------------------------------


def entry_problems(entry):
    """What is wrong with one entry: untranslated, fuzzy, broken markup,
    terms not the glossary's."""
    if entry.obsolete:
        return []
    if not entry.msgstr:
        return ["untranslated"]
    problems = ["fuzzy (the English changed: check, then remove the fuzzy flag)"] * (
        "fuzzy" in entry.flags
    )
    kind = comment_kind(entry)
    problems += i18n_text.markup_problems(entry.msgid, entry.msgstr, kind)
    problems += i18n_terms.term_problems(entry.msgid, entry.msgstr)
    return problems


def check_catalogue(path):
    """The problems of a catalogue: a list of ``path:line: [cell] problem``."""
    po = polib.pofile(str(path))
    found = []
    if po.metadata.get("Language") != LANGUAGE:
        found.append(f"{path}:1: header Language is not {LANGUAGE}")
    for entry in po:
        for problem in entry_problems(entry):
            found.append(f"{path}:{entry.linenum}: [{entry.msgctxt}] {problem}")
    return found


def check(paths=None):
    paths = paths or sorted(LOCALE.glob("[0-9][0-9]_*.po"))
    total = 0
    for path in paths:
        problems = check_catalogue(path)
        total += len(problems)
        for line in problems:
            print(line)
        po = polib.pofile(str(path))
        c = counts(list(po))
        print(
            f"{path}: {c['translated']}/{c['entries']} translated, "
            f"{c['fuzzy']} fuzzy, {len(problems)} problem(s)"
        )
    return 1 if total else 0


# -- build -----------------------------------------------------------------------------


def build(paths, allow_partial=False, no_execute=False):
    """Write (and run) the Chinese notebooks of ``paths``. Strict unless
    ``allow_partial``: a lesson whose catalogue lacks a translation is not
    built (the others are) and the exit status is 1."""
    failures, ready = [], []
    for lesson in paths:
        try:
            if not allow_partial:
                i18n_build.build_notebook(
                    nbformat.read(lesson, as_version=4),
                    polib.pofile(str(catalogue_path(lesson))),
                    name=lesson.name,
                )
            ready.append(lesson)
        except i18n_build.Untranslated as error:
            failures.append(str(error).split("\n")[0])
    # a draft never lands where the committed Chinese lessons live
    dest = i18n_build.DRAFTS if allow_partial else i18n_build.ZH
    written = [
        i18n_build.build_lesson(lesson, allow_partial, dest=dest) for lesson in ready
    ]
    for path in written:
        print(f"built {path.relative_to(REPO)}" + " (draft)" * allow_partial)
    if written and not no_execute:
        i18n_build.execute(written)
    if failures:
        print("\n".join(failures), file=sys.stderr)
        print("not built: translate these first", file=sys.stderr)
        return 1
    return 0


def refresh(paths):
    """``i18n_build.refresh`` for each lesson; exit status 1 if one must be
    built and run instead (its code changed) or lacks a translation."""
    status = 0
    for lesson in paths:
        try:
            done = i18n_build.refresh(lesson)
        except i18n_build.Untranslated as error:
            print(str(error).split("\n")[0], file=sys.stderr)
            status = 1
            continue
        if not done:
            status = 1
        print(
            f"{lesson.name}: " + ("text refreshed" if done else "code changed: build")
        )
    return status


# -- command line ----------------------------------------------------------------------


def lesson_paths(names):
    """Lessons named by number (``01``), stem or path; all when none."""
    if not names:
        return lessons()
    found = []
    for name in names:
        matches = [p for p in lessons() if p.name.startswith(Path(name).name[:2])]
        if not matches:
            raise SystemExit(f"no lesson {name!r} in {NOTEBOOKS}")
        found += matches
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.i18n", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("extract", help="lessons -> catalogues")
    p.add_argument("lessons", nargs="*", help="lesson numbers or paths (all)")
    p = commands.add_parser("check", help="report what a catalogue still needs")
    p.add_argument("catalogues", nargs="*", type=Path, help="PO files (all)")
    p = commands.add_parser("build", help="lessons + catalogues -> notebooks/zh/")
    p.add_argument("lessons", nargs="*", help="lesson numbers or paths (all)")
    p.add_argument(
        "--allow-partial",
        action="store_true",
        help="keep English where a translation is missing: a draft, in build/zh-draft/",
    )
    p.add_argument(
        "--no-execute", action="store_true", help="write the notebooks, do not run them"
    )
    p = commands.add_parser(
        "refresh", help="new text into built lessons whose code did not change"
    )
    p.add_argument("lessons", nargs="*", help="lesson numbers or paths (all)")
    commands.add_parser("student", help="notebooks/zh/student/ from notebooks/zh/")
    commands.add_parser("slides", help="build/slides-zh/: decks and handouts")
    commands.add_parser("html", help="build/html-zh/: executed pages")
    commands.add_parser("stale", help="list Chinese notebooks the build would change")
    args = parser.parse_args(argv)
    if args.command == "extract":
        extract(lesson_paths(args.lessons))
        return 0
    if args.command == "check":
        return check(args.catalogues)
    if args.command == "build":
        return build(lesson_paths(args.lessons), args.allow_partial, args.no_execute)
    if args.command == "refresh":
        return refresh(lesson_paths(args.lessons))
    if args.command == "student":
        i18n_build.write_student_copies()
    elif args.command in ("slides", "html"):
        i18n_build.export(args.command)
    elif args.command == "stale":
        problems = [p for lesson in lessons() for p in i18n_build.stale(lesson)]
        print("\n".join(problems) or "every Chinese notebook is current")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
