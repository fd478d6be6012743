"""Grading the course with nbgrader (tools/nbgrader_course.py).

- every lesson's exercise cells get nbgrader metadata from their tags;
- `nbgrader generate_assignment` releases, for every lesson, the same notebook
  as `make student` (same cells and sources; nbgrader adds only its own cell
  metadata and locks). Outputs differ, and the test says so: generate_assignment
  clears every output, while a student copy keeps those above the exercises;
- `nbgrader autograde` scores lesson 01 submitted three ways: solved (4/4),
  unsolved (0/4), and broken (an infinite loop in exercise 1 -> timeout,
  exercise 2 solved, an exception inside exercise 3, exercise 4 solved but its
  check cell deleted -> put back and run: 2/4); `nbgrader generate_feedback`
  shows each checker's diagnosis.
"""

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from helpers import checks
from tools import coursebuild
from tools.nbgrader_course import (
    lessons,
    missing_metadata,
    nbgrader_metadata,
    with_metadata,
    write_course,
)

BIN = Path(sys.executable).parent
LESSON_01 = next(p for p in lessons() if p.name.startswith("01_"))
# Seconds per cell in the test course (a real course gets 60, tools/nbgrader_course.py):
# TIMEOUT is what the infinite loop costs. Lesson 01's slowest cell without an import
# takes under a second on a quiet machine and took 7 s at load 20 (2026-12-01); its
# first cell imports torch, which took over 8 s on a busy machine (20 s at load 20),
# and a cell that imports gets IMPORT_TIMEOUT.
TIMEOUT = 15
IMPORT_TIMEOUT = 60


def _tags(cell):
    return cell.metadata.get("tags", [])


@pytest.mark.parametrize("path", lessons(), ids=lambda p: p.name)
def test_meta_marks_each_exercise_and_its_check(path):
    nb = nbformat.read(path, as_version=4)
    wanted = nbgrader_metadata(nb)
    solutions = [i for i, c in enumerate(nb.cells) if "solution" in _tags(c)]
    check_cells = [i for i, c in enumerate(nb.cells) if "check" in _tags(c)]
    assert solutions and len(solutions) == len(check_cells)
    assert sorted(wanted) == sorted(solutions + check_cells)
    assert all(wanted[i]["solution"] and not wanted[i]["grade"] for i in solutions)
    assert all(wanted[i]["grade"] and wanted[i]["locked"] for i in check_cells)
    assert all(wanted[i]["points"] == 1 for i in check_cells)
    ids = [m["grade_id"] for m in wanted.values()]
    assert len(set(ids)) == len(ids)
    marked = with_metadata(nb)
    assert missing_metadata(marked) == []
    assert with_metadata(marked) == marked  # idempotent
    # nothing but the metadata changes
    assert [c.source for c in marked.cells] == [c.source for c in nb.cells]


@pytest.mark.parametrize("path", lessons(), ids=lambda p: p.name)
def test_lesson_carries_nbgrader_metadata(path):
    """The committed lesson itself is ready for nbgrader (and so its student copy)."""
    lacking = missing_metadata(nbformat.read(path, as_version=4))
    assert not lacking, (
        f"{path.name}: cells {lacking} lack nbgrader metadata; run "
        f"`.venv/bin/python -m tools.nbgrader_course meta notebooks/{path.name}`"
    )


def test_meta_refuses_a_solution_outside_a_solution_cell():
    nb = nbformat.v4.new_notebook()
    nb.cells.append(
        nbformat.v4.new_code_cell("# BEGIN SOLUTION\nx = 1\n# END SOLUTION")
    )
    with pytest.raises(ValueError, match="no solution tag"):
        nbgrader_metadata(nb)


def test_a_cell_that_imports_gets_the_longer_timeout(tmp_path):
    from traitlets.config.loader import PyFileConfigLoader

    write_course(tmp_path, [], timeout=7, import_timeout=45)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    timeout = config.Execute.timeout_func
    cell = nbformat.v4.new_code_cell
    assert config.Execute.timeout == 7
    assert config.Execute.iopub_timeout == 30  # an interrupted kernel's last output
    assert timeout(cell("import math\n\nimport torch")) == 45
    assert timeout(cell("x = 1\n    from helpers import checks")) == 45
    assert timeout(cell("while True:  # important\n    pass")) == 7
    write_course(tmp_path, [], timeout=7)  # the same for every cell by default
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    assert config.Execute.timeout_func(cell("import torch")) == 7


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """An nbgrader course folder with every lesson released."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    root = tmp_path_factory.mktemp("nbgrader")
    names = write_course(root, timeout=TIMEOUT, import_timeout=IMPORT_TIMEOUT)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    config.CourseDirectory.root = str(root)
    # nbgrader runs alembic (its database migrations) from PATH
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{BIN}{os.pathsep}{path}"
    try:
        api = NbGraderAPI(config=config)
        for name in names:
            result = api.generate_assignment(name)
            assert result["success"], result["log"] + result.get("error", "")
        yield root, names
    finally:
        os.environ["PATH"] = path


@pytest.mark.slow
def test_generate_assignment_equals_make_student(course):
    root, names = course
    assert len(names) == len(lessons())
    for path in lessons():
        released = nbformat.read(
            root / "release" / f"lesson_{path.name[:2]}" / path.name, as_version=4
        )
        student = coursebuild.student_copy(nbformat.read(path, as_version=4))
        assert len(released.cells) == len(student.cells), path.name
        for i, (a, b) in enumerate(zip(released.cells, student.cells, strict=True)):
            where = f"{path.name} cell {i}"
            assert a.cell_type == b.cell_type, where
            assert a.source == b.source, f"{where}:\n{a.source}\n---\n{b.source}"
            if a.cell_type == "code":  # nbgrader clears every output itself
                assert a.outputs == [] and a.execution_count is None, where
            extra = set(a.metadata) - set(b.metadata)
            assert extra <= {"nbgrader", "deletable", "editable"}, (where, extra)
            ours = {k: v for k, v in b.metadata.items() if k != "nbgrader"}
            assert {k: a.metadata[k] for k in ours} == ours, where
            # nbgrader adds a checksum and the cell type to its own metadata
            theirs = b.metadata.get("nbgrader", {})
            assert {k: a.metadata.get("nbgrader", {}).get(k) for k in theirs} == (
                theirs
            ), where
        assert "widgets" not in released.metadata, path.name


def _solution_sources(path):
    nb = nbformat.read(path, as_version=4)
    return [c.source for c in nb.cells if "solution" in _tags(c)]


BROKEN = {
    "exercise_1": (
        "def my_softmax(x, axis=-1):\n"
        "    while True:  # an infinite loop\n"
        "        pass\n"
    ),
    "exercise_3": (
        "def my_attention_one_query(q, K, V, scale=None):\n"
        "    scores = K.T @ q  # (d_k, m) @ (d_k,): the wrong shape\n"
        "    return scores, scores, 1.0\n"
    ),
}


def _submission(released, solutions, kind):
    nb = nbformat.read(released, as_version=4)
    cells = []
    solution_number = 0
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            solution_number += 1
            if kind in ("solved", "broken"):
                cell.source = solutions[solution_number - 1]
            if kind == "broken" and meta["grade_id"] in BROKEN:
                cell.source = BROKEN[meta["grade_id"]]
        if kind == "broken" and meta.get("grade_id") == "check_4":
            continue  # the student deleted exercise 4's check cell
        cells.append(cell)
    nb.cells = cells
    return nb


def _diagnosis(checker, fn):
    """What the checker itself says about fn (its first line)."""
    with pytest.raises(AssertionError) as info:
        checker(fn)
    return " ".join(str(info.value).strip().splitlines()[0].split())


def _text_of(html_page):
    text = re.sub(r"<(style|script)\b.*?</\1>", "", html_page, flags=re.S)
    text = re.sub(r"<[^>]+>", "", text)
    return " ".join(html.unescape(text).split())  # the display wraps long lines


def run_nbgrader(root, *command):
    """``nbgrader <command>`` in the course folder ``root``; it must succeed.
    COURSE_LANG is left out: the course's own config chooses the kernels'
    language (the Chinese course's sets zh, tests/course/test_nbgrader_zh.py)."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("COURSE_LANG", None)
    done = subprocess.run(
        [str(BIN / "nbgrader"), *command],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_autograde_and_feedback_of_lesson_01(course):
    root, _ = course
    released = root / "release" / "lesson_01" / LESSON_01.name
    solutions = _solution_sources(LESSON_01)
    for kind in ("solved", "unsolved", "broken"):
        folder = root / "submitted" / kind / "lesson_01"
        folder.mkdir(parents=True)
        nbformat.write(_submission(released, solutions, kind), folder / LESSON_01.name)

    run_nbgrader(root, "autograde", "lesson_01")
    run_nbgrader(root, "generate_feedback", "lesson_01")

    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:

        def score(student, grade_id):
            return gb.find_grade(grade_id, LESSON_01.stem, "lesson_01", student).score

        scores = {
            kind: [score(kind, f"check_{k}") for k in (1, 2, 3, 4)]
            for kind in ("solved", "unsolved", "broken")
        }
    assert scores == {
        "solved": [1, 1, 1, 1],
        "unsolved": [0, 0, 0, 0],
        "broken": [0, 1, 0, 1],
    }, scores

    def feedback(kind):
        page = root / "feedback" / kind / "lesson_01" / f"{LESSON_01.stem}.html"
        return _text_of(page.read_text())

    # what each checker says, in the words the student sees in the feedback
    namespace = {}
    exec(BROKEN["exercise_3"], namespace)
    broken_3 = _diagnosis(
        checks.check_attention_one_query, namespace["my_attention_one_query"]
    )

    stub = next(
        c.source
        for c in nbformat.read(released, as_version=4).cells
        if c.metadata.get("nbgrader", {}).get("grade_id") == "exercise_1"
    )
    namespace = {}
    exec(stub, namespace)  # the released exercise 1: def my_softmax(...): raise ...
    unsolved_1 = _diagnosis(checks.check_softmax, namespace["my_softmax"])

    broken = feedback("broken")
    assert broken_3 in broken, f"diagnosis {broken_3!r} not in the feedback"
    assert "CellTimeoutError" in broken or "KeyboardInterrupt" in broken
    assert "was missing from the submission" in broken  # check 4 put back
    assert "Score: 2.0 / 4.0" in broken or re.search(r"2(\.0)?\s*/\s*4", broken)
    unsolved = feedback("unsolved")
    assert unsolved_1 in unsolved, f"diagnosis {unsolved_1!r} not in the feedback"
    solved = feedback("solved")
    assert "Traceback (most recent call last)" not in solved
    assert "CheckFailed" not in solved and "was missing" not in solved
    assert re.search(r"4(\.0)?\s*/\s*4", solved)
    shutil.rmtree(root / "autograded", ignore_errors=True)
