"""Lint: ruff and codespell over the sources and lessons; notebooks stored clean."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def source_folders():
    """The folders ruff checks: the Makefile's SOURCES, named there once."""
    for line in (REPO / "Makefile").read_text().splitlines():
        if line.startswith("SOURCES :="):
            return line.split(":=")[1].split()
    raise AssertionError("the Makefile has no SOURCES := line")


def test_ruff_check_and_format():
    paths = source_folders()
    assert {"helpers", "tests", "notebooks", "tools"} <= set(paths)
    check = subprocess.run(
        [sys.executable, "-m", "ruff", "check", *paths],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    fmt = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", *paths],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def _codespell(*paths, cwd=REPO):
    return subprocess.run(
        [sys.executable, "-m", "codespell_lib", *map(str, paths)],
        cwd=cwd,
        capture_output=True,
        text=True,
    )


def test_codespell_over_prose():
    out = _codespell("README.md", "notebooks", "helpers")
    assert out.returncode == 0, out.stdout + out.stderr


def write_cell_texts(notebooks, dest):
    """Each cell's source as a file NN_topic.cellK.md (markdown) or .py (code).

    codespell reads these instead of the .ipynb files, whose base64 images and
    printed numbers would be checked too.
    """
    import nbformat

    for path in notebooks:
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
            suffix = "md" if cell.cell_type == "markdown" else "py"
            (dest / f"{path.stem}.cell{index}.{suffix}").write_text(cell.source)


def test_codespell_over_the_lessons_cells(tmp_path):
    lessons = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    write_cell_texts(lessons, tmp_path)
    # the settings (ignore-regex) come from pyproject.toml in the working directory
    out = _codespell(tmp_path)
    assert out.returncode == 0, "misspelt (file = lesson.cell index):\n" + out.stdout


def test_codespell_over_cells_finds_a_misspelling(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    misspelt = "The weigths sum to one."  # codespell:ignore weigths
    nb.cells = [nbformat.v4.new_markdown_cell(misspelt)]
    nbformat.write(nb, tmp_path / "99_x.ipynb")
    (tmp_path / "cells").mkdir()
    write_cell_texts([tmp_path / "99_x.ipynb"], tmp_path / "cells")
    out = _codespell(tmp_path / "cells")
    expected = "99_x.cell0.md:1: weigths ==> weights"  # codespell:ignore weigths
    assert out.returncode != 0 and expected in out.stdout


def test_notebooks_are_committed_executed_and_clean():
    import nbformat

    for path in sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        assert nb.metadata.kernelspec.name == "python3", path.name
        code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
        counts = [c.execution_count for c in code]
        assert None not in counts, f"{path.name}: a cell was never executed"
        assert counts == list(range(1, len(code) + 1)), (
            f"{path.name}: outputs must come from one top-to-bottom run in a "
            f"fresh kernel (make notebooks)"
        )
        for cell in code:
            assert "sys.path" not in cell.source and "os.chdir" not in cell.source
            for out in cell.outputs:
                assert out.output_type != "error", f"{path.name}: error output stored"


def test_ignored_outputs_say_why():
    import nbformat

    for path in sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            lines = cell.source.splitlines()
            if cell.cell_type == "code" and lines and "NBVAL_IGNORE_OUTPUT" in lines[0]:
                assert len(lines) > 1 and lines[1].lstrip().startswith("#"), (
                    f"{path.name}: an NBVAL_IGNORE_OUTPUT cell needs a comment "
                    f"line saying why its output varies"
                )
