"""Student copies, slide metadata and HTML pages built from the lessons."""

import importlib.util
import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "coursebuild", REPO / "tools" / "coursebuild.py"
)
coursebuild = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coursebuild)

LESSONS = coursebuild.lessons()
IDS = [p.stem for p in LESSONS]


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
        tags = cell.metadata.get("tags", [])
        has_markers = coursebuild.BEGIN in cell.source
        assert has_markers == ("solution" in tags), (
            f"{path.name}: solution markers and the 'solution' tag must go together:"
            f"\n{cell.source[:200]}"
        )
        if has_markers:
            # a stubbed solution must still define the function the check calls
            assert cell.source.lstrip().startswith("def "), (
                f"{path.name}: an exercise solution lives inside a function"
            )


def _load_student(path):
    return nbformat.read(coursebuild.STUDENT / path.name, as_version=4)


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
    for cell in nb.cells:
        assert coursebuild.BEGIN not in cell.source
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    assert "widgets" not in nb.metadata


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_student_copy_runs_and_only_its_checks_fail(path):
    """Every non-exercise cell runs; every check cell fails with a clear message.

    A check fails either with the checker's AssertionError or with the stub's
    NotImplementedError ("Exercise: replace this line with your code"), never
    with a NameError or anything else that would puzzle a learner.
    """
    nb = _load_student(path)
    NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(coursebuild.NOTEBOOKS)}},
    ).execute()
    checks = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if "check" in cell.metadata.get("tags", []):
            checks += 1
            assert errors, f"{path.name}: a check passed without a solution"
            err = errors[0]
            assert err.ename in ("AssertionError", "NotImplementedError"), (
                f"{path.name}: check failed with {err.ename}: {err.evalue}"
            )
            if err.ename == "AssertionError":
                assert "not implemented yet" in err.evalue, err.evalue
            else:
                assert "Exercise: replace this line" in err.evalue, err.evalue
        else:
            assert not errors, (
                f"{path.name}: a non-exercise cell failed in the student copy: "
                f"{errors[0].ename}: {errors[0].evalue}\n{cell.source[:300]}"
            )
    assert checks >= 1, f"{path.name}: no check cells"


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_lessons_carry_slide_metadata(path):
    nb = nbformat.read(path, as_version=4)
    for index, cell in enumerate(nb.cells):
        expected = coursebuild.slide_type(cell, index)
        assert cell.metadata.get("slideshow") == {"slide_type": expected}, (
            f"{path.name} cell {index}: run `make notebooks` to set slide metadata"
        )
    types = [c.metadata["slideshow"]["slide_type"] for c in nb.cells]
    assert types[0] == "slide" and types.count("slide") >= 3
