"""Grade the course's exercises with nbgrader.

Two commands (run from the repository root with the course venv):

    python tools/nbgrader_course.py meta notebooks/[0-9]*.ipynb
    python tools/nbgrader_course.py course build/nbgrader [--lessons 01,02]
    python tools/nbgrader_course.py course build/nbgrader-zh --lang zh

`meta` gives each lesson's exercise cells the metadata nbgrader reads, in place
(idempotent; `--check` only reports lessons that lack it, exit 1):

- a cell tagged `solution` (its answer between `# BEGIN SOLUTION` and
  `# END SOLUTION`) becomes an nbgrader solution cell, `exercise_K`;
- a cell tagged `check` (it calls the checker) becomes a locked autograder test
  cell worth 1 point, `check_K`. Locked: nbgrader restores its source if a
  student edits or deletes it.

`course DEST` lays out an nbgrader course folder: `nbgrader_config.py` (the
same stub `make student` writes, a 60 s limit per cell, deleted check cells
put back) and `source/lesson_NN/NN_topic.ipynb` for each lesson, with the
metadata applied (whether or not the lesson already carries it). Then, in DEST:

    nbgrader generate_assignment lesson_01      # release/lesson_01/: student copies
    nbgrader collect / zip_collect ...          # students' submissions -> submitted/
    nbgrader autograde lesson_01                # run and score each submission
    nbgrader generate_feedback lesson_01        # feedback/: the checkers' messages

`course DEST --lang zh` lays out the Chinese edition's course (its own folder
and course id, attention-step-by-step-zh): source/lesson_NN/ from notebooks/zh/,
the Chinese stub (tools/i18n_build.py STUB), and a config whose kernels (those
nbgrader starts to autograde or validate) set COURSE_LANG=zh before the first
cell, so the checkers speak Chinese (helpers/i18n.py: the folders nbgrader runs
a submission in, autograded/<student>/lesson_NN/, are not named zh, so the
folder rule would not).

The released notebooks have the same cells and sources as the student copies
from `make student` (tools/coursebuild.py: the test markers moved to cell
metadata, links rewritten), or for --lang zh as notebooks/zh/student/ (`python
-m tools.i18n student`); only nbgrader's own cell metadata is added. Their
outputs differ: nbgrader's generate_assignment clears every output (its
ClearOutput step), where a student copy keeps the outputs above the exercises.
tests/course/test_nbgrader.py checks both claims and grades a solved, an
unsolved and a broken submission; tests/course/test_nbgrader_zh.py the same
of the Chinese course, with a solved and an unsolved submission.
"""

import argparse
import copy
import shutil
import sys
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
sys.path.insert(0, str(REPO))

from tools import i18n_build  # noqa: E402
from tools.coursebuild import (  # noqa: E402
    BEGIN,
    END,
    STUB,
    drop_test_markers,
    relink,
)

SCHEMA_VERSION = 3
POINTS_PER_CHECK = 1

CONFIG = '''\
"""nbgrader configuration for "Attention, step by step" (tools/nbgrader_course.py)."""

import re

IMPORTS = re.compile(r"^\\s*(import|from)\\s", re.M)
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = {course_id!r}
{language}# the stub {student} puts where a solution was
c.ClearSolutions.code_stub = {{"python": {stub!r}}}
c.ClearSolutions.begin_solution_delimeter = {begin!r}
c.ClearSolutions.end_solution_delimeter = {end!r}
# a student's infinite loop costs that check its point, not the whole grading run;
# a cell that imports gets {import_timeout} s (torch's import took over 8 s on a
# busy machine), every other cell {timeout} s
c.Execute.timeout = {timeout}
c.Execute.timeout_func = lambda cell: (
    {import_timeout} if IMPORTS.search(cell.source) else {timeout}
)
c.Execute.interrupt_on_timeout = True
# after the interrupt, the kernel's last output may take more than nbclient's
# 4 s on a busy machine (2026-12-01, load 15: every autograde of the infinite
# loop failed, with 30 s per cell as with 10): wait for it up to 30 s
c.Execute.iopub_timeout = 30
# a deleted check cell is put back and run, so deleting it cannot skip a check
c.OverwriteCells.add_missing_cells = True
'''


COURSE_ID = "attention-step-by-step"
# an IPython kernel's option: a line it runs at start, before any cell (no name is
# left in the notebook's namespace, no execution count used)
ZH_KERNEL = "--IPKernelApp.exec_lines=__import__('os').environ['COURSE_LANG'] = 'zh'"
# what differs between the English course and the Chinese one
EDITIONS = {
    "en": {
        "course_id": COURSE_ID,
        "folder": NOTEBOOKS,
        "stub": STUB,
        "student": "`make student` (tools/coursebuild.py)",
        "links": relink,
        "language": "",
    },
    "zh": {
        "course_id": f"{COURSE_ID}-zh",
        "folder": i18n_build.ZH,
        "stub": i18n_build.STUB,
        "student": "`make student-zh` (tools/i18n_build.py)",
        "links": i18n_build.student_links,
        # the kernels nbgrader starts (to autograde, to validate) and only they get
        # COURSE_LANG=zh, set before the notebook's first cell: the helpers'
        # messages in Chinese (helpers/i18n.py), the nbgrader process untouched
        "language": (
            "# the Chinese edition: the kernels nbgrader starts set COURSE_LANG=zh\n"
            "# first, so the checkers' messages are Chinese (helpers/i18n.py)\n"
            f"c.Execute.extra_arguments = [{ZH_KERNEL!r}]\n"
        ),
    },
}


def lessons(lang="en"):
    return sorted(EDITIONS[lang]["folder"].glob("[0-9][0-9]_*.ipynb"))


def nbgrader_metadata(nb):
    """The nbgrader metadata each exercise cell of nb should carry: {index: dict}."""
    wanted, n_solution, n_check = {}, 0, 0
    for index, cell in enumerate(nb.cells):
        tags = cell.metadata.get("tags", [])
        if cell.cell_type != "code":
            continue
        if "solution" in tags and "check" in tags:
            raise ValueError(f"cell {index} is tagged both solution and check")
        if "solution" in tags:
            if BEGIN not in cell.source or END not in cell.source:
                raise ValueError(
                    f"cell {index} is tagged solution but has no {BEGIN!r}/{END!r}"
                )
            n_solution += 1
            wanted[index] = {
                "grade": False,
                "grade_id": f"exercise_{n_solution}",
                "locked": False,
                "schema_version": SCHEMA_VERSION,
                "solution": True,
                "task": False,
            }
        elif "check" in tags:
            n_check += 1
            wanted[index] = {
                "grade": True,
                "grade_id": f"check_{n_check}",
                "locked": True,
                "points": POINTS_PER_CHECK,
                "schema_version": SCHEMA_VERSION,
                "solution": False,
                "task": False,
            }
        elif BEGIN in cell.source:
            raise ValueError(f"cell {index} has {BEGIN!r} but no solution tag")
    return wanted


def with_metadata(nb):
    """A copy of nb whose exercise cells carry nbgrader metadata (others none)."""
    nb = copy.deepcopy(nb)
    wanted = nbgrader_metadata(nb)
    for index, cell in enumerate(nb.cells):
        if index in wanted:
            cell.metadata["nbgrader"] = wanted[index]
        else:
            cell.metadata.pop("nbgrader", None)
    return nb


def missing_metadata(nb):
    """Indices of cells whose nbgrader metadata differs from what meta writes."""
    wanted = nbgrader_metadata(nb)
    return [
        index
        for index, cell in enumerate(nb.cells)
        if cell.metadata.get("nbgrader") != wanted.get(index)
    ]


def write_meta(paths, check=False):
    """Apply (or, with check, only report) the metadata; returns lessons lacking it."""
    lacking = []
    for path in map(Path, paths):
        nb = nbformat.read(path, as_version=4)
        if missing_metadata(nb):
            lacking.append(path)
            if not check:
                nbformat.write(with_metadata(nb), path)
    return lacking


def assignment_name(path):
    return f"lesson_{Path(path).name[:2]}"


def write_course(dest, lesson_paths=None, timeout=60, import_timeout=None, lang="en"):
    """An nbgrader course folder at dest: config and source/lesson_NN/.

    ``timeout``: seconds per cell when autograding; ``import_timeout`` (default
    the same): seconds for a cell with an import statement; ``lang``: ``en``
    (the lessons of notebooks/) or ``zh`` (notebooks/zh/, Chinese stub and
    kernels)."""
    if lang not in EDITIONS:
        raise ValueError(f"lang must be one of {sorted(EDITIONS)}, not {lang!r}")
    edition = EDITIONS[lang]
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "nbgrader_config.py").write_text(
        CONFIG.format(
            course_id=edition["course_id"],
            language=edition["language"],
            student=edition["student"],
            stub=edition["stub"],
            begin="BEGIN SOLUTION",
            end="END SOLUTION",
            timeout=timeout,
            import_timeout=timeout if import_timeout is None else import_timeout,
        )
    )
    names = []
    for path in lessons(lang) if lesson_paths is None else lesson_paths:
        path = Path(path)
        folder = dest / "source" / assignment_name(path)
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        nb = with_metadata(nbformat.read(path, as_version=4))
        nb.metadata.pop("widgets", None)  # as make student: no stale widget state
        for cell in nb.cells:  # as make student: no test markers, links relinked
            if cell.cell_type == "markdown":
                cell.source = edition["links"](cell.source)
            elif cell.cell_type == "code":
                drop_test_markers(cell)
        nbformat.write(nb, folder / path.name)
        names.append(folder.name)
    return names


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    meta = sub.add_parser("meta", help="give lessons' exercise cells nbgrader metadata")
    meta.add_argument("notebooks", nargs="*", type=Path)
    meta.add_argument("--check", action="store_true", help="report only; exit 1 if any")
    course = sub.add_parser("course", help="write an nbgrader course folder")
    course.add_argument("dest", type=Path)
    course.add_argument("--lessons", help="comma-separated numbers, e.g. 01,02")
    course.add_argument(
        "--lang",
        choices=sorted(EDITIONS),
        default="en",
        help="zh: the Chinese edition's course (notebooks/zh/), in its own DEST",
    )
    course.add_argument("--timeout", type=int, default=60, help="seconds per cell")
    course.add_argument(
        "--import-timeout", type=int, help="seconds for a cell that imports"
    )
    args = parser.parse_args(argv)

    if args.command == "meta":
        paths = args.notebooks or lessons()
        lacking = write_meta(paths, check=args.check)
        for path in lacking:
            print(f"{'lacks' if args.check else 'updated'}: {path}")
        if not lacking:
            print(f"all {len(paths)} lessons carry nbgrader metadata")
        return 1 if args.check and lacking else 0

    chosen = lessons(args.lang)
    if args.lessons:
        numbers = set(args.lessons.split(","))
        chosen = [p for p in chosen if p.name[:2] in numbers]
        if not chosen:
            parser.error(f"no lesson numbered {args.lessons}")
    for name in write_course(
        args.dest,
        chosen,
        timeout=args.timeout,
        import_timeout=args.import_timeout,
        lang=args.lang,
    ):
        print(f"nbgrader source: {args.dest / 'source' / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
