"""Build what instructors and readers use from the lessons.

    python -m tools.coursebuild student   # notebooks/student/: solutions stubbed
    python -m tools.coursebuild slides    # build/slides/: reveal.js decks and
                                          # their handouts (PDF), offline
    python -m tools.coursebuild html      # build/html/: executed pages, offline
    python -m tools.coursebuild present   # notebooks/present/: for live slides

(``make student``, ``make slides`` and ``make html`` call these.)

A student copy keeps the stored outputs of every cell above the lesson's
exercises (the "## Exercises" heading, or the first ``solution`` cell if that
comes first): a learner opening the copy sees every figure and printed result
the prose talks about before running anything (lesson 00 promises pictures),
as the lesson has them. From the exercises on, outputs are cleared (the
solutions are stubs and the checks have not run), and so is the widget state.
Test markers never reach a learner: each ``# NBVAL_...`` line and the reason
comments after it are dropped from the code, and nbval's tags and reasons from
the cells' metadata; the lesson keeps them, where a reviewer finds them.
Relative links are rewritten to work from ``notebooks/student/``
(``../README.md`` becomes ``../../README.md``); links to another lesson keep
pointing at its student copy beside it. Rebuilt from the same lesson, a copy
is the same bytes.

The slide decks, their handouts and the HTML pages are built by
tools/pagebuild.py, with nbconvert's exporters set up by
tools/nbconvert_course.py.
"""

import copy
import os
import re
import sys
from pathlib import Path

import nbformat

from tools import explorer_export, same_kernels, slidefit, slideplan

same_kernels.apply()  # the kernels the builds start compute the stored outputs' digits

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
STUDENT = NOTEBOOKS / "student"
BUILD = REPO / "build"

BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
STUB = (
    'raise NotImplementedError("Exercise: replace this line with your code '
    '(the hints are above).")'
)


def lessons():
    """The lesson notebooks, in teaching order."""
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


# -- student copies ------------------------------------------------------------


def strip_solution(source):
    """Replace each BEGIN/END SOLUTION block with a NotImplementedError stub."""
    out, inside = [], False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise ValueError("nested # BEGIN SOLUTION")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}{STUB}")
        elif stripped == END:
            if not inside:
                raise ValueError("# END SOLUTION without # BEGIN SOLUTION")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError("# BEGIN SOLUTION without # END SOLUTION")
    return "\n".join(out)


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# a markdown link or image target, and an HTML src/href
MD_LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")
HTML_LINK = re.compile(r"""((?:src|href)=["'])([^"']+)(["'])""")


def exercises_start(nb):
    """Index of the first cell of the exercises: the "## Exercises" heading (the
    Chinese edition's "## 练习") or the first ``solution`` cell, whichever comes
    first (len(cells) if none)."""
    for index, cell in enumerate(nb.cells):
        heading = cell.cell_type == "markdown" and any(
            line.strip().lower().startswith(("## exercises", "## 练习"))
            for line in cell.source.splitlines()
        )
        if heading or "solution" in cell.metadata.get("tags", []):
            return index
    return len(nb.cells)


def is_relative(target):
    return not re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", target, re.IGNORECASE)


def student_target(target, lesson_dir=NOTEBOOKS, student_dir=STUDENT):
    """A relative link of a lesson, rewritten to work from the student copies.

    A link to another lesson (``NN_*.ipynb`` beside it) keeps pointing at that
    lesson's student copy; anything else points back at the file the lesson
    meant, e.g. ``../README.md`` -> ``../../README.md``.
    """
    if not is_relative(target):
        return target
    path, hash_, fragment = target.partition("#")
    if not path:
        return target
    resolved = (lesson_dir / path).resolve()
    if resolved.parent == lesson_dir.resolve() and re.match(
        r"\d\d_.*\.ipynb$", resolved.name
    ):
        return target  # another lesson: its student copy sits beside this one
    relative = os.path.relpath(resolved, student_dir.resolve())
    return Path(relative).as_posix() + hash_ + fragment


def relink(source):
    """Every relative link of a markdown cell, as :func:`student_target` says."""
    source = MD_LINK.sub(lambda m: m[1] + student_target(m[2]) + m[3], source)
    return HTML_LINK.sub(lambda m: m[1] + student_target(m[2]) + m[3], source)


def drop_test_markers(cell):
    """Drop ``# NBVAL_...`` lines and their reasons from the code, and nbval's
    tags (``nbval-ignore-output``, ...) and ``nbval_ignore_reason`` from the
    metadata: the lesson keeps them, where a reviewer finds them."""
    cell.source = slidefit.strip_test_markers(cell.source)
    cell.metadata.pop("nbval_ignore_reason", None)
    tags = cell.metadata.get("tags")
    if tags is not None:
        kept = [tag for tag in tags if not tag.startswith("nbval")]
        if kept:
            cell.metadata["tags"] = kept
        else:
            del cell.metadata["tags"]


def without_widgets(outputs):
    """The outputs with widget views dropped (their state is not shipped)."""
    kept = []
    for output in outputs:
        data = output.get("data")
        if data is not None and WIDGET_VIEW in data:
            # without its state a widget shows nothing; its text is a repr
            output = copy.deepcopy(output)
            for mime in (WIDGET_VIEW, "text/plain"):
                output["data"].pop(mime, None)
            if not output["data"]:
                continue
        kept.append(output)
    return kept


def student_copy(nb):
    """The learner's copy: solutions stubbed, the exercises' outputs cleared.

    Outputs above the exercises stay, without widget views; see the module doc.
    """
    nb = copy.deepcopy(nb)
    start = exercises_start(nb)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            cell.source = relink(cell.source)
            continue
        if cell.cell_type != "code":
            continue
        if BEGIN in cell.source:
            cell.source = strip_solution(cell.source)
        drop_test_markers(cell)
        if index < start:
            cell.outputs = without_widgets(cell.outputs)
        else:
            cell.outputs = []
            cell.execution_count = None
    nb.metadata.pop("widgets", None)
    return nb


def write_student_copies(dest=STUDENT):
    dest.mkdir(parents=True, exist_ok=True)
    for path in lessons():
        nb = nbformat.read(path, as_version=4)
        nbformat.write(student_copy(nb), dest / path.name)
        print(f"student copy: {dest.relative_to(REPO) / path.name}")


# -- slides ----------------------------------------------------------------------


def slide_type(cell, index):
    """One idea per slide: sections start slides, explanations start subslides.

    The title cell and every ``## `` heading start a slide; every other markdown
    cell starts a subslide, so each explanation shows with the code below it;
    code cells continue the current (sub)slide. Exercise solutions and their
    checks are skipped: slides present, student copies practise.
    """
    tags = cell.metadata.get("tags", [])
    if "solution" in tags or "check" in tags:
        return "skip"
    if cell.cell_type != "markdown":
        return "-"
    if index == 0 or cell.source.lstrip().startswith("## "):
        return "slide"
    return "subslide"


def add_slide_metadata(nb):
    """Set every cell's slideshow metadata (see slide_type); returns nb."""
    for index, cell in enumerate(nb.cells):
        cell.metadata["slideshow"] = {"slide_type": slide_type(cell, index)}
    return nb


# -- live slides -------------------------------------------------------------------

PRESENT = NOTEBOOKS / "present"


def present_copy(nb, curation=None):
    """The lesson as jupyterlab-slideshow presents it, outputs kept: the same
    slides as its deck (tools/slideplan.py), every cell still there to run, the
    deck's notes as notes cells; test markers stripped as in every export."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = slidefit.strip_test_markers(cell.source)
    return slideplan.present_notebook(nb, deck_plan(nb, curation))


def deck_plan(nb, curation=None, frames=None):
    """The slides of the lesson's deck (tools/slideplan.py), explorers as the
    deck shows them; the live slides follow the same plan."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = slidefit.strip_test_markers(cell.source)
    explorer_export.replace_explorers(nb, frames, note=explorer_export.ON_SLIDES)
    return slideplan.plan(nb, curation)


def write_present_copies(dest=PRESENT, source=NOTEBOOKS):
    """Write the presenting copies of every lesson in ``source`` into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        curation = slideplan.load_curation(path)
        nbformat.write(present_copy(nb, curation), dest / path.name)
    return dest


def main(argv):
    from tools import pagebuild  # it builds on this module: imported here, not above

    command = argv[0] if argv else ""
    if command == "student":
        write_student_copies()
    elif command == "slides":
        pagebuild.write_handouts(
            pagebuild.export("slides", execute=pagebuild.lessons_with_explorers())
        )
    elif command == "html":
        pagebuild.export("html", execute=True)
    elif command == "present":
        write_present_copies()
    elif command == "assets":
        pagebuild.ensure_assets()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
