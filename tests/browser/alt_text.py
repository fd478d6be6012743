"""Every image in every page and deck has a text alternative that describes it
(checked by test_html_pages.py and test_slides.py on the builds they make).

Issue 23: no image's alt may be empty, nbconvert's placeholder, or a class name
("TemperatureExplorer"). The pages and decks are built as make html / make
slides build them (tests/browser/offline.py), without running the lessons:
figures carry the descriptions their lesson stored (helpers.plotting.show),
explorers their stored frame's. An executed explorer's frames are checked in
test_exported_explorers.py.
"""

from html.parser import HTMLParser

import nbformat

from tools import coursebuild

PLACEHOLDER = "No description has been provided for this image"
CLASS_NAME = r"[A-Z][A-Za-z]+(Explorer|Figure|Axes)"


class Images(HTMLParser):
    """Every <img> of a page: its alt (None when missing) and its class."""

    def __init__(self):
        super().__init__()
        self.found = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            attrs = dict(attrs)
            self.found.append((attrs.get("alt"), attrs.get("class") or ""))


def images(path):
    parser = Images()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser.found


def bad_alt(alt):
    """Why ``alt`` is no description, or None when it is one."""
    import re

    if alt is None or not alt.strip():
        return "empty"
    if PLACEHOLDER in alt:
        return "nbconvert's placeholder"
    if re.fullmatch(CLASS_NAME, alt.strip()):
        return "a class name"
    if len(alt.split()) < 8:
        return "too short to say what it shows"
    return None


def figures_stored(path):
    """How many outputs of the lesson at ``path`` hold a picture."""
    nb = nbformat.read(path, as_version=4)
    return sum(
        "image/png" in output.get("data", {})
        for cell in nb.cells
        for output in cell.get("outputs", [])
    )


def assert_every_image_described(paths, kind, rule=bad_alt):
    """No <img> of the built ``paths`` without a description (issue 23);
    ``rule(alt)`` says why an alt is none (the Chinese edition passes its own)."""
    problems, counted = [], 0
    for path in paths:
        for alt, cls in images(path):
            counted += 1
            why = rule(alt)
            if why:
                problems.append(f"{path.name}: img.{cls or '?'} alt {why}: {alt!r}")
    assert counted > 20, f"only {counted} images in the {kind} build"
    assert problems == [], "\n".join(problems[:10])


def assert_every_stored_figure_reaches_its_page(built_pages):
    """Each picture a lesson stores is an <img> of its page, described."""
    pages = {path.stem: path for path in built_pages}
    for lesson in coursebuild.lessons():
        stored = figures_stored(lesson)
        shown = [alt for alt, _ in images(pages[lesson.stem]) if not bad_alt(alt)]
        assert len(shown) >= stored, f"{lesson.name}: {len(shown)} of {stored}"
