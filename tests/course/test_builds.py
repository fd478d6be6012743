"""Slide metadata, the decks' slides and notes, the live slides' copies and the
exported explorers (no browser).

The student-copy tests live in tests/course/test_student_copies.py; the browser checks
of decks and pages in tests/browser/.
"""

import multiprocessing
import re
import time

import nbformat
import pytest

from tools import (
    coursebuild,
    explorer_export,
    nbconvert_course,
    pagebuild,
    slidefit,
    slideplan,
    slidetext,
)

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


def test_code_folds_to_the_lines_that_carry_the_idea():
    body = "\n".join(f"    x{i} = {i}" for i in range(12))
    source = (
        f'def f():\n    """One line."""\n{body}\n    return 1\n\n\n'
        "y = f()  # the idea\nprint(y)\nassert y == 1\nnp.testing.assert_allclose(y, 1)"
    )
    code, folded = slidetext.fold_code(source, max_lines=8)
    assert folded
    lines = code.splitlines()
    assert lines[:3] == ["def f():", '    """One line."""', "    ..."]
    assert "y = f()  # the idea" in lines and "print(y)" in lines
    assert not any("assert" in line for line in lines)
    assert lines[-1].startswith("# ... ") and "speaker notes" in lines[-1]
    assert slidetext.fold_code("x = 1\nprint(x)") == ("x = 1\nprint(x)", False)
    kept, _ = slidetext.fold_code(source, keep=["print(y)"])
    assert kept.splitlines()[0] == "print(y)"


def test_slide_form_keeps_heading_math_lead_and_short_items():
    source = (
        "## 2 · A heading\n\n"
        "First sentence of the lead. " + "More words here. " * 20 + "\n\n"
        "$$\na = b\n$$\n\n"
        "**You will learn**\n\n"
        "- how the score grows: " + "and much more " * 10 + "\n"
        "- why it matters, with a reason\n\n"
        "> **A note.** " + "quoted " * 30 + "\n\n"
        "A later paragraph that stays in the notes."
    )
    ((form, full),) = slidetext.slide_form(source)
    assert full.split() == source.split()
    assert form.startswith("## 2 · A heading\n\nFirst sentence of the lead.\n\n$$")
    assert "- how the score grows\n- why it matters" in form
    assert "**You will learn**" in form
    assert "quoted" not in form and "later paragraph" not in form
    assert slidetext.words(form) <= slidetext.WORDS
    short = "## Short\n\nA cell short enough to show whole."
    assert slidetext.slide_form(short) == [(short, short)]


def test_sections_split_at_inner_headings_only():
    source = "Tail of the last section.\n\n## 3 · Next\n\nText.\n\n### A sub-heading"
    parts = slidetext.split_at_sections(source)
    assert parts == [
        "Tail of the last section.",
        "## 3 · Next\n\nText.\n\n### A sub-heading",
    ]


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_curation_file_matches_its_lesson(path):
    """A lesson's slide curation (notebooks/slides/NN_topic.json) names cells the
    lesson still has, lines they still contain, and why; without one, the rules
    alone make the deck."""
    curation = slideplan.load_curation(path)
    nb = nbformat.read(path, as_version=4)
    assert slideplan.check_curation(nb, curation) == []


def test_every_curation_file_has_its_lesson():
    names = {p.stem for p in LESSONS}
    files = sorted(slideplan.CURATION.glob("*.json"))
    assert files, "lesson 01 at least is curated"
    for file in files:
        assert file.stem in names, f"{file.name}: no lesson {file.stem}.ipynb"


def test_curation_check_reports_drift():
    nb = nbformat.read(LESSONS[1], as_version=4)
    code = next(c for c in nb.cells if c.cell_type == "code")
    problems = slideplan.check_curation(
        nb,
        {
            "cells": {
                "gone-id": {"show": "none", "why": "x"},
                code.id: {"keep": ["no such line in it"], "why": "x", "colour": 1},
            }
        },
    )
    assert any("gone-id" in p and "not in the lesson" in p for p in problems)
    assert any("no such line" in p for p in problems)
    assert any("colour" in p for p in problems)


def _deck(path):
    nb = nbformat.read(path, as_version=4)
    return nb, coursebuild.deck_plan(nb, slideplan.load_curation(path))


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_deck_and_notes_keep_every_word_of_the_lesson(path):
    """What leaves a slide is in its notes: every word of every cell the deck
    presents is on a slide or in the speaker notes (setup cells, solutions and
    checks are left out on purpose)."""
    nb, slides = _deck(path)
    shown = " ".join(
        [p.cell.source for s in slides for p in s.pieces]
        + [n for s in slides for n in s.notes]
    ).split()
    shown_set = set(shown)
    for cell in nb.cells:
        if slideplan.SKIPPED_TAGS & set(cell.metadata.get("tags", [])):
            continue
        source = slidefit.strip_test_markers(cell.source)
        if cell.cell_type == "code" and slidetext.is_setup(source):
            continue
        missing = [w for w in source.split() if w not in shown_set]
        assert not missing, f"{path.name} cell {cell.id}: lost {missing[:5]}"
    assert slides[0].kind == "slide" and sum(s.kind == "slide" for s in slides) >= 3
    for slide in slides:
        assert slide.pieces, "an empty slide"
        if any(p.shortened for p in slide.pieces):
            assert slide.notes, f"{path.name}: a shortened slide without notes"
        words = sum(
            slidetext.words(p.cell.source) for p in slide.pieces if p.kind == "text"
        )
        assert words <= slidetext.WORDS + 5, f"{path.name}: {words} words on a slide"


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_deck_is_the_same_when_rebuilt(path):
    """The same lesson gives the same deck: cell ids stable and unique."""
    nb, slides = _deck(path)
    first = slideplan.deck_notebook(nb, slides)
    again = slideplan.deck_notebook(
        nb, slideplan.plan(nb, slideplan.load_curation(path))
    )
    ids = [c.id for c in first.cells]
    assert ids == [c.id for c in again.cells] and len(set(ids)) == len(ids)


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


def _starts(cells):
    """(source cell id, slide type) of each cell that starts a slide."""
    out = []
    for cell in cells:
        kind = cell.metadata.get("slideshow", {}).get("slide_type")
        if kind in ("slide", "subslide"):
            out.append((cell.metadata.get("course", {}).get("slide_of", cell.id), kind))
    return out


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_present_copy_follows_the_deck(path):
    """The live slides (jupyterlab-slideshow) start the same slides, from the same
    cells, as the offline deck; every cell of the lesson is still there, in
    order, so Run All runs them and the explorers work; nothing continues a
    slide with nbformat's "-", which jupyterlab-slideshow 0.3.4 hides."""
    nb, slides = _deck(path)
    present = coursebuild.present_copy(nb, slideplan.load_curation(path))
    deck = slideplan.deck_notebook(nb, slides)
    # a cell's output on the next sub-slide cannot be split off a live cell
    deck_starts = []
    previous_id = None
    for slide in slides:
        first = slide.pieces[0]
        if not (first.kind == "output" and first.source_id == previous_id):
            deck_starts.append((first.source_id, slide.kind))
        previous_id = slide.pieces[-1].source_id
    assert deck.cells
    assert _starts(present.cells) == deck_starts
    originals = [c for c in present.cells if "course" not in c.metadata]
    assert [c.id for c in originals] == [c.id for c in nb.cells]
    for cell, original in zip(originals, nb.cells, strict=True):
        assert cell.metadata.get("slideshow", {}).get("slide_type") != "-"
        assert "NBVAL" not in cell.source
        if cell.cell_type == "code":
            assert cell.outputs == original.outputs
            assert cell.source == slidefit.strip_test_markers(original.source)
        if SKIPPED & set(cell.metadata.get("tags", [])):
            assert cell.metadata["slideshow"]["slide_type"] == "skip"


SKIPPED = slideplan.SKIPPED_TAGS


@pytest.mark.parametrize("kind", ["html", "slides"])
def test_code_cells_come_out_as_the_bleach_pass_would_leave_them(kind):
    """The course templates skip nbconvert's bleach pass over highlighted code
    (a third of a build's time): Pygments escapes the source, so that pass
    changes nothing, checked on lesson 01's code and on markup-like source."""
    from nbconvert.filters import clean_html
    from nbconvert.filters.highlight import Highlight2HTML

    nb = nbformat.read(coursebuild.NOTEBOOKS / "01_one_query.ipynb", as_version=4)
    lexer = nb.metadata["language_info"]["pygments_lexer"]
    highlight = Highlight2HTML(
        pygments_lexer=lexer, parent=nbconvert_course.make_exporter(kind)
    )
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
    template = (nbconvert_course.TEMPLATES / name / "index.html.j2").read_text()
    assert "{% include 'code_input.html.j2' %}" in template
    code_input = (nbconvert_course.TEMPLATES / "code_input.html.j2").read_text()
    assert "highlight_code(metadata=cell.metadata) }}" in code_input


def _hold_lock(lock, log, name):
    with pagebuild.exclusive(lock):
        with open(log, "a") as f:
            f.write(f"{name} in\n")
        time.sleep(0.3)
        with open(log, "a") as f:
            f.write(f"{name} out\n")


def test_asset_installs_take_turns(tmp_path):
    """Two processes building at once (make test-browser's two) install the assets one
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


def test_a_cells_printing_is_cut_the_same_however_the_kernel_split_it():
    """Three stream outputs of 11 lines each are one 33-line print: cut as one."""
    text = "".join(f"line {i}\n" for i in range(33))
    parts = [text[: text.index("line 11")], text[text.index("line 11") :]]

    def stream(piece):
        return nbformat.v4.new_output("stream", name="stdout", text=piece)

    whole = slidefit.cut_text_outputs([stream(text)])
    split = slidefit.cut_text_outputs([stream(p) for p in parts])
    assert [o.text for o in split] == [o.text for o in whole]
    assert len(whole[0].text.splitlines()) == slidefit.OUTPUT_LINES + 1  # the note
    other = nbformat.v4.new_output("stream", name="stderr", text="warning\n")
    assert len(slidefit.cut_text_outputs([stream("a\n"), other, stream("b\n")])) == 3


PIXEL = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def _figure_notebook(alt=None, language=None):
    """A notebook of one code cell whose output is a PNG, with ``alt`` in its
    metadata as IPython.display.Image(alt=...) writes it."""
    metadata = {"image/png": {"alt": alt}} if alt is not None else {}
    output = nbformat.v4.new_output(
        "display_data", data={"image/png": PIXEL}, metadata=metadata
    )
    cell = nbformat.v4.new_code_cell("show()", outputs=[output])
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T"), cell])
    if language is not None:
        nb.metadata["language"] = language
    return nb


@pytest.mark.parametrize("kind", ["html", "slides"])
def test_a_figures_alt_text_reaches_pages_and_decks(kind):
    """The alt text an output's metadata carries (IPython's convention) is the
    image's alt in pages and decks, escaped, instead of nbconvert's placeholder;
    a figure without one stops the build, naming the lesson and the cell, and
    so does any other <img> without alt (nbconvert's placeholder would be
    written, which the browser tests refuse)."""
    from bs4 import BeautifulSoup

    exporter = nbconvert_course.make_exporter(kind)
    alt = 'Bar chart: k_2 highest at 1.5 & "sharpest" <b>'
    body, _ = exporter.from_notebook_node(_figure_notebook(alt))
    assert "<b>" not in body.split("<main>")[1]
    (img,) = BeautifulSoup(body, "html.parser").select(".jp-RenderedImage img")
    assert img["alt"] == alt and img["src"] == f"data:image/png;base64,{PIXEL}"
    nb = _figure_notebook()
    nb.cells[1].id = "figure-cell"
    with pytest.raises(
        ValueError, match=r"^lesson_x: .* cell figure-cell \('show\(\)'\)"
    ):
        exporter.from_notebook_node(nb, resources={"metadata": {"name": "lesson_x"}})
    nb = _figure_notebook(alt)
    nb.cells.append(nbformat.v4.new_markdown_cell('<img src="a.png" width="10">'))
    with pytest.raises(ValueError, match=r"^lesson_x: an image without alt text"):
        exporter.from_notebook_node(nb, resources={"metadata": {"name": "lesson_x"}})


@pytest.mark.parametrize("kind", ["html", "slides"])
def test_cells_are_focusable_and_images_described_without_the_soup_pass(kind):
    """The course's exporters skip nbconvert's BeautifulSoup pass
    (nbconvert_course._exporter_classes): the templates must write what it added.
    In lesson 02 built as make html / make slides build it, every input wrapper
    and output area is focusable (tabindex="0": a keyboard reaches and scrolls
    it) and every image has an alt of its own."""
    from bs4 import BeautifulSoup

    path = coursebuild.NOTEBOOKS / "02_matrix_form.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb = pagebuild.prepare(nb, kind, None, slideplan.load_curation(path))
    body, _ = nbconvert_course.make_exporter(kind).from_notebook_node(
        nb, resources={"metadata": {"name": path.stem}}
    )
    soup = BeautifulSoup(body, "html.parser")
    inputs = soup.select(".jp-Notebook div.jp-Cell-inputWrapper")
    outputs = soup.select(".jp-Notebook div.jp-OutputArea-output")
    images = soup.select("img")
    assert len(inputs) > 10 and len(outputs) > 5 and images
    for div in inputs + outputs:
        assert div.get("tabindex") == "0", str(div)[:200]
    for img in images:
        assert img.get("alt") and "No description" not in img["alt"], str(img)[:200]


@pytest.mark.parametrize("kind", ["html", "slides"])
def test_pages_and_decks_colour_code_in_an_accessible_style(kind):
    """Code is coloured by accessible-pygments' a11y-light (operators #163,
    comments #515151, numbers #7F4707: 4.5:1 or more on its #f2f2f2), and the
    rules are specific enough to win over the lab theme's ``.highlight .o``."""
    body, _ = nbconvert_course.make_exporter(kind).from_notebook_node(
        _figure_notebook("A one-pixel picture to colour the code around it")
    )
    for rule in (
        "html .highlight .o { color: #163 }",
        "html .highlight .c1 { color: #515151 }",
        "html .highlight .mi { color: #7F4707 }",
        "html .highlight { background: #f2f2f2",
    ):
        assert rule in body, rule
    assert body.index("--jp-mirror-editor-operator-color") < body.index(
        "html .highlight .o {"
    )


def test_pages_declare_the_notebooks_language():
    """<html lang> is the notebook's metadata "language" (a Chinese edition
    passes zh-CN), "en" without one; a malformed tag is refused by name."""
    exporter = nbconvert_course.make_exporter("html")
    for language, expected in [(None, "en"), ("zh-CN", "zh-CN"), ("en", "en")]:
        nb = _figure_notebook("a picture", language)
        body, _ = exporter.from_notebook_node(nb)
        body = nbconvert_course.with_language(body, nbconvert_course.page_language(nb))
        assert f'<html lang="{expected}">' in body
        assert body.count("<html lang=") == 1
    for bad in ["zh_CN", "", "english!", 7]:
        with pytest.raises(ValueError, match="metadata 'language'"):
            nbconvert_course.page_language(_figure_notebook(language=bad))
    with pytest.raises(ValueError, match="no <html lang"):
        nbconvert_course.with_language("<html><body></body></html>", "en")


HEADING = re.compile(r"^(#{1,6}) ")


def heading_levels(nb):
    """The levels of a lesson's markdown headings, in reading order (fenced code
    left out): what its page's <h1>-<h6> become."""
    levels = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        fenced = False
        for line in cell.source.splitlines():
            fenced ^= line.startswith("```")
            match = None if fenced else HEADING.match(line)
            if match:
                levels.append(len(match[1]))
    return levels


@pytest.mark.parametrize(
    "path",
    LESSONS + sorted((coursebuild.NOTEBOOKS / "zh").glob("[0-9][0-9]_*.ipynb")),
    ids=lambda p: f"{p.parent.name}/{p.stem}",
)
def test_headings_in_order(path):
    """WCAG 1.3.1: a page's outline starts at its one h1 and never skips a level
    going down (## then ####), so a screen reader's list of headings is the
    lesson's structure; English and Chinese lessons alike."""
    levels = heading_levels(nbformat.read(path, as_version=4))
    assert levels and levels[0] == 1 and levels.count(1) == 1, levels[:5]
    skips = [(a, b) for a, b in zip(levels, levels[1:], strict=False) if b > a + 1]
    assert not skips, f"{path.name}: heading levels jump {skips}"


def test_heading_check_finds_a_skipped_level():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# T\n\n## A\n\n#### B")]
    assert heading_levels(nb) == [1, 2, 4]
    nb.cells = [nbformat.v4.new_markdown_cell("# T\n\n```\n## not a heading\n```")]
    assert heading_levels(nb) == [1]
