"""Student copies: solutions stubbed, outputs cleared, and every check fails clearly.

A student copy is its lesson with each solution replaced by a stub (see
``tools/coursebuild.py``). Everything above the first exercise is the lesson's
own code, which nbval already runs in a fresh kernel, so running the whole copy
again would only repeat that work. The run here starts a fresh kernel and
executes the exercise section (first solution cell to last check cell) after
only those earlier cells whose names the section reads, found by reading the
code (``cells_to_run``). A missed dependency cannot pass silently: it ends in a
NameError, and only the checker's or the stub's message is accepted.
"""

import copy
import json

import nbformat
import pytest
from nbclient import NotebookClient

from tests.course.cell_deps import cell_names, with_dependencies
from tools import coursebuild

LESSONS = coursebuild.lessons()
IDS = [p.stem for p in LESSONS]
CHECK_ERRORS = ("AssertionError", "CheckFailed")  # a checker's failure


def _tags(cell):
    return cell.metadata.get("tags", [])


def _load_student(path):
    return nbformat.read(coursebuild.STUDENT / path.name, as_version=4)


# -- the student copy's content -------------------------------------------------


def test_strip_solution_keeps_indentation_and_the_rest():
    source = (
        "def f(x):\n"
        '    """Doc."""\n'
        "    # BEGIN SOLUTION\n"
        "    y = x + 1\n"
        "    return y\n"
        "    # END SOLUTION\n"
        "\n"
        "z = 2"
    )
    stripped = coursebuild.strip_solution(source)
    assert stripped.splitlines() == [
        "def f(x):",
        '    """Doc."""',
        f"    {coursebuild.STUB}",
        "",
        "z = 2",
    ]
    compile(stripped, "<student>", "exec")


@pytest.mark.parametrize(
    "source",
    [
        "# BEGIN SOLUTION\nx = 1",
        "x = 1\n# END SOLUTION",
        "# BEGIN SOLUTION\n# BEGIN SOLUTION\n# END SOLUTION",
    ],
)
def test_unbalanced_markers_are_refused(source):
    with pytest.raises(ValueError, match="SOLUTION"):
        coursebuild.strip_solution(source)


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_every_solution_sits_between_markers_in_a_tagged_cell(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        has_markers = coursebuild.BEGIN in cell.source
        assert has_markers == ("solution" in _tags(cell)), (
            f"{path.name}: solution markers and the 'solution' tag must go together:"
            f"\n{cell.source[:200]}"
        )
        if has_markers:
            # a stubbed solution must still define the function the check calls
            assert cell.source.lstrip().startswith("def "), (
                f"{path.name}: an exercise solution lives inside a function"
            )


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_committed_student_copies_are_up_to_date(path):
    fresh = coursebuild.student_copy(nbformat.read(path, as_version=4))
    committed = coursebuild.STUDENT / path.name
    assert committed.exists(), "run `make student` and commit notebooks/student/"
    assert json.loads(nbformat.writes(fresh)) == json.loads(committed.read_text()), (
        f"notebooks/student/{path.name} is stale: run `make student`"
    )


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_student_copy_has_no_solutions_and_no_outputs(path):
    nb = _load_student(path)
    lesson = nbformat.read(path, as_version=4)
    assert len(nb.cells) == len(lesson.cells)
    for cell, original in zip(nb.cells, lesson.cells, strict=True):
        assert coursebuild.BEGIN not in cell.source
        if "solution" not in _tags(original):
            # the rest is the lesson's code, which nbval runs
            assert cell.source == original.source
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    assert "widgets" not in nb.metadata


# -- which cells the exercise section needs --------------------------------------


def exercise_section(nb):
    """Indices of the code cells from the first solution cell to the last check."""
    code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    solutions = [i for i in code if "solution" in _tags(nb.cells[i])]
    checks = [i for i in code if "check" in _tags(nb.cells[i])]
    assert solutions and checks, "a lesson needs exercises: solution and check cells"
    return [i for i in code if solutions[0] <= i <= checks[-1]]


def cells_to_run(nb):
    """The exercise section and the earlier code cells it depends on, in order.

    In the student copy every exercise function is a stub that raises, so a
    check cell stops at its first statement that uses one, and a solution
    cell's function body is never read.
    """
    section = exercise_section(nb)
    solved = set()
    for i in section:
        if "solution" in _tags(nb.cells[i]):
            solved |= cell_names(nb.cells[i].source).binds
    chosen = {}
    for i in section:
        cell = nb.cells[i]
        if "solution" in _tags(cell):
            chosen[i] = cell_names(cell.source, bodies=False)
        elif "check" in _tags(cell):
            chosen[i] = cell_names(cell.source, stop_at=solved)
        else:
            chosen[i] = cell_names(cell.source)
    return with_dependencies(nb, chosen)


def test_cells_to_run_follow_the_names_the_exercises_read():
    cells = [
        ("import numpy as np", []),
        ("x = np.ones(3)\nunused = 1", []),
        ("np.set_printoptions(precision=3)", []),  # a module: not a dependency
        ("x[0] = 5", []),  # changes x in place
        ("y = 2 * x", []),
        ("def helper(a):\n    return a + y", []),
        ("slow = sum(range(10**6))", []),
        ("for i in range(2):\n    unused += i", []),
        (
            "def my_f(a):\n    raise NotImplementedError\n    return unused",
            ["solution"],
        ),
        # the stub raises in the first statement: slow is never read
        ("for k in range(3):\n    assert helper(k) == my_f(k)\nprint(slow)", ["check"]),
        ("after = 1", []),
    ]
    nb = nbformat.v4.new_notebook()
    for source, tags in cells:
        nb.cells.append(nbformat.v4.new_code_cell(source, metadata={"tags": tags}))
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("# not code"))
    assert cells_to_run(nb) == [0, 2, 4, 5, 6, 9, 10]
    names = cell_names("for k in range(3):\n    assert helper(k) == my_f(k)\nx[0] = k")
    assert names == ({"helper", "my_f", "x"}, {"k"}, {"x"}, set())
    # a stub used inside a function the check defines may run later or never:
    # the reads go on (more cells than needed, never fewer)
    source = "def run():\n    return my_f(1)\n\ncheck(run)\nafter(1)"
    assert cell_names(source, stop_at={"my_f"}).reads == {"my_f", "check", "after"}


# -- the run ---------------------------------------------------------------------


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_student_copy_runs_and_only_its_checks_fail(path):
    """The exercise section runs; every check cell fails with a clear message.

    A check fails either with the checker's AssertionError or with the stub's
    NotImplementedError ("Exercise: replace this line with your code"), never
    with a NameError or anything else that would puzzle a learner.
    """
    nb = _load_student(path)
    chosen = cells_to_run(nb)
    run = copy.deepcopy(nb)
    run.cells = [run.cells[i] for i in chosen]
    NotebookClient(
        run,
        timeout=300,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(coursebuild.NOTEBOOKS)}},
    ).execute()
    checks = 0
    for index, cell in zip(chosen, run.cells, strict=True):
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if "check" in _tags(cell):
            checks += 1
            assert errors, (
                f"{path.name} cell {index}: a check passed without a solution"
            )
            err = errors[0]
            # CheckFailed: the checkers' AssertionError with a short traceback
            assert err.ename in CHECK_ERRORS + ("NotImplementedError",), (
                f"{path.name} cell {index}: check failed with {err.ename}: {err.evalue}"
            )
            if err.ename in CHECK_ERRORS:
                assert "not implemented yet" in err.evalue, err.evalue
            else:
                assert "Exercise: replace this line" in err.evalue, err.evalue
        else:
            assert not errors, (
                f"{path.name} cell {index} failed in the student copy: "
                f"{errors[0].ename}: {errors[0].evalue}\n{cell.source[:300]}"
            )
    assert checks >= 1, f"{path.name}: no check cells"


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_no_cell_after_the_exercises_needs_a_solution(path):
    # cells after the last check are not run on the student copy: they must not
    # call a learner's function (nbval runs them with the solutions in place)
    nb = _load_student(path)
    last = exercise_section(nb)[-1]
    solved = set()
    for cell in nb.cells:
        if "solution" in _tags(cell):
            solved |= cell_names(cell.source).binds
    for index, cell in enumerate(nb.cells[last + 1 :], last + 1):
        if cell.cell_type == "code":
            reads = cell_names(cell.source).reads
            assert not reads & solved, (
                f"{path.name} cell {index} uses {sorted(reads & solved)}, defined by "
                "an exercise: move it above the last check cell"
            )
