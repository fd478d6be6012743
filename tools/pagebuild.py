"""The slide decks, their handouts and the HTML pages built from the lessons
(``python -m tools.coursebuild slides|html|assets``; see tools/coursebuild.py).

The slide and HTML pages load reveal.js, require.js, jQuery and MathJax from
``build/assets`` (only the files they load, copied from an npm install in
``build/npm``, never committed), so the pages work without a network. Decks
are laid out for a 1280x800 screen (tools/slidefit.py); explorers become frames
that move with their sliders or a still picture (tools/explorer_export.py).
"""

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import nbformat

from tools import explorer_export, slidefit, slideplan
from tools.coursebuild import BUILD, NOTEBOOKS, REPO, deck_plan, lessons
from tools.nbconvert_course import make_exporter, page_language, with_language

ASSETS = BUILD / "assets"

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
