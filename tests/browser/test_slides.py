"""Slide decks: every lesson built once with its stored outputs, opened from disk
in Chromium with the network blocked (tests/browser/offline.py), paged through."""

import pytest

from tools import coursebuild

from .conftest import ARTIFACTS
from .offline import (
    assert_explorers_are_stills_with_a_note,
    build,
    move_every_slider,
    offline_page,
)

pytestmark = pytest.mark.browser

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
def decks(tmp_path_factory):
    """Every lesson's deck, built once, next to the shipped assets."""
    return build("slides", tmp_path_factory)


def test_no_test_marker_reaches_a_reader(decks):
    for path in decks:
        assert "NBVAL" not in path.read_text(encoding="utf-8"), path.name


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)])
def test_every_slide_of_every_deck_fits_the_screen(browser, decks, size):
    """Every deck at 1280x800; at 1920x1080 (reveal.js scales the same 1280x800
    slide up, so the layout is the same) the longest deck, as a check of that."""
    if size != (1280, 800):
        decks = [max(decks, key=lambda d: d.stat().st_size)]
    report = []
    for deck in decks:
        context, page, problems = offline_page(browser, *size)
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


def test_deck_moves_and_typesets_math(browser, decks):
    context, page, problems = offline_page(browser)
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


def test_decks_have_no_dead_widget_and_their_sliders_move(browser, decks):
    """Built from stored outputs, a deck shows each explorer as a still; a deck
    that does carry sliders must move them (the deck test opened the rest)."""
    for path in decks:
        html = path.read_text(encoding="utf-8")
        assert "widget-view+json" not in html, f"{path.name}: a dead widget view"
        if 'type="range"' in html:
            assert move_every_slider(browser, path) >= 1, path.name


def test_explorers_not_executed_are_stills_with_a_note(decks):
    assert_explorers_are_stills_with_a_note(decks)


def test_shipped_assets_are_small(decks):
    size = sum(f.stat().st_size for f in coursebuild.ASSETS.rglob("*") if f.is_file())
    assert size < 15e6, f"build/assets is {size / 1e6:.0f} MB"
