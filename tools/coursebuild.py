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

The slide and
HTML pages load reveal.js, require.js, jQuery and MathJax from ``build/assets``
(only the files they load, copied from an npm install in ``build/npm``, never
committed), so the pages work without a network. Decks are laid out for a
1280x800 screen (tools/slidefit.py); explorers become frames that move with
their sliders or a still picture (tools/explorer_export.py).
"""

import contextlib
import copy
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from tools import explorer_export, same_kernels, slidefit, slideplan

same_kernels.apply()  # the kernels started here compute the stored outputs' digits

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
STUDENT = NOTEBOOKS / "student"
BUILD = REPO / "build"
ASSETS = BUILD / "assets"
TEMPLATES = Path(__file__).resolve().parent / "templates"

# npm packages the pages load, pinned; installed into build/assets/node_modules.
NPM_ASSETS = {
    "reveal.js": "4.6.0",
    "requirejs": "2.3.7",
    "jquery": "3.7.1",
    "mathjax": "2.7.9",
}
NPM_CACHE = BUILD / "npm"
# the files the pages load (globs under node_modules); the browser test fails on
# any file:// request that finds nothing, so a missing one shows up there.
ASSET_FILES = [
    "requirejs/require.js",
    "jquery/dist/jquery.min.js",
    "reveal.js/dist/reveal.js",
    "reveal.js/dist/reveal.css",
    "reveal.js/dist/theme/white.css",
    "reveal.js/dist/theme/fonts/source-sans-pro/*",
    "reveal.js/plugin/notes/notes.js",
    "mathjax/MathJax.js",
    "mathjax/config/TeX-AMS_CHTML-full.js",
    "mathjax/config/Safe.js",
    "mathjax/extensions/**/*",
    "mathjax/jax/input/TeX/**/*",
    "mathjax/jax/element/**/*",
    "mathjax/jax/output/CommonHTML/**/*",
    "mathjax/fonts/HTML-CSS/TeX/woff/*",
    "mathjax/localization/en/*",
]

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


# -- offline assets and exports --------------------------------------------------


@contextlib.contextmanager
def exclusive(lock_path):
    """Let one process at a time through (an flock on ``lock_path``).

    Without fcntl (Windows) it does not lock: there, run one build at a time.
    """
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as lock:
        try:
            import fcntl
        except ImportError:
            yield
            return
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        yield


def ensure_assets(assets=ASSETS):
    """Install the pinned npm packages and copy only what the pages load.

    npm installs into ``build/npm`` (a cache, about 200 MB, never shipped);
    ``build/assets`` receives the few files the pages request (ASSET_FILES),
    so copying build/html, build/slides and build/assets is enough. One process
    at a time: make test-browser's two processes build decks and pages side by side,
    and on a fresh clone both would install and copy into the same folders.
    """
    with exclusive(assets.parent / ".assets.lock"):
        return _install_assets(assets)


def _install_assets(assets):
    stamp = assets / "installed.json"
    want = {"npm": NPM_ASSETS, "files": ASSET_FILES}
    if stamp.exists() and json.loads(stamp.read_text()) == want:
        return assets / "node_modules"
    cache = NPM_CACHE
    cache_stamp = cache / "installed.json"
    if not (cache_stamp.exists() and json.loads(cache_stamp.read_text()) == NPM_ASSETS):
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError(
                "npm is needed to install the slide assets (apt-get install npm)"
            )
        cache.mkdir(parents=True, exist_ok=True)
        specs = [f"{name}@{version}" for name, version in NPM_ASSETS.items()]
        print(f"installing {', '.join(specs)} into {cache} ...", flush=True)
        subprocess.run(
            [
                npm,
                "install",
                "--no-save",
                "--no-audit",
                "--no-fund",
                "--prefix",
                str(cache),
                *specs,
            ],
            check=True,
        )
        cache_stamp.write_text(json.dumps(NPM_ASSETS))
    if assets.exists():
        shutil.rmtree(assets)
    for pattern in ASSET_FILES:
        for src in (cache / "node_modules").glob(pattern):
            if src.is_file():
                dst = assets / "node_modules" / src.relative_to(cache / "node_modules")
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
    stamp.write_text(json.dumps(want))
    return assets / "node_modules"


def _asset_urls(prefix):
    """URL settings for nbconvert, relative to a page in build/<kind>/."""
    modules = f"{prefix}/node_modules"
    return {
        "require_js_url": f"{modules}/requirejs/require.js",
        "jquery_url": f"{modules}/jquery/dist/jquery.min.js",
        "mathjax_url": f"{modules}/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe",
    }


CODE_STYLE = "a11y-light"  # accessible-pygments: colours checked to 4.5:1
LANGUAGE = re.compile(r"[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")


def code_style_css(style=CODE_STYLE):
    """The Pygments CSS of ``style`` for the pages' code (their ``.highlight``
    blocks), specific enough to win over the lab theme's colours."""
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(style=style).get_style_defs("html .highlight")


def page_language(nb):
    """The language a page or deck declares (``<html lang>``): the notebook's
    ``metadata["language"]`` (a BCP 47 tag, e.g. "zh-CN"), else "en"."""
    lang = nb.metadata.get("language", "en")
    if not isinstance(lang, str) or not LANGUAGE.match(lang):
        raise ValueError(
            f"notebook metadata 'language' is {lang!r}: give a BCP 47 tag "
            'such as "en" or "zh-CN"'
        )
    return lang


def with_language(body, lang):
    """``body`` (an exported page) declaring ``lang`` on its <html> element."""
    body, found = re.subn(r'<html lang="[^"]*"', f'<html lang="{lang}"', body, count=1)
    if not found:
        raise ValueError("the exported page has no <html lang=...> to set")
    return body


FOCUSABLE = re.compile(
    r'(<div\b[^>]*?\bclass="(?:[^"]*\s)?'
    r'(?:jp-Cell-inputWrapper|jp-OutputArea-output)(?:\s[^"]*)?")'
)
IMG_WITHOUT_ALT = re.compile(r"<img\b(?![^>]*\salt=)[^>]*>")


def focusable(html):
    """``html`` (a cell) with every input wrapper and output area focusable
    (tabindex="0"), as nbconvert's HTMLExporter makes them: a keyboard reaches
    and scrolls each. The course templates apply it to every cell (any_cell)."""
    import markupsafe

    return markupsafe.Markup(FOCUSABLE.sub(r'\1 tabindex="0"', html))


def no_alt_text(cell, resources):
    """Stop the build at a figure without alt text (image_output.html.j2 calls
    it): nbconvert would write its placeholder, which the browser tests refuse."""
    first = cell.source.strip().splitlines()[:1] or [""]
    raise ValueError(
        f"{resources['metadata'].get('name', 'a notebook')}: the image output of "
        f"cell {cell.get('id', '?')} ({first[0][:60]!r}) has no alt text in its "
        "metadata (helpers.plotting.show stores one)"
    )


@functools.cache
def _exporter_classes():
    """nbconvert's HTMLExporter and SlidesExporter without their BeautifulSoup
    pass.

    HTMLExporter.from_notebook_node (nbconvert 7.17.2, exporters/html.py)
    parses the whole page with html.parser and writes it out again only to add
    tabindex="0" to every input wrapper and output area and a placeholder alt
    to every <img> without one: two thirds of a build's time. The course
    templates write the tabindex themselves (``focusable``) and a figure
    without alt stops the build (``no_alt_text``), so these classes do what
    that method does minus the soup, and refuse any other <img> without alt
    (a picture in a Markdown cell's HTML). tests/course/test_builds.py checks
    that a built page and deck have every tabindex and alt.
    """
    from nbconvert import HTMLExporter, SlidesExporter
    from nbconvert.exporters.templateexporter import TemplateExporter
    from nbconvert.filters.highlight import Highlight2HTML
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

    class WithoutSoup:
        def from_notebook_node(self, nb, resources=None, **kw):
            langinfo = nb.metadata.get("language_info", {})
            lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
            highlight_code = self.filters.get(
                "highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self)
            )
            resources = self._init_resources(resources)
            filter_data_type = WidgetsDataTypeFilter(
                notebook_metadata=self._nb_metadata, parent=self, resources=resources
            )
            self.register_filter("highlight_code", highlight_code)
            self.register_filter("filter_data_type", filter_data_type)
            html, resources = TemplateExporter.from_notebook_node(
                self, nb, resources, **kw
            )
            missing = IMG_WITHOUT_ALT.search(html)
            if missing:
                name = resources["metadata"].get("name", "a notebook")
                raise ValueError(
                    f"{name}: an image without alt text: {missing[0][:120]}"
                )
            return html, resources

    class CourseHTMLExporter(WithoutSoup, HTMLExporter):
        pass

    class CourseSlidesExporter(WithoutSoup, SlidesExporter):
        pass

    return CourseHTMLExporter, CourseSlidesExporter


def make_exporter(kind):
    """The nbconvert exporter of ``kind`` ("slides" or "html"), set up as the
    builds use it: the course's templates, offline asset URLs, 1280x800 decks,
    code coloured in CODE_STYLE."""
    from nbconvert.preprocessors import TagRemovePreprocessor

    HTMLExporter, SlidesExporter = _exporter_classes()
    if kind == "slides":
        exporter = SlidesExporter(
            extra_template_basedirs=[str(TEMPLATES)],
            extra_template_paths=[str(TEMPLATES)],  # code_input.html.j2
            template_name="course_reveal",
        )
        exporter.reveal_url_prefix = "../assets/node_modules/reveal.js"
        exporter.reveal_scroll = False  # a slide never scrolls: slidefit lays it out
        exporter.exclude_anchor_links = True  # no "¶" after headings in the notes
        exporter.reveal_theme = "white"
        exporter.reveal_width = str(slidefit.WIDTH)
        exporter.reveal_height = str(slidefit.HEIGHT)
        exporter.register_preprocessor(
            TagRemovePreprocessor(
                remove_input_tags={slidefit.OUTPUT_ONLY}, enabled=True
            ),
            enabled=True,
        )
    else:
        exporter = HTMLExporter(
            extra_template_basedirs=[str(TEMPLATES)],
            extra_template_paths=[str(TEMPLATES)],  # code_input.html.j2
            template_name="course_lab",
        )
    for name, url in _asset_urls("../assets").items():
        setattr(exporter, name, url)
    exporter.register_filter("code_style_css", code_style_css)
    exporter.register_filter("focusable", focusable)
    exporter.register_filter("no_alt_text", no_alt_text)
    return exporter


def execute_with_frames(nb, path):
    """Execute ``nb`` in a fresh kernel; return every explorer's frames.

    The kernel talks to this process over IPC sockets in a private temporary
    folder (no TCP port, so no "running over TCP without encryption" warning).
    """
    import tempfile

    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    with tempfile.TemporaryDirectory(prefix="coursebuild-") as tmp:
        frames_path = Path(tmp) / "frames.json"
        km = KernelManager(
            kernel_name="python3", transport="ipc", ip=str(Path(tmp) / "kernel")
        )
        has_explorer = any(explorer_export.is_explorer_cell(c) for c in nb.cells)
        if has_explorer:
            nb.cells.append(
                nbformat.v4.new_code_cell(explorer_export.frame_code(frames_path))
            )
        try:
            NotebookClient(
                nb,
                km=km,
                timeout=600,
                kernel_name="python3",
                resources={"metadata": {"path": str(path.parent)}},
            ).execute()
        finally:
            if has_explorer:
                nb.cells.pop()
            if km.has_kernel:
                km.shutdown_kernel(now=True)
        if has_explorer and frames_path.exists():
            return json.loads(frames_path.read_text())
    return {}


def prepare(nb, kind, frames=None, curation=None):
    """What a reader sees: no test markers, honest explorers; for a deck, the
    slides tools/slideplan.py designs, with their speaker notes."""
    if kind == "slides":
        return slideplan.deck_notebook(nb, deck_plan(nb, curation, frames))
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = slidefit.strip_test_markers(cell.source)
    explorer_export.replace_explorers(nb, frames)
    return nb


def export(kind, paths=None, dest=None, execute=False, frames=None):
    """Write ``kind`` ("slides" or "html") pages for ``paths`` into ``dest``.

    ``execute``: True to run every lesson first (explorers then get frames that
    move with their sliders), or a collection of the paths to run. A deck takes
    the frames a run of the same lesson left in build/frames (``make html``'s or
    an earlier ``make slides``'s) instead of running it again. ``frames``: the
    frames to use, by path (tests).
    """
    ensure_assets()
    dest = dest or BUILD / kind
    dest.mkdir(parents=True, exist_ok=True)
    exporter = make_exporter(kind)
    written = []
    for path in paths or lessons():
        nb = nbformat.read(path, as_version=4)
        found = (frames or {}).get(path)
        if found is None and (execute is True or (execute and path in execute)):
            found = cached_frames(path) if kind == "slides" else None
            if found is None:
                print(f"executing {path.name} ...", flush=True)
                found = execute_with_frames(nb, path)
                store_frames(path, found)
        nb = prepare(nb, kind, found, slideplan.load_curation(path))
        body, _ = exporter.from_notebook_node(
            nb, resources={"metadata": {"name": path.stem}}
        )
        body = with_language(body, page_language(nb))
        suffix = ".slides.html" if kind == "slides" else ".html"
        out = dest / f"{path.stem}{suffix}"
        out.write_text(body, encoding="utf-8")
        written.append(out)
        print(f"{kind}: {out.relative_to(REPO) if out.is_relative_to(REPO) else out}")
    return written


FRAMES = BUILD / "frames"


def _frames_name(path):
    # notebooks/04_x.ipynb -> 04_x, notebooks/zh/04_x.ipynb -> zh-04_x: each
    # edition keeps its own frames (storing one must not delete the other's)
    folder = path.resolve().parent
    return path.stem if folder == NOTEBOOKS else f"{folder.name}-{path.stem}"


def _frames_file(path):
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return FRAMES / f"{_frames_name(path)}.{digest}.json"


def cached_frames(path):
    """The explorers' frames of the lesson at ``path`` as it is now, if a run
    of it stored them (build/frames, keyed by the lesson file's hash)."""
    file = _frames_file(path)
    return json.loads(file.read_text()) if file.exists() else None


def store_frames(path, frames):
    """Keep ``frames`` for the lesson at ``path`` (written whole, then renamed:
    make test's two processes may store the same lesson)."""
    file = _frames_file(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    for stale in file.parent.glob(f"{_frames_name(path)}.*.json"):
        stale.unlink(missing_ok=True)
    partial = file.with_suffix(f".{os.getpid()}.part")
    partial.write_text(json.dumps(frames))
    partial.replace(file)


def lessons_with_explorers():
    return {
        path
        for path in lessons()
        if any(
            explorer_export.is_explorer_cell(cell)
            for cell in nbformat.read(path, as_version=4).cells
        )
    }


# -- handouts ----------------------------------------------------------------------


def handout_path(deck):
    """build/slides/NN_topic.slides.html -> build/slides/NN_topic.handout.pdf"""
    return deck.with_name(deck.name.replace(".slides.html", ".handout.pdf"))


def write_handouts(decks, browser=None):
    """Print each deck with its speaker notes to a PDF beside it (the handout).

    Chromium (tools/chromium.py, driven by Playwright) opens the deck with
    ``?print-pdf``: reveal.js lays out one page per slide and the deck template
    puts the slide's notes under it (A4's proportions, the notes' type shrunk
    to fit their half of the page). Nothing is fetched from the network.
    """
    if browser is None:
        from playwright.sync_api import sync_playwright

        from tools.chromium import CHROMIUM, CHROMIUM_ARGS

        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
            )
            try:
                return write_handouts(decks, browser)
            finally:
                browser.close()
    written = []
    for deck in decks:
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        context.route("http://**/*", lambda route: route.abort())
        context.route("https://**/*", lambda route: route.abort())
        try:
            page = context.new_page()
            page.goto(deck.as_uri() + "?print-pdf")
            page.wait_for_function("() => window.courseHandoutReady", timeout=120_000)
            out = handout_path(deck)
            page.pdf(path=str(out), prefer_css_page_size=True, print_background=True)
        finally:
            context.close()
        written.append(out)
        print(f"handout: {out.relative_to(REPO) if out.is_relative_to(REPO) else out}")
    return written


def main(argv):
    command = argv[0] if argv else ""
    if command == "student":
        write_student_copies()
    elif command == "slides":
        write_handouts(export("slides", execute=lessons_with_explorers()))
    elif command == "html":
        export("html", execute=True)
    elif command == "present":
        write_present_copies()
    elif command == "assets":
        ensure_assets()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
