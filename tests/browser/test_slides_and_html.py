"""Slide decks and HTML pages, built once, checked from disk with no network.

One slides build (every lesson) and one HTML build (every lesson; lesson 01 is
executed so that its explorer gets frames, the others use their stored outputs
and show the explorer as a still) are shared by the tests of this file. Chromium
opens them as file:// URLs; every http(s) request is aborted and recorded, and
every file:// request that finds nothing is recorded too: a page may not need the
network, nor an asset that build/assets does not ship.
"""

import shutil

import pytest

from tools import coursebuild

from .conftest import ARTIFACTS

pytestmark = pytest.mark.browser

EXECUTED = coursebuild.NOTEBOOKS / "01_one_query.ipynb"

# Pages through every slide in the page and reports each one whose content
# leaves the 1280x800 slide, clips code sideways, or scrolls inside itself.
EVERY_SLIDE = """async () => {
  const typeset = () => new Promise(r =>
    (window.MathJax && MathJax.Hub) ? MathJax.Hub.Queue(r) : r());
  await typeset();
  Reveal.slide(0, 0);
  const total = Reveal.getTotalSlides();
  const bad = [];
  let zoomed = 0;
  // MathJax 2 typesets the whole deck once, awaited above; waiting on its queue
  // again at every slide cost ~0.2 s a slide (18 s for lesson 04) and found
  // nothing more. No wait for a frame either: the decks have no transition, and
  // getBoundingClientRect lays the new slide out on the spot (waiting two frames
  // a slide cost 13 s over the 12 decks and gave the same report; a too-tall
  // block added to a slide is still reported).
  for (let i = 0; i < total; i++) {
    const slide = Reveal.getCurrentSlide();
    const box = document.querySelector('.reveal .slides').getBoundingClientRect();
    const problems = [];
    const parts = slide.querySelectorAll(
      '.jp-Cell, .jp-OutputArea-output, img, pre, table, .MathJax_CHTML');
    for (const el of parts) {
      const r = el.getBoundingClientRect();
      if (r.height === 0) continue;
      const style = getComputedStyle(el);
      if (r.bottom > box.bottom + 1) problems.push('taller than the slide');
      if (r.right > box.right + 1) problems.push('wider than the slide');
      if (el.scrollWidth > el.clientWidth + 1 && style.overflowX !== 'visible')
        problems.push('clips ' + el.tagName);
      if (el.scrollHeight > el.clientHeight + 1 && /auto|scroll/.test(style.overflowY))
        problems.push('scrolls inside ' + el.tagName);
    }
    if (slide.style.zoom) zoomed++;
    if (problems.length) bad.push(
      location.hash + ' ' + [...new Set(problems)].join(', ') + ': '
      + slide.innerText.slice(0, 60).replace(/\\n/g, ' '));
    Reveal.next();
  }
  return {total, bad, zoomed};
}"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Build every deck and every page once, next to the shipped assets."""
    if shutil.which("npm") is None and not coursebuild.ASSETS.exists():
        pytest.fail("npm is needed to install the slide assets (apt-get install npm)")
    coursebuild.ensure_assets()
    root = tmp_path_factory.mktemp("site")
    shutil.copytree(coursebuild.ASSETS, root / "assets")  # only what is shipped
    decks = coursebuild.export("slides", dest=root / "slides")
    pages = coursebuild.export("html", dest=root / "html", execute={EXECUTED})
    return decks, pages


def _offline_page(browser, width=1280, height=800):
    context = browser.new_context(viewport={"width": width, "height": height})
    problems = []

    def block(route):
        problems.append(f"network: {route.request.url}")
        route.abort()

    context.route("http://**/*", block)
    context.route("https://**/*", block)
    page = context.new_page()
    page.on("requestfailed", lambda r: problems.append(f"missing: {r.url}"))
    page.on("pageerror", lambda e: problems.append(f"script error: {e}"))
    return context, page, problems


def test_no_test_marker_reaches_a_reader(site):
    decks, pages = site
    for path in [*decks, *pages]:
        assert "NBVAL" not in path.read_text(encoding="utf-8"), path.name


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)])
def test_every_slide_of_every_deck_fits_the_screen(browser, site, size):
    """Every deck at 1280x800; at 1920x1080 (reveal.js scales the same 1280x800
    slide up, so the layout is the same) the longest deck, as a check of that."""
    decks, _ = site
    if size != (1280, 800):
        decks = [max(decks, key=lambda d: d.stat().st_size)]
    report = []
    for deck in decks:
        context, page, problems = _offline_page(browser, *size)
        try:
            page.goto(deck.as_uri())
            page.wait_for_function(
                "() => window.Reveal && Reveal.isReady()", timeout=30_000
            )
            result = page.evaluate(EVERY_SLIDE)
            assert result["total"] >= 5, f"{deck.name}: {result['total']} slides"
            report += [f"{deck.name} {b}" for b in result["bad"]]
            report += [f"{deck.name} {p}" for p in problems]
            if deck.stem.startswith("04") and size == (1280, 800):
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                page.evaluate("() => Reveal.slide(1, 0)")
                page.screenshot(path=str(ARTIFACTS / f"slides_{deck.stem}.png"))
        finally:
            context.close()
    assert not report, f"{len(report)} slides do not fit:\n" + "\n".join(report[:20])


def test_deck_moves_and_typesets_math(browser, site):
    decks, _ = site
    context, page, problems = _offline_page(browser)
    try:
        page.goto(decks[1].as_uri())
        page.wait_for_function("() => window.Reveal && Reveal.isReady()")
        before = page.evaluate("() => Reveal.getIndices().h")
        page.keyboard.press("ArrowRight")
        assert page.evaluate("() => Reveal.getIndices().h") == before + 1
        page.wait_for_function(
            "() => document.querySelectorAll('.MathJax_CHTML').length > 0",
            timeout=30_000,
        )
        assert page.locator(".MathJax_Error, .mjx-merror").count() == 0
        assert problems == [], problems[:5]
    finally:
        context.close()


def test_every_exported_slider_changes_its_plot(browser, site):
    """Moving any slider in any page changes the picture and the readout.

    An explorer whose lesson was not executed at build time is a still with a
    line saying that sliders need Jupyter: no slider at all there.
    """
    decks, pages = site
    moved = 0
    for path in [*pages, *decks]:
        html = path.read_text(encoding="utf-8")
        assert "widget-view+json" not in html, f"{path.name}: a dead widget view"
        if path in decks and 'type="range"' not in html:
            continue  # no slider; the deck test opened it offline already
        context, page, problems = _offline_page(browser)
        try:
            page.goto(path.as_uri())
            explorers = page.locator(".course-explorer")
            sliders = page.locator("input[type=range]")
            assert (
                sliders.count()
                == page.locator(".course-explorer input[type=range]").count()
            ), f"{path.name}: a slider outside an explorer"
            for i in range(explorers.count()):
                explorer = explorers.nth(i)
                explorer.scroll_into_view_if_needed()
                for j in range(explorer.locator("input[type=range]").count()):
                    slider = explorer.locator("input[type=range]").nth(j)
                    before = (
                        explorer.locator("img").get_attribute("src"),
                        explorer.locator(".course-explorer-readout").inner_text(),
                    )
                    top = int(slider.get_attribute("max"))
                    now = int(slider.input_value())
                    target = str(now + 1 if now < top else now - 1)
                    slider.fill(target)
                    after = (
                        explorer.locator("img").get_attribute("src"),
                        explorer.locator(".course-explorer-readout").inner_text(),
                    )
                    assert after[0] != before[0], f"{path.name}: plot unchanged"
                    assert after[1] != before[1], f"{path.name}: readout unchanged"
                    moved += 1
            if path.stem.startswith("01") and path.suffix == ".html":
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / f"html_{path.stem}.png"))
            assert problems == [], f"{path.name}: {problems[:5]}"
        finally:
            context.close()
    assert moved >= 1, "no exported explorer has sliders (lesson 01 was executed)"


def test_explorers_not_executed_are_stills_with_a_note(site):
    decks, pages = site
    for path in [*decks, *pages]:
        if path.stem == EXECUTED.stem and path.suffix == ".html":
            continue
        html = path.read_text(encoding="utf-8")
        if "Explorer(" in html:
            assert "need a running kernel" in html, path.name


def test_shipped_assets_are_small(site):
    size = sum(f.stat().st_size for f in coursebuild.ASSETS.rglob("*") if f.is_file())
    assert size < 15e6, f"build/assets is {size / 1e6:.0f} MB"
