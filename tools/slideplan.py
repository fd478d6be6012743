"""Which parts of a lesson go on which slide, and what goes to the speaker notes.

One plan serves the offline deck (``make slides``), its printed handout and the
live slides in JupyterLab (``notebooks/present/``), so that the instructor
gives one talk whichever they open. The plan comes from the lesson's structure,
the same way for every lesson:

- each ``# `` / ``## `` heading starts a slide; every other markdown cell (or
  part of one) starts a sub-slide: one idea per slide;
- a markdown cell shows its slide form (tools/slidetext.py: heading, display
  math, a lead sentence, list items cut to their first clause, a small table,
  about 55 words at most) and its full text goes to the slide's speaker notes;
- the code after it joins its slide when it fits, folded to the lines that carry
  the idea (the full cell in the notes); a figure shows without its plotting
  code, on the slide of the words that introduce it; an explorer shows its one
  line of code, its picture and its controls; an output too tall to share a
  slide with its code gets the next sub-slide;
- setup cells (imports, print options) and exercise solutions and checks are
  left out; code before the first section with no output (the lesson's
  constants) and cells of asserts alone go to the notes; an exercise section
  becomes one slide listing the exercises, their text in the notes, and each
  "predict" exercise a slide of its own: the question to put to the room.

Where the rules choose badly, a lesson's curation file adjusts them:
``notebooks/slides/NN_topic.json``, next to the lesson, keyed by the lesson's
cell ids (stable across edits), each entry with the reason for it::

    {"cells": {"0f5f0559": {"show": "whole", "why": "..."}}}

``show``: ``form`` (the rules' slide form, the default), ``whole`` (the cell as
written), ``output`` (code: its output only), ``none`` (the notes only);
``keep``: code lines to keep, as substrings of the cell's lines; ``slide``:
``new`` to start a sub-slide at this cell; ``words``: the prose budget of the
cell's slide form (fewer than the rules' 55). ``check_curation`` reports an id the
lesson no longer has, a ``keep`` line it no longer contains or an unknown key,
and the course tests run it on every lesson.
"""

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from tools import explorer_export, slidefit, slidetext

CURATION = Path(__file__).resolve().parents[1] / "notebooks" / "slides"
SHOW = {"form", "whole", "output", "none"}
KEYS = {"show", "keep", "slide", "words", "why"}
SKIPPED_TAGS = {"solution", "check"}
SHORTENED = "course-shortened"  # tag: this part of the slide has more in the notes


@dataclass
class Piece:
    """One lesson cell, or part of one, as a slide shows it."""

    source_id: str
    kind: str  # text, code, figure, explorer or output (code hidden)
    cell: dict
    height: float
    shortened: bool = False


@dataclass
class Slide:
    kind: str  # "slide" (a new section) or "subslide"
    pieces: list = field(default_factory=list)
    notes: list = field(default_factory=list)  # markdown, the speaker's

    @property
    def height(self):
        return sum(p.height for p in self.pieces)


# -- curation files --------------------------------------------------------------


def curation_path(lesson):
    return CURATION / f"{Path(lesson).stem}.json"


def load_curation(lesson):
    """The lesson's curation file as a dict ({} when it has none)."""
    path = curation_path(lesson)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def check_curation(nb, curation):
    """What in ``curation`` no longer matches the lesson ``nb`` (a list)."""
    problems = []
    cells = {cell.get("id"): cell for cell in nb.cells}
    for key in set(curation) - {"cells", "why"}:
        problems.append(f"unknown key {key!r}")
    for cell_id, options in curation.get("cells", {}).items():
        cell = cells.get(cell_id)
        if cell is None:
            problems.append(f"cell {cell_id}: not in the lesson any more")
            continue
        for key in set(options) - KEYS:
            problems.append(f"cell {cell_id}: unknown key {key!r}")
        if not str(options.get("why", "")).strip():
            problems.append(f"cell {cell_id}: no 'why'")
        show = options.get("show", "form")
        if show not in SHOW:
            problems.append(f"cell {cell_id}: show {show!r} is not one of {SHOW}")
        if show == "output" and cell.cell_type != "code":
            problems.append(f"cell {cell_id}: show 'output' on a markdown cell")
        if not isinstance(options.get("words", 1), int):
            problems.append(f"cell {cell_id}: words must be a number")
        if options.get("slide", "new") != "new":
            problems.append(f"cell {cell_id}: slide must be 'new'")
        for line in options.get("keep", []):
            if cell.cell_type != "code" or line not in cell.source:
                problems.append(f"cell {cell_id}: keeps {line!r}, no longer in it")
    return problems


# -- the plan ----------------------------------------------------------------------


class _Deck:
    def __init__(self):
        self.slides = []

    def start(self, kind):
        self.slides.append(Slide(kind))
        return self.slides[-1]

    @property
    def current(self):
        return self.slides[-1] if self.slides else self.start("slide")

    def room(self):
        return slidefit.BUDGET - self.current.height

    def add(self, piece, new=None):
        """Put ``piece`` on the current slide, or on a new sub-slide (``new``:
        True to force one, None to decide by the room left)."""
        if new is None:
            new = bool(self.current.pieces) and piece.height > self.room()
        slide = self.start("subslide") if new else self.current
        slide.pieces.append(piece)
        return slide


def _sections(nb):
    """For every cell, whether it lies in a section that holds exercises."""
    starts, owner = [], []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            for part in slidetext.split_at_sections(cell.source):
                if _is_heading(part) or index == 0:
                    starts.append(index)
        owner.append(len(starts) - 1)
    exercise = set()
    for index, cell in enumerate(nb.cells):
        if SKIPPED_TAGS & set(cell.metadata.get("tags", [])):
            exercise.add(owner[index])
    return [owner[i] in exercise for i in range(len(nb.cells))], owner


def _is_heading(part):
    return bool(re.match(r"#{1,2} ", part.lstrip()))


def _md_cell(source, cell_id):
    cell = nbformat.v4.new_markdown_cell(source)
    cell["id"] = cell_id
    return cell


def fenced(source):
    return f"```python\n{source}\n```"


def plan(nb, curation=None):
    """The lesson ``nb`` as a list of Slide (see the module docstring)."""
    options = (curation or {}).get("cells", {})
    in_exercises, owner = _sections(nb)
    deck = _Deck()
    exercise_slide = {}  # section -> its slide
    for index, cell in enumerate(nb.cells):
        opts = options.get(cell.get("id"), {})
        if SKIPPED_TAGS & set(cell.metadata.get("tags", [])):
            continue
        if cell.cell_type == "markdown" and in_exercises[index]:
            _exercise(deck, nb, index, owner, exercise_slide, opts)
        elif cell.cell_type == "markdown":
            _markdown(deck, cell, index, opts)
        elif cell.cell_type == "code":
            _code(deck, cell, opts, in_title=owner[index] == 0)
    return _without_empty(deck.slides)


def _without_empty(slides):
    """A slide left empty (its words all in the notes, nothing after them)
    hands its notes, and its place as a section's first slide, to the next."""
    out, pending = [], None
    for slide in slides:
        if pending is not None:
            slide.notes[:0] = pending.notes
            if pending.kind == "slide":
                slide.kind = "slide"
            pending = None
        if slide.pieces:
            out.append(slide)
        else:
            pending = slide
    if pending is not None and out:
        out[-1].notes += pending.notes
    return out


def _markdown(deck, cell, index, opts):
    show = opts.get("show", "form")
    for p, part in enumerate(slidetext.split_at_sections(cell.source)):
        if show == "none":
            deck.current.notes.append(part)
            continue
        if show == "whole":
            forms = [(part, part)]
        else:
            forms = slidetext.slide_form(part, opts.get("words", slidetext.WORDS))
        for k, (form, full) in enumerate(forms):
            starts = k == 0 and (_is_heading(part) or index == 0)
            slide = deck.start("slide" if starts else "subslide")
            shortened = _norm(form) != _norm(full)
            piece_id = f"{cell.get('id')}-{p}-{k}"
            if shortened:
                slide.notes.append(full)
            if not form:  # the slide shows the code that follows
                continue
            slide.pieces.append(
                Piece(
                    cell.get("id"),
                    "text",
                    _md_cell(form, piece_id),
                    slidefit.markdown_height(form),
                    shortened,
                )
            )


def _norm(text):
    return " ".join(text.split())


def _exercise(deck, nb, index, owner, exercise_slide, opts):
    """An exercise section: one slide with the exercises' titles; each cell's
    text in the notes (or its own sub-slide when curated to show)."""
    cell = nb.cells[index]
    section = owner[index]
    for part in slidetext.split_at_sections(cell.source):
        if section not in exercise_slide or _is_heading(part):
            titles = [
                t
                for c in nb.cells
                if c.cell_type == "markdown" and owner[nb.cells.index(c)] == section
                for t in slidetext.exercise_titles(c.source)
            ]
            heading = next(
                (b for k, b in slidetext.blocks(part) if k == "heading"), "## Exercises"
            )
            form = heading.strip() + "\n\n" + "\n".join(f"- {t}" for t in titles)
            slide = deck.start("slide")
            slide.pieces.append(
                Piece(
                    cell.get("id"),
                    "text",
                    _md_cell(form, f"{cell.get('id')}-exercises"),
                    slidefit.markdown_height(form),
                    True,
                )
            )
            exercise_slide[section] = slide
        asks = re.search(r"(?im)^#+ .*\bpredict", part)  # a question to the room
        if opts.get("show", "form" if asks else "none") == "none":
            exercise_slide[section].notes.append(part)
        else:
            _markdown(deck, _md_cell(part, cell.get("id")), index, opts)


def _code(deck, cell, opts, in_title=False):
    show = opts.get("show")
    source = slidefit.strip_test_markers(cell.source)
    if slidetext.is_setup(source) and show is None:
        return
    quiet = not cell.get("outputs")
    if show is None and quiet and (in_title or slidetext.only_checks(source)):
        show = "none"  # the title's setup, or asserts only: the notes keep them
    if show == "none":
        deck.current.notes.append(fenced(source))
        return
    outputs = slidefit.cut_text_outputs(copy.deepcopy(cell.get("outputs", [])))
    out_height = sum(slidefit.output_height(o) for o in outputs)
    explorer = explorer_export.is_explorer_cell(cell)
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    new = True if opts.get("slide") == "new" else None

    def code_cell(text, outs, tags=()):
        new_cell = copy.deepcopy(cell)
        new_cell.source = text
        new_cell.outputs = outs
        if tags:
            new_cell.metadata["tags"] = [*new_cell.metadata.get("tags", []), *tags]
        return new_cell

    if (images and not explorer and show != "whole") or show == "output":
        # a figure: on the slide of the words before it, the code in the notes
        shrink = sum(
            slidefit.output_height(o) - slidefit.IMAGE_MIN_PX
            for o in images
            if slidefit.output_height(o) > slidefit.IMAGE_MIN_PX
        )
        piece = Piece(
            cell.get("id"),
            "figure" if images else "output",
            code_cell(source, outputs, [slidefit.OUTPUT_ONLY]),
            out_height - shrink,
            shortened=True,
        )
        slide = deck.add(piece, new)
        slide.notes.append(fenced(source))
        return
    if show == "whole" or explorer:
        code, folded = source, False
    else:
        code, folded = slidetext.fold_code(source, keep=opts.get("keep", ()))
    code_height = slidefit.code_height(code)
    if explorer:  # its picture (shrinking to fit) and controls, live or still
        out_height = min(
            slidefit.explorer_height(outputs), slidefit.BUDGET - code_height - 60
        )
    together = code_height + out_height
    current = deck.current
    words_only = current.pieces and all(p.kind == "text" for p in current.pieces)
    if (
        new is None
        and outputs
        and not explorer
        and together > deck.room()
        and code_height <= deck.room()
        and words_only
    ):
        together = slidefit.BUDGET + 1  # the code with its words, the output next
    if together <= slidefit.BUDGET or not outputs:
        tags = ["course-explorer-slide"] if explorer else []
        slide = deck.add(
            Piece(
                cell.get("id"),
                "explorer" if explorer else "code",
                code_cell(code, outputs, tags),
                together,
                folded,
            ),
            new,
        )
    else:  # the code here, its output on the next sub-slide
        slide = deck.add(
            Piece(cell.get("id"), "code", code_cell(code, []), code_height, folded),
            new,
        )
        deck.add(
            Piece(
                cell.get("id"),
                "output",
                code_cell(source, outputs, [slidefit.OUTPUT_ONLY]),
                out_height,
            ),
            True,
        )
    if folded:
        slide.notes.append(fenced(source))


# -- what the plan becomes -------------------------------------------------------------


def deck_notebook(nb, slides):
    """The notebook nbconvert turns into the deck: the slides' cells in order,
    each slide's notes in a ``notes`` cell (reveal.js speaker notes)."""
    deck = copy.deepcopy(nb)
    deck.metadata.pop("widgets", None)  # no widget manager: no dead controls
    cells, seen = [], set()
    for slide in slides:
        for k, piece in enumerate(slide.pieces):
            cell = copy.deepcopy(piece.cell)
            cell.metadata["slideshow"] = {"slide_type": slide.kind if k == 0 else "-"}
            if piece.shortened:  # the browser test looks for its notes
                tags = cell.metadata.get("tags", [])
                cell.metadata["tags"] = [*tags, SHORTENED]
            cells.append(cell)
        if slide.notes:
            notes = _md_cell("\n\n".join(slide.notes), "notes")
            notes.metadata["slideshow"] = {"slide_type": "notes"}
            cells.append(notes)
    for index, cell in enumerate(cells):  # every cell its own id, stable
        base = cell.get("id") or "cell"
        cell["id"] = base if base not in seen else f"{base}-{index}"
        seen.add(cell["id"])
    deck.cells = cells
    return deck


def present_notebook(nb, slides):
    """The lesson as jupyterlab-slideshow presents it, following ``slides``.

    Every cell of the lesson stays (so Run All runs them and the explorers
    work), in order: a cell the deck leaves out is ``skip``; a markdown cell the
    deck shortens is followed by its slide form(s), and becomes ``notes``
    itself; a figure shows without its code (``source_hidden``); each cell that
    starts a slide in the deck starts the same slide here. Code cells show in
    full (they run).
    """
    pieces = {}
    for slide in slides:
        for k, piece in enumerate(slide.pieces):
            starts = slide.kind if k == 0 else None
            pieces.setdefault(piece.source_id, []).append((starts, piece))
    out = []
    for cell in nb.cells:
        cell = copy.deepcopy(cell)
        mine = pieces.get(cell.get("id"), [])
        if cell.cell_type == "code":
            cell.source = slidefit.strip_test_markers(cell.source)
        if not mine:
            kind = "notes" if cell.cell_type == "markdown" else "skip"
            cell.metadata["slideshow"] = {"slide_type": kind}
            out.append(cell)
            continue
        if cell.cell_type == "markdown":
            if any(p.shortened for _, p in mine) or len(mine) > 1:
                for starts, piece in mine:
                    form = _md_cell(piece.cell.source, f"{cell.get('id')}-{len(out)}")
                    form.metadata["course"] = {"slide_of": cell.get("id")}
                    _live_type(form, starts)
                    out.append(form)
                cell.metadata["slideshow"] = {"slide_type": "notes"}
            else:
                _live_type(cell, mine[0][0])
            out.append(cell)
            continue
        _live_type(cell, mine[0][0])
        if mine[0][1].kind in ("figure", "output"):
            cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
        out.append(cell)
    present = copy.deepcopy(nb)
    present.cells = out
    return present


# jupyterlab-slideshow styles a cell while it presents through jupyterlab-fonts'
# cell metadata; zoomed like this, JupyterLab's 14 px text and 13 px code show
# at 24.5 and 22.75 px, the deck's floors
FONTS_KEY = "@deathbeds/jupyterlab-fonts"
PRESENTING = "body[data-jp-deck-mode='presenting'] &"
LIVE_ZOOM = "175%"


def _live_type(cell, starts):
    """jupyterlab-slideshow 0.3.4 continues a slide only with no slide type
    (it hides nbformat's "-"); every cell it shows is zoomed for the room."""
    cell.metadata.pop("slideshow", None)
    if starts:
        cell.metadata["slideshow"] = {"slide_type": starts}
    cell.metadata[FONTS_KEY] = {"styles": {"": {PRESENTING: {"zoom": LIVE_ZOOM}}}}
