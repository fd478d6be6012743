"""Student copies: solutions stubbed, readable, and every check fails clearly.

A student copy is its lesson with each solution replaced by a stub (see
``tools/coursebuild.py``): the outputs above the exercises kept, those of the
exercises cleared, no test marker or maintainer wording in what a learner reads,
and links that work from ``notebooks/student/``. Everything above the first
exercise is the lesson's own code, which nbval already runs in a fresh kernel,
so running the whole copy again would only repeat that work. The run here
executes the exercise section (first solution cell to last check cell) after
only those earlier cells whose names the section reads, found by reading the
code (``cells_to_run``). A missed dependency cannot pass silently: it ends in a
NameError, and only the checker's message is accepted.

The runs share one kernel per test process (``kernel``), its namespace cleared
with ``%reset -f`` and its figures closed before each lesson: what a run proves
is in its names (the stubs, the checkers' messages, the cells it needs), and a
fresh kernel per lesson cost about 5 s of CPU each in Python's, torch's and the
helpers' imports, which nbval already runs fresh for each lesson (the student
copy's code above the exercises is the lesson's, asserted below). Imported
modules stay loaded from one lesson to the next.
"""

import copy
import json

import nbformat
import pytest
from jupyter_client import KernelManager
from nbclient import NotebookClient

from tests.course.cell_deps import cell_names, with_dependencies
from tools import coursebuild, slidefit

LESSONS = coursebuild.lessons()
IDS = [p.stem for p in LESSONS]
NOT_IMPLEMENTED = (  # the engine's one message for a stub (helpers.checks)
    "is not implemented yet: replace the `raise NotImplementedError(...)` line"
)
# wording for maintainers, not learners (each NBVAL reason stays in the lesson)
MAINTAINER_PHRASES = (
    "the test suite",
    "does not compare",
    "needs updating",
    "we checked",
    "nbval",
    "by the tests",
    "ignore_output",
)


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
def test_student_copy_keeps_the_lessons_outputs_above_the_exercises(path):
    """Outputs above the exercises stay (a learner sees the figures before
    running anything); the exercises' outputs and the widget state are cleared."""
    nb = _load_student(path)
    lesson = nbformat.read(path, as_version=4)
    start = coursebuild.exercises_start(lesson)
    assert len(nb.cells) == len(lesson.cells)
    for index, (cell, original) in enumerate(zip(nb.cells, lesson.cells, strict=True)):
        assert coursebuild.BEGIN not in cell.source
        if cell.cell_type == "markdown":
            assert cell.source == coursebuild.relink(original.source)
        elif "solution" not in _tags(original):
            # the rest is the lesson's code, which nbval runs, without its markers
            assert cell.source == slidefit.strip_test_markers(original.source)
        if cell.cell_type != "code":
            continue
        if index < start:
            assert cell.outputs == coursebuild.without_widgets(original.outputs)
            assert cell.execution_count == original.execution_count
        else:
            assert cell.outputs == [] and cell.execution_count is None
    assert "widgets" not in nb.metadata


def test_the_exercises_start_at_their_heading_or_the_first_solution():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_markdown_cell("Text\n\n## Exercises\n\nIntro"),
        nbformat.v4.new_code_cell(
            "def f():\n    pass", metadata={"tags": ["solution"]}
        ),
    ]
    assert coursebuild.exercises_start(nb) == 1
    del nb.cells[1]
    assert coursebuild.exercises_start(nb) == 1  # the solution cell
    nb.cells[1].metadata["tags"] = []
    assert coursebuild.exercises_start(nb) == 2  # no exercises: keep everything


def test_a_student_copy_is_the_same_bytes_when_rebuilt():
    for path in LESSONS:
        lesson = nbformat.read(path, as_version=4)
        once = nbformat.writes(coursebuild.student_copy(lesson))
        again = nbformat.writes(
            coursebuild.student_copy(nbformat.reads(nbformat.writes(lesson), 4))
        )
        assert once == again, path.name


def test_test_markers_are_dropped_from_code_and_metadata():
    cell = nbformat.v4.new_code_cell(
        "# NBVAL_IGNORE_OUTPUT\n# timings vary from run to run\n# (and machine)\n"
        "t = time.perf_counter()\n# a comment of the code stays\nprint(t)"
    )
    coursebuild.drop_test_markers(cell)
    assert (
        cell.source
        == "t = time.perf_counter()\n# a comment of the code stays\nprint(t)"
    )
    assert cell.metadata == {}
    tagged = nbformat.v4.new_code_cell("print(seconds)\n")
    tagged.metadata.update(
        tags=["nbval-ignore-output", "solution"],
        nbval_ignore_reason="Wall-clock time differs from run to run.",
    )
    coursebuild.drop_test_markers(tagged)
    assert tagged.source == "print(seconds)\n"
    assert tagged.metadata == {"tags": ["solution"]}
    only_nbval = nbformat.v4.new_code_cell("x = 1")
    only_nbval.metadata["tags"] = ["nbval-ignore-output"]
    coursebuild.drop_test_markers(only_nbval)
    assert only_nbval.metadata == {}


def test_links_are_rewritten_for_the_student_folder():
    source = (
        "See [the README](../README.md), [lesson 1](01_one_query.ipynb#top), "
        "[the glossary](glossary.md), [a site](https://example.org), "
        '[a section](#exercises) and <img src="figures/a.png">.'
    )
    assert coursebuild.relink(source) == (
        "See [the README](../../README.md), [lesson 1](01_one_query.ipynb#top), "
        "[the glossary](../glossary.md), [a site](https://example.org), "
        '[a section](#exercises) and <img src="../figures/a.png">.'
    )


def _learner_text(cell):
    """What a learner reads of a cell: its source and its outputs' text."""
    texts = [cell.source]
    for output in cell.get("outputs", []):
        text = output.get("text") or output.get("data", {}).get("text/plain", "")
        texts.append(text if isinstance(text, str) else "".join(text))
    return "\n".join(texts)


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_no_test_marker_or_maintainer_wording_in_a_student_copy(path):
    nb = _load_student(path)
    found = []
    for index, cell in enumerate(nb.cells):
        text = _learner_text(cell).lower()
        found += [(index, p) for p in MAINTAINER_PHRASES if p.lower() in text]
        # nor in the metadata, which JupyterLab's property inspector shows
        found += [(index, key) for key in cell.metadata if "nbval" in key.lower()]
        found += [(index, key) for key in cell.metadata.get("course", {})]
        found += [
            (index, tag) for tag in cell.metadata.get("tags", []) if "nbval" in tag
        ]
    assert not found, f"{path.name}: (cell, phrase) {found}"


def _relative_links(source):
    for pattern in (coursebuild.MD_LINK, coursebuild.HTML_LINK):
        for match in pattern.finditer(source):
            target = match[2].partition("#")[0]
            if coursebuild.is_relative(match[2]) and target:
                yield target


@pytest.mark.parametrize("folder", ["lessons", "student"])
def test_every_relative_link_resolves_to_a_file(folder):
    base = coursebuild.NOTEBOOKS if folder == "lessons" else coursebuild.STUDENT
    broken = []
    for path in LESSONS:
        nb = nbformat.read(base / path.name, as_version=4)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "markdown":
                broken += [
                    (path.name, index, target)
                    for target in _relative_links(cell.source)
                    if not (base / target).is_file()
                ]
    assert not broken, f"links that resolve to no file, from {base.name}/: {broken}"


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_no_check_cell_of_a_lesson_shows_a_bare_true(path):
    """A check cell is one `assert checks.check_xxx(fn)`: nothing prints True."""
    nb = nbformat.read(path, as_version=4)
    bare = []
    for index, cell in enumerate(nb.cells):
        if "check" not in _tags(cell):
            continue
        for output in cell.outputs:
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            text = text if isinstance(text, str) else "".join(text)
            if text.strip() in ("True", "np.True_"):
                bare.append(index)
    assert not bare, f"{path.name}: check cells {bare} print a bare True"


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


# run first in the shared kernel: no figure and no name of an earlier lesson
# is left (IPython's own names come back with the reset)
CLEAN_SLATE = 'import matplotlib.pyplot\nmatplotlib.pyplot.close("all")\n%reset -f'


@pytest.fixture(scope="session")
def kernel():
    """One kernel for this test process's student-copy runs, started where the
    lessons are (as a learner's kernel is), and stopped after the last one."""
    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(coursebuild.NOTEBOOKS))
    try:
        yield km
    finally:
        km.shutdown_kernel(now=True)


def _run_in(kernel, nb):
    """Execute nb's cells after CLEAN_SLATE in the shared kernel (errors kept in
    the outputs); a kernel that died in an earlier run is restarted first."""
    if not kernel.is_alive():
        kernel.restart_kernel(now=True)
    run = copy.deepcopy(nb)
    run.cells.insert(0, nbformat.v4.new_code_cell(CLEAN_SLATE))
    client = NotebookClient(run, km=kernel, timeout=300, allow_errors=True)
    try:
        client.execute()
    finally:
        if client.kc is not None:
            client.kc.stop_channels()
    slate = run.cells.pop(0)
    assert not [o for o in slate.outputs if o.output_type == "error"], slate.outputs
    return run


def test_the_shared_kernel_starts_each_run_with_no_earlier_name(kernel):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import numpy as np\nleft_over = np.ones(2)")]
    _run_in(kernel, nb)
    nb.cells = [
        nbformat.v4.new_code_cell("print(left_over)"),
        nbformat.v4.new_code_cell("print(np)"),
        nbformat.v4.new_code_cell("import os\nprint(os.getcwd())"),
    ]
    ran = _run_in(kernel, nb)
    assert [c.outputs[0].get("ename") for c in ran.cells[:2]] == ["NameError"] * 2
    assert ran.cells[2].outputs[0].text.strip() == str(coursebuild.NOTEBOOKS)


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_student_copy_runs_and_only_its_checks_fail(path, kernel):
    """The exercise section runs; every check cell fails with a clear message.

    A check fails with the checker's own short CheckFailed saying the exercise
    "is not implemented yet", never with the stub's bare NotImplementedError
    traceback, a NameError or anything else that would puzzle a learner.
    """
    nb = _load_student(path)
    chosen = cells_to_run(nb)
    section = copy.deepcopy(nb)
    section.cells = [section.cells[i] for i in chosen]
    run = _run_in(kernel, section)
    checks = 0
    for index, cell in zip(chosen, run.cells, strict=True):
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if "check" in _tags(cell):
            checks += 1
            assert errors, (
                f"{path.name} cell {index}: a check passed without a solution"
            )
            err = errors[0]
            # the checker's own short message: CheckFailed, "not implemented yet",
            # shown as its few lines (never a NotImplementedError traceback)
            assert err.ename == "CheckFailed", (
                f"{path.name} cell {index}: check failed with {err.ename}: {err.evalue}"
            )
            assert NOT_IMPLEMENTED in err.evalue, err.evalue
            assert len(err.traceback) <= 8, "\n".join(err.traceback)
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
