"""Slide decks and HTML pages work from disk with the network switched off.

The pages are built into a temporary folder beside a link to build/assets (the
npm packages installed by tools/coursebuild.py, never committed). Chromium
opens them as file:// URLs; every http(s) request is aborted and recorded, and
the test asserts that none was even attempted.
"""

import importlib.util
import shutil

import nbformat
import pytest

from .conftest import ARTIFACTS, REPO

pytestmark = pytest.mark.browser

_spec = importlib.util.spec_from_file_location(
    "coursebuild", REPO / "tools" / "coursebuild.py"
)
coursebuild = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coursebuild)

DECK_LESSON = REPO / "notebooks" / "01_one_query.ipynb"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Build slides for one lesson and HTML for all, next to the assets."""
    if shutil.which("npm") is None and not coursebuild.ASSETS.exists():
        pytest.skip("npm is needed to install the slide assets (apt-get install npm)")
    coursebuild.ensure_assets()
    root = tmp_path_factory.mktemp("site")
    (root / "assets").symlink_to(coursebuild.ASSETS, target_is_directory=True)
    slides = coursebuild.export("slides", [DECK_LESSON], dest=root / "slides")
    pages = coursebuild.export("html", dest=root / "html")
    return slides[0], pages


def _offline_page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    attempts = []

    def block(route):
        attempts.append(route.request.url)
        route.abort()

    context.route("http://**/*", block)
    context.route("https://**/*", block)
    return context, context.new_page(), attempts


def test_slide_deck_works_offline(browser, site):
    deck, _ = site
    context, page, attempts = _offline_page(browser)
    try:
        page.goto(deck.as_uri())
        # reveal.js is loaded by require.js (no global): read the DOM it drives.
        page.wait_for_selector(".reveal.ready", timeout=30_000)
        slides = page.locator(".reveal .slides section:not(.stack)").count()
        assert slides >= 5, f"only {slides} slides"
        before = page.locator(".reveal .slides section.present").last.inner_text()
        page.keyboard.press("ArrowRight")
        page.wait_for_function(
            "() => location.hash !== '' && location.hash !== '#/'", timeout=10_000
        )
        after = page.locator(".reveal .slides section.present").last.inner_text()
        assert after != before, "ArrowRight did not move to another slide"
        # MathJax typesets the formulas into its own elements.
        page.wait_for_function(
            "() => document.querySelectorAll('.MathJax_CHTML, .MathJax').length > 0",
            timeout=30_000,
        )
        errors = page.locator(".MathJax_Error, .mjx-merror").count()
        assert errors == 0, "MathJax reported a TeX error"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.wait_for_timeout(1000)  # let the slide transition finish
        page.screenshot(path=str(ARTIFACTS / "slides_01_one_query.png"))
        assert attempts == [], f"the deck tried the network: {attempts[:5]}"
    finally:
        context.close()


def test_html_pages_have_figures_and_no_errors(site):
    _, pages = site
    assert [p.stem for p in pages] == [p.stem for p in coursebuild.lessons()]
    for page, lesson in zip(pages, coursebuild.lessons(), strict=True):
        html = page.read_text(encoding="utf-8")
        nb = nbformat.read(lesson, as_version=4)
        figures = sum(
            "image/png" in out.get("data", {})
            for cell in nb.cells
            if cell.cell_type == "code"
            for out in cell.outputs
        )
        assert html.count("data:image/png;base64,") >= figures, page.name
        assert "Traceback (most recent call last)" not in html, page.name
        assert "https://cdn" not in html and "unpkg.com" not in html, page.name


def test_html_page_renders_widgets_offline(browser, site):
    _, pages = site
    with_widgets = [
        p
        for p, lesson in zip(pages, coursebuild.lessons(), strict=True)
        if "widgets" in nbformat.read(lesson, as_version=4).metadata
    ]
    assert with_widgets, "no lesson stores widget state"
    context, page, attempts = _offline_page(browser)
    try:
        page.goto(with_widgets[0].as_uri())
        page.wait_for_selector(".widget-slider", timeout=30_000)
        page.wait_for_function(
            "() => document.querySelectorAll('.MathJax_CHTML, .MathJax').length > 0",
            timeout=30_000,
        )
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"html_{with_widgets[0].stem}.png"))
        assert attempts == [], f"the page tried the network: {attempts[:5]}"
    finally:
        context.close()
