"""Build the Chinese edition from the English lessons and their catalogues.

Called by ``python -m tools.i18n build|student|slides|html`` (see
tools/i18n.py). A Chinese lesson, notebooks/zh/NN_x.ipynb, has the English
lesson's cells and ids, its markdown and comments translated from
locale/zh_CN/LC_MESSAGES/NN_x.po, its code otherwise identical, and outputs
from a fresh-kernel run with COURSE_LANG=zh (tools/execute_notebooks.py).
Relative links to a file that has no Chinese copy point one folder up
(``glossary.md`` -> ``../glossary.md``); a link to the README points at the
Chinese README.
"""

import copy
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import polib

from tools import coursebuild, i18n_text, pagebuild

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
ZH = NOTEBOOKS / "zh"
ZH_STUDENT = ZH / "student"
DRAFTS = REPO / "build" / "zh-draft"  # build --allow-partial: never committed
LOCALE = REPO / "locale" / "zh_CN" / "LC_MESSAGES"
README = {REPO / "README.md": REPO / "README.zh-CN.md"}
NB_LANGUAGE = "zh-CN"  # the notebook's metadata "language" (BCP 47)
# the line the Chinese student copies and nbgrader assignments have where a solution
# was: coursebuild.STUB in Chinese (the checkers' "not implemented yet" message names
# the `raise NotImplementedError(...)` line, so that part stays code)
STUB = 'raise NotImplementedError("练习：把这一行换成你的代码（提示在上面）。")'
LESSON = r"\d\d_.*\.ipynb$"


class Untranslated(ValueError):
    """A lesson's catalogue lacks translations; ``missing`` lists them."""

    def __init__(self, lesson, missing):
        self.missing = missing
        shown = "\n".join(
            f"  [{ctx}] {why}: {text[:70]!r}" for ctx, text, why in missing
        )
        super().__init__(
            f"{lesson}: {len(missing)} entries not translated (run "
            f"`python -m tools.i18n check`; `build --allow-partial` keeps "
            f"English for a draft):\n{shown}"
        )


def translations(po):
    """``{(cell id, English text): entry}`` of a catalogue."""
    return {(e.msgctxt, e.msgid): e for e in po if not e.obsolete}


# a line break between two Chinese characters: a browser shows it as a space
CJK = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef"
CJK_BREAK = re.compile(rf"(?<=[{CJK}])\n[ \t]*(?=[{CJK}])")


def join_cjk_lines(text):
    """``text`` with the line breaks between two Chinese characters removed
    (markdown shows a soft break as a space, which Chinese does not have);
    fenced code is left as it is."""
    if "```" in text or "~~~" in text:
        return text
    return CJK_BREAK.sub("", text)


def translator(index, cell_id, missing, markdown=False):
    """A function English text -> Chinese for the texts of cell ``cell_id``;
    it records what it cannot translate in ``missing`` and returns it as is.
    ``markdown``: a translator's line breaks inside Chinese prose are joined."""

    def translate(text):
        entry = index.get((cell_id, text))
        if entry is not None and entry.msgstr and "fuzzy" not in entry.flags:
            return join_cjk_lines(entry.msgstr) if markdown else entry.msgstr
        if entry is None:
            why = "not in the catalogue (run `python -m tools.i18n extract`)"
        else:
            why = "fuzzy" if entry.msgstr else "untranslated"
        missing.append((cell_id, text, why))
        return text

    return translate


def zh_target(target, lesson_dir=ZH):
    """A relative link of an English lesson, as it works from ``lesson_dir``:
    another lesson keeps its name (its Chinese copy is beside it); the README
    becomes the Chinese README; anything else points at the English file."""
    if not coursebuild.is_relative(target):
        return target
    path, hash_, fragment = target.partition("#")
    if not path:
        return target
    resolved = (NOTEBOOKS / path).resolve()
    if resolved.parent == NOTEBOOKS.resolve() and re.match(LESSON, resolved.name):
        return target
    resolved = README.get(resolved, resolved)
    return (
        Path(os.path.relpath(resolved, lesson_dir.resolve())).as_posix()
        + hash_
        + fragment
    )


def relink(source, target=zh_target):
    source = coursebuild.MD_LINK.sub(lambda m: m[1] + target(m[2]) + m[3], source)
    return coursebuild.HTML_LINK.sub(lambda m: m[1] + target(m[2]) + m[3], source)


def build_notebook(nb, po, allow_partial=False, name="lesson"):
    """The Chinese notebook of the English ``nb`` and its catalogue ``po``,
    outputs cleared. Raises :class:`Untranslated` when an entry is missing,
    untranslated or fuzzy, unless ``allow_partial`` (English is kept)."""
    index, missing = translations(po), []
    zh = copy.deepcopy(nb)
    for cell in zh.cells:
        markdown = cell.cell_type == "markdown"
        translate = translator(index, cell.get("id"), missing, markdown)
        if markdown:
            cell.source = relink(i18n_text.translate_markdown(cell.source, translate))
        elif cell.cell_type == "code":
            cell.source = i18n_text.translate_code(cell.source, translate)
            cell.outputs = []
            cell.execution_count = None
    zh.metadata["language"] = NB_LANGUAGE
    zh.metadata.pop("widgets", None)
    if missing and not allow_partial:
        raise Untranslated(name, missing)
    return zh


def zh_path(lesson):
    return ZH / Path(lesson).name


def build_lesson(lesson, allow_partial=False, locale=LOCALE, dest=ZH):
    """Write the Chinese notebook of ``lesson`` (outputs cleared) into ``dest``."""
    lesson = Path(lesson)
    po_path = Path(locale) / f"{lesson.stem}.po"
    if not po_path.exists():
        raise FileNotFoundError(f"{po_path}: no catalogue (run tools.i18n extract)")
    nb = nbformat.read(lesson, as_version=4)
    zh = build_notebook(nb, polib.pofile(str(po_path)), allow_partial, lesson.name)
    dest.mkdir(parents=True, exist_ok=True)
    out = Path(dest) / lesson.name
    nbformat.write(zh, out)
    return out


def execute(paths):
    """Run each notebook in a fresh kernel with COURSE_LANG=zh, outputs stored
    (tools/execute_notebooks.py, the English lessons' own runner)."""
    env = {**os.environ, "COURSE_LANG": "zh"}
    command = [sys.executable, "-m", "tools.execute_notebooks", *map(str, paths)]
    subprocess.run(command, env=env, cwd=REPO, check=True)


# -- staleness -------------------------------------------------------------------------


def _comparable(cell):
    meta = {k: v for k, v in cell.metadata.items() if k not in ("execution",)}
    return (cell.cell_type, cell.get("id"), cell.source, meta)


def stale(lesson, built_dir=ZH, locale=LOCALE):
    """How notebooks/zh/NN_x.ipynb differs from what lesson + catalogue build
    (outputs aside: they come from the run): a list of sentences, empty when
    it is current."""
    lesson = Path(lesson)
    path = Path(built_dir) / lesson.name
    if not path.exists():
        return [f"{path.name}: no Chinese notebook (run `make notebooks-zh`)"]
    po = polib.pofile(str(Path(locale) / f"{lesson.stem}.po"))
    expected = build_notebook(nbformat.read(lesson, as_version=4), po, True)
    expected = coursebuild.add_slide_metadata(expected)
    stored = nbformat.read(path, as_version=4)
    problems = []
    if stored.metadata.get("language") != NB_LANGUAGE:
        problems.append(f"{path.name}: metadata language is not {NB_LANGUAGE}")
    if len(stored.cells) != len(expected.cells):
        problems.append(
            f"{path.name}: {len(stored.cells)} cells, "
            f"the build gives {len(expected.cells)}"
        )
    for want, have in zip(expected.cells, stored.cells, strict=False):
        if _comparable(want) != _comparable(have):
            problems.append(
                f"{path.name}: cell {want.get('id')} differs from the build"
            )
    unrun = [
        c.get("id")
        for c in stored.cells
        if c.cell_type == "code" and c.source.strip() and c.execution_count is None
    ]
    if unrun:
        problems.append(f"{path.name}: cells never executed: {', '.join(unrun[:5])}")
    return problems


# -- student copies, decks and pages ---------------------------------------------------


def student_copy(zh, en):
    """The learner's copy of the Chinese lesson ``zh`` (its English lesson
    ``en``): coursebuild.student_copy, with the Chinese text put back after it
    so that the exercises start where the English heading says, links
    rewritten to work from notebooks/zh/student/, and the Chinese stub
    (:data:`STUB`) where a solution was."""
    hybrid = copy.deepcopy(zh)
    for cell, english in zip(hybrid.cells, en.cells, strict=True):
        if cell.cell_type == "markdown":
            cell.source = english.source
    copy_ = coursebuild.student_copy(hybrid)
    for cell, chinese in zip(copy_.cells, zh.cells, strict=True):
        if cell.cell_type == "markdown":
            cell.source = student_links(chinese.source)
        elif cell.cell_type == "code" and coursebuild.BEGIN in chinese.source:
            cell.source = chinese_stub(cell.source)
    return copy_


def chinese_stub(source):
    """``source`` (a cell coursebuild.strip_solution stubbed) with each
    coursebuild.STUB line, and only such a line, in Chinese (:data:`STUB`)."""
    lines = source.split("\n")
    for index, line in enumerate(lines):
        if line.strip() == coursebuild.STUB:
            lines[index] = line[: len(line) - len(line.lstrip())] + STUB
    return "\n".join(lines)


def student_links(source):
    """The relative links of a Chinese markdown cell, rewritten to work from
    notebooks/zh/student/ (and so from an nbgrader assignment's folder)."""
    return relink(source, _student_target)


def _student_target(target):
    return coursebuild.student_target(target, lesson_dir=ZH, student_dir=ZH_STUDENT)


def write_student_copies(dest=ZH_STUDENT):
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted(ZH.glob("[0-9][0-9]_*.ipynb")):
        zh = nbformat.read(path, as_version=4)
        en = nbformat.read(NOTEBOOKS / path.name, as_version=4)
        nbformat.write(student_copy(zh, en), dest / path.name)
        written.append(dest / path.name)
        print(f"student copy: {(dest / path.name).relative_to(REPO)}")
    return written


def zh_lessons():
    return sorted(ZH.glob("[0-9][0-9]_*.ipynb"))


def export(kind):
    """The Chinese decks (with handouts) or pages: build/slides-zh/ or
    build/html-zh/ (beside build/assets, which they load), run in a kernel
    whose folder is zh (so the helpers speak Chinese)."""
    os.environ["COURSE_LANG"] = "zh"  # the kernels pagebuild starts inherit it
    dest = coursebuild.BUILD / f"{kind}-zh"
    paths = zh_lessons()
    if kind == "slides":
        with_explorers = {
            p
            for p in paths
            if any(
                coursebuild.explorer_export.is_explorer_cell(c)
                for c in nbformat.read(p, as_version=4).cells
            )
        }
        decks = pagebuild.export("slides", paths, dest, execute=with_explorers)
        return pagebuild.write_handouts(decks)
    return pagebuild.export("html", paths, dest, execute=True)


def refresh(lesson, locale=LOCALE, built_dir=ZH):
    """Put the catalogue's current text into the built Chinese notebook of
    ``lesson`` without running it again, when that is all that changed: the
    same cells and ids, every code cell's code (comments aside) the same as in
    the stored run. Returns True if refreshed, False if the lesson must be
    built and run (``build``). Raises :class:`Untranslated` as ``build`` does."""
    lesson = Path(lesson)
    path = Path(built_dir) / lesson.name
    if not path.exists():
        return False
    po = polib.pofile(str(Path(locale) / f"{lesson.stem}.po"))
    new = build_notebook(nbformat.read(lesson, as_version=4), po, name=lesson.name)
    stored = nbformat.read(path, as_version=4)
    if [(c.cell_type, c.get("id")) for c in new.cells] != [
        (c.cell_type, c.get("id")) for c in stored.cells
    ]:
        return False
    for fresh, old in zip(new.cells, stored.cells, strict=True):
        if fresh.cell_type == "code" and i18n_text.without_comments(
            fresh.source
        ) != i18n_text.without_comments(old.source):
            return False
    for fresh, old in zip(new.cells, stored.cells, strict=True):
        old.source, old.metadata = fresh.source, fresh.metadata
    stored.metadata["language"] = NB_LANGUAGE
    nbformat.write(coursebuild.add_slide_metadata(stored), path)
    return True
