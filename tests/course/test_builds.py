"""Slide metadata, the deck layout and the exported explorers (no browser).

The student-copy tests live in tests/course/test_student_copies.py; the browser checks
of decks and pages in tests/browser/.
"""

import multiprocessing
import time

import nbformat
import pytest

from tools import coursebuild, explorer_export, slidefit

LESSONS = coursebuild.lessons()
IDS = [p.stem for p in LESSONS]


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


def test_test_markers_and_their_reason_are_stripped():
    source = (
        "# NBVAL_IGNORE_OUTPUT\n"
        "# timings vary from run to run\n"
        "# and from machine to machine\n"
        "x = 1  # a comment that stays\n"
        "# so does this one"
    )
    assert slidefit.strip_test_markers(source) == (
        "x = 1  # a comment that stays\n# so does this one"
    )
    assert slidefit.strip_test_markers("y = 2") == "y = 2"


def test_long_code_is_split_at_top_level_blank_lines():
    body = "\n".join(f"    x{i} = {i}" for i in range(12))
    source = f"def f():\n{body}\n\n    return 1\n\n\ndef g():\n{body}\n    return 2"
    parts = slidefit.split_code(source, max_lines=14)
    assert len(parts) == 2
    assert parts[0].startswith("def f():") and parts[1].startswith("def g():")
    assert "\n\n".join(parts).split() == source.split()  # nothing lost


def test_long_markdown_is_split_between_paragraphs_only():
    para = "word " * 200
    source = f"{para}\n\n<details>\n\n{para}\n\n{para}\n\n</details>\n\n{para}"
    parts = slidefit.split_markdown(source)
    assert len(parts) >= 2
    for part in parts:
        assert part.count("<details>") == part.count("</details>")


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_layout_keeps_every_line_and_drops_skipped_cells(path):
    nb = coursebuild.add_slide_metadata(nbformat.read(path, as_version=4))
    laid = slidefit.layout(nb)
    shown = " ".join(c.source for c in laid.cells)
    for cell in nb.cells:
        skipped = cell.metadata["slideshow"]["slide_type"] == "skip"
        source = slidefit.strip_test_markers(cell.source)
        for word in source.split()[:40]:
            if not skipped:
                assert word in shown, f"{path.name}: lost {word!r}"
    assert all(c.metadata["slideshow"]["slide_type"] != "skip" for c in laid.cells)
    assert len({c.id for c in laid.cells}) == len(laid.cells)
    # the same lesson lays out the same way: a rebuilt deck differs only where
    # the lesson changed
    assert [c.id for c in slidefit.layout(nb).cells] == [c.id for c in laid.cells]


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_exported_explorers_are_stills_without_frames(path):
    nb = explorer_export.replace_explorers(nbformat.read(path, as_version=4))
    assert "widgets" not in nb.metadata
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            assert explorer_export.WIDGET_VIEW not in output.get("data", {})
        if explorer_export.is_explorer_cell(cell):
            html = cell.outputs[-1]["data"]["text/html"]
            assert "need a running kernel" in html


def test_frames_html_swaps_frames_by_slider_index():
    explorer = {
        "class": "TemperatureExplorer",
        "controls": [{"name": "temperature", "labels": ["0.5", "1.0"], "start": 1}],
        "frames": {"0": ["AAAA", "t 0.5"], "1": ["BBBB", "t 1.0"]},
    }
    html = explorer_export.frames_html(explorer)
    assert 'value="1"' in html and 'max="1"' in html
    assert "data:image/png;base64,BBBB" in html and "t 1.0" in html
    assert "2 settings rendered" in html


def test_present_copy_keeps_slides_and_drops_continuation_marks():
    path = LESSONS[1]
    nb = nbformat.read(path, as_version=4)
    present = coursebuild.present_copy(nb)
    assert len(present.cells) == len(nb.cells)
    for cell, original in zip(present.cells, nb.cells, strict=True):
        kind = original.metadata["slideshow"]["slide_type"]
        if kind == "-":
            assert "slideshow" not in cell.metadata
        else:
            assert cell.metadata["slideshow"]["slide_type"] == kind
        assert "NBVAL" not in cell.source
        if cell.cell_type == "code":
            assert cell.outputs == original.outputs


@pytest.mark.parametrize("kind", ["html", "slides"])
def test_code_cells_come_out_as_the_bleach_pass_would_leave_them(kind):
    """The course templates skip nbconvert's bleach pass over highlighted code
    (a third of a build's time): Pygments escapes the source, so that pass
    changes nothing, checked on lesson 01's code and on markup-like source."""
    from nbconvert.filters import clean_html
    from nbconvert.filters.highlight import Highlight2HTML

    nb = nbformat.read(coursebuild.NOTEBOOKS / "01_one_query.ipynb", as_version=4)
    lexer = nb.metadata["language_info"]["pygments_lexer"]
    highlight = Highlight2HTML(pygments_lexer=lexer, parent=coursebuild._exporter(kind))
    sources = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    sources.append(
        "s = \"<script>alert(1)</script> &amp; <b onclick='x'>\"  # a < b > c, é √ ∑\n"
        "print(f\"{s!r:>10}\", '\\\\n', end='')"
    )
    for source in sources:
        html = highlight(source, metadata={})
        assert "<span" in html
        assert clean_html(html) == html, source
    name = "course_lab" if kind == "html" else "course_reveal"
    template = (coursebuild.TEMPLATES / name / "index.html.j2").read_text()
    assert "{% include 'code_input.html.j2' %}" in template
    code_input = (coursebuild.TEMPLATES / "code_input.html.j2").read_text()
    assert "highlight_code(metadata=cell.metadata) }}" in code_input


def _hold_lock(lock, log, name):
    with coursebuild.exclusive(lock):
        with open(log, "a") as f:
            f.write(f"{name} in\n")
        time.sleep(0.3)
        with open(log, "a") as f:
            f.write(f"{name} out\n")


def test_asset_installs_take_turns(tmp_path):
    """Two processes building at once (make test's two) install the assets one
    after the other: each is in and out before the other comes in."""
    lock, log = tmp_path / ".assets.lock", tmp_path / "log"
    workers = [
        multiprocessing.Process(target=_hold_lock, args=(lock, log, name))
        for name in "ab"
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(10)
    lines = log.read_text().split()
    assert len(lines) == 8, lines
    pairs = [lines[i : i + 4] for i in (0, 4)]
    assert all(p[0] == p[2] and p[1:4:2] == ["in", "out"] for p in pairs), lines
