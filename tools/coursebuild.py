"""Build what instructors and readers use from the lessons.

    python tools/coursebuild.py student   # notebooks/student/: solutions stubbed
    python tools/coursebuild.py slides    # build/slides/: reveal.js decks, offline
    python tools/coursebuild.py html      # build/html/: executed pages, offline

(``make student``, ``make slides`` and ``make html`` call these.) The slide and
HTML pages load reveal.js, require.js, jQuery, MathJax and the widget renderer
from ``build/assets``, installed from the npm registry at build time and never
committed, so the pages work without a network.
"""

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

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
    "@jupyter-widgets/html-manager": "1.0.15",
}

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


def student_copy(nb):
    """The learner's copy: solutions stubbed, outputs and widget state cleared."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if BEGIN in cell.source:
            cell.source = strip_solution(cell.source)
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


# -- offline assets and exports --------------------------------------------------


def ensure_assets(assets=ASSETS):
    """Install the pinned npm packages into ``assets`` unless already there."""
    stamp = assets / "installed.json"
    if stamp.exists() and json.loads(stamp.read_text()) == NPM_ASSETS:
        return assets / "node_modules"
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(
            "npm is needed to install the slide assets (apt-get install npm)"
        )
    assets.mkdir(parents=True, exist_ok=True)
    specs = [f"{name}@{version}" for name, version in NPM_ASSETS.items()]
    print(f"installing {', '.join(specs)} into {assets} ...", flush=True)
    subprocess.run(
        [
            npm,
            "install",
            "--no-save",
            "--no-audit",
            "--no-fund",
            "--prefix",
            str(assets),
            *specs,
        ],
        check=True,
    )
    stamp.write_text(json.dumps(NPM_ASSETS))
    return assets / "node_modules"


def _asset_urls(prefix):
    """URL settings for nbconvert, relative to a page in build/<kind>/."""
    modules = f"{prefix}/node_modules"
    return {
        "require_js_url": f"{modules}/requirejs/require.js",
        "jquery_url": f"{modules}/jquery/dist/jquery.min.js",
        "mathjax_url": f"{modules}/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe",
        "widget_renderer_url": (
            f"{modules}/@jupyter-widgets/html-manager/dist/embed-amd.js"
        ),
    }


def _exporter(kind):
    from nbconvert import HTMLExporter, SlidesExporter

    if kind == "slides":
        exporter = SlidesExporter(
            extra_template_basedirs=[str(TEMPLATES)], template_name="course_reveal"
        )
        exporter.reveal_url_prefix = "../assets/node_modules/reveal.js"
        exporter.reveal_scroll = True
        exporter.reveal_theme = "white"
    else:
        exporter = HTMLExporter(
            extra_template_basedirs=[str(TEMPLATES)], template_name="course_lab"
        )
    for name, url in _asset_urls("../assets").items():
        setattr(exporter, name, url)
    return exporter


def export(kind, paths=None, dest=None, execute=False):
    """Write ``kind`` ("slides" or "html") pages for ``paths`` into ``dest``."""
    ensure_assets()
    dest = dest or BUILD / kind
    dest.mkdir(parents=True, exist_ok=True)
    exporter = _exporter(kind)
    written = []
    for path in paths or lessons():
        nb = nbformat.read(path, as_version=4)
        if execute:
            from nbclient import NotebookClient

            print(f"executing {path.name} ...", flush=True)
            NotebookClient(
                nb,
                timeout=600,
                kernel_name="python3",
                resources={"metadata": {"path": str(path.parent)}},
            ).execute()
        if kind == "slides":
            add_slide_metadata(nb)
        body, _ = exporter.from_notebook_node(
            nb, resources={"metadata": {"name": path.stem}}
        )
        suffix = ".slides.html" if kind == "slides" else ".html"
        out = dest / f"{path.stem}{suffix}"
        out.write_text(body, encoding="utf-8")
        written.append(out)
        print(f"{kind}: {out.relative_to(REPO) if out.is_relative_to(REPO) else out}")
    return written


def main(argv):
    command = argv[0] if argv else ""
    if command == "student":
        write_student_copies()
    elif command == "slides":
        export("slides")
    elif command == "html":
        export("html", execute=True)
    elif command == "assets":
        ensure_assets()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
