"""Slide decks: every lesson built once with its stored outputs, opened from disk
in Chromium with the network blocked (tests/browser/offline.py), paged through."""

import re

import pytest

from tools import coursebuild, pagebuild

from .alt_text import assert_every_image_described
from .conftest import ARTIFACTS
from .offline import (
    EXECUTED,
    SHOW_EVERY_SLIDE,
    assert_explorers_are_stills_with_a_note,
    build,
    contrast_axe_leaves_out,
    count_by_rule,
    describe,
    move_every_slider,
    offline_page,
    open_next,
    run_axe,
    serious,
    stored_frames,
)

pytestmark = pytest.mark.browser

# Pages through every slide in the page and measures it as the room sees it:
# content that leaves the 1280x800 slide, clips sideways or scrolls inside
# itself; the smallest text as rendered (computed size times reveal.js's scale),
# code and text outputs apart from the rest; the prose words in view; whether a
# slide that shortens the lesson (a cell tagged course-shortened) has notes.
# Math is measured by the text around it: MathJax sizes its glyphs to that
# text's x-height, so its own font-size (about 75 % of it) says nothing.
# ``only``: a selector; then only the slides holding a match are measured.
EVERY_SLIDE = """async (only) => {
  const typeset = () => new Promise(r =>
    (window.MathJax && MathJax.Hub) ? MathJax.Hub.Queue(r) : r());
  await typeset();
  Reveal.slide(0, 0);
  const total = Reveal.getTotalSlides();
  const SKIP = '.MathJax_CHTML, .MathJax_Preview, .MathJax, .MJX_Assistive_MathML, '
    + 'script, style, aside.notes';
  const slides = [];
  // MathJax 2 typesets the whole deck once, awaited above; waiting on its queue
  // again at every slide cost ~0.2 s a slide and found nothing more. No wait for
  // a frame either: the decks have no transition, and getBoundingClientRect
  // lays the new slide out on the spot.
  for (let i = 0; i < total; i++) {
    const slide = Reveal.getCurrentSlide();
    if (only && !slide.querySelector(only)) { Reveal.next(); continue; }
    const container = document.querySelector('.reveal .slides');
    const box = container.getBoundingClientRect();
    const scale = box.width / container.offsetWidth;
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
    let body = 99, code = 99, words = 0, smallest = '';
    const walker = document.createTreeWalker(slide, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.textContent.trim();
      const el = node.parentElement;
      if (!text || el.closest(SKIP) || !el.getClientRects().length) continue;
      const size = parseFloat(getComputedStyle(el).fontSize) * scale;
      if (el.closest('pre, code')) {
        code = Math.min(code, size);
      } else {
        if (size < body) { body = size; smallest = text.slice(0, 30); }
        words += (text.match(/[^\\W_][\\w'’.-]*/gu) || []).length;
      }
    }
    slides.push({
      where: location.hash, body, code, words, smallest,
      problems: [...new Set(problems)],
      shortened: !!slide.querySelector('.celltag_course-shortened'),
      explorer: [...slide.querySelectorAll('.course-explorer')].map(e => ({
        controls: e.querySelectorAll('input[type=range]').length,
        picture: e.querySelector('img').getBoundingClientRect().width / scale})),
      notes: slide.querySelectorAll('aside.notes').length > 0,
      text: slide.innerText.slice(0, 50).replace(/\\n/g, ' ')});
    Reveal.next();
  }
  return slides;
}"""

# as rendered at 1280x800, after reveal.js's scaling
BODY_PX, CODE_PX, WORDS = 24, 20, 60
# slides allowed to break a rule, each with its reason: (deck stem, the start of
# the slide's text) -> why
EXCEPTIONS = {}


def slide_problems(deck, slide):
    """What is wrong with one measured slide (a list of strings)."""
    problems = list(slide["problems"])
    if slide["body"] < BODY_PX:
        problems.append(f"text {slide['body']:.1f} px ({slide['smallest']!r})")
    if slide["code"] < CODE_PX:
        problems.append(f"code {slide['code']:.1f} px")
    if slide["words"] > WORDS:
        problems.append(f"{slide['words']} words")
    if slide["shortened"] and not slide["notes"]:
        problems.append("shortened, with no speaker notes")
    for (stem, start), _why in EXCEPTIONS.items():
        if deck.name.startswith(stem) and slide["text"].startswith(start):
            return []
    return problems


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    """Every lesson's deck, built once, next to the shipped assets; lesson 01's
    explorer with frames (stored_frames), as make slides gives it, the others'
    as stills."""
    return build("slides", tmp_path_factory, frames={EXECUTED: stored_frames(EXECUTED)})


def test_no_image_without_a_description(decks):
    """No image's alt is empty, nbconvert's placeholder or a class name."""
    assert_every_image_described(decks, "slides")


def test_no_test_marker_reaches_a_reader(decks):
    for path in decks:
        assert "NBVAL" not in path.read_text(encoding="utf-8"), path.name


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)])
def test_every_slide_of_every_deck_is_a_slide(browser, decks, size):
    """Every slide of every deck at 1280x800: it fits (no overflow, clipping or
    scrolling), its text is at least 24 px and its code 20 px as rendered, it
    shows at most 60 words of prose, and if it shortens the lesson its notes
    hold the rest. At 1920x1080 (reveal.js scales the same 1280x800 slide up,
    so the layout is the same) the longest deck, as a check of that.

    At 1280x800, after the pass, axe-core checks every slide of the deck against
    WCAG 2.0/2.1 A and AA (tests/browser/offline.py): 0 serious or critical
    violations (formulas drawn in their text's colour, code tokens at 4.5:1 or
    more against their block, both checked here: offline.AXE_LOAD). One
    run over all the slides shown at once, since a run costs the same for one
    slide as for all of them."""
    if size != (1280, 800):
        decks = [max(decks, key=lambda d: d.stat().st_size)]
    report, summary, found = [], [], {}
    # one context and page for every deck (offline.open_next): a missing file
    # is still a failed request, in whatever cache
    context, page, problems = offline_page(browser, *size)
    try:
        for deck in decks:
            open_next(page, problems, deck)
            page.wait_for_function(
                "() => window.Reveal && Reveal.isReady()", timeout=30_000
            )
            slides = page.evaluate(EVERY_SLIDE, None)
            assert len(slides) >= 5, f"{deck.name}: {len(slides)} slides"
            for slide in slides:
                bad = slide_problems(deck, slide)
                if bad:
                    report.append(
                        f"{deck.name} {slide['where']} {', '.join(bad)}: "
                        f"{slide['text']}"
                    )
            report += [f"{deck.name} {p}" for p in problems]
            summary.append(
                f"{deck.stem}: {len(slides)} slides, text >= "
                f"{min(s['body'] for s in slides):.1f} px, code >= "
                f"{min(s['code'] for s in slides):.1f} px, words <= "
                f"{max(s['words'] for s in slides)}"
            )
            if deck.stem.startswith("01") and size == (1280, 800):
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                for where in ("0/0", "3/0", "9/0"):
                    page.evaluate(f"() => Reveal.slide({where.replace('/', ',')})")
                    name = f"slides_{deck.stem}_{where.replace('/', '_')}.png"
                    page.screenshot(path=str(ARTIFACTS / name))
            if size == (1280, 800):
                assert page.evaluate(SHOW_EVERY_SLIDE) >= len(slides)
                findings, tokens = contrast_axe_leaves_out(page)
                assert tokens > 0, f"{deck.name}: no code token measured"
                report += [f"{deck.name} {f}" for f in findings]
                violations = run_axe(page)
                found[deck.stem] = count_by_rule(violations)
                report += describe(deck.name, serious(violations))
    finally:
        context.close()
    print("\n".join(summary))
    print("axe-core, WCAG 2.0/2.1 A and AA, per deck:", found)
    assert not report, f"{len(report)} slides are not slides:\n" + "\n".join(
        report[:30]
    )


def test_an_explorer_with_frames_is_one_slide(browser, decks):
    """An explorer whose lesson ran at build time (make slides runs them) is one
    slide: its line of code, its controls, its readout and its picture at least
    two thirds of the slide wide, all at the deck's sizes (the next test moves
    its slider). Lesson 01's deck has such frames (the decks fixture)."""
    deck = next(d for d in decks if d.stem.startswith(EXECUTED.stem))
    context, page, problems = offline_page(browser)
    try:
        page.goto(deck.as_uri())
        page.wait_for_function("() => window.Reveal && Reveal.isReady()")
        shown = page.evaluate(EVERY_SLIDE, ".course-explorer")
    finally:
        context.close()
    assert len(shown) == 1, f"the explorer is on {len(shown)} slides"
    (slide,) = shown
    assert slide_problems(deck, slide) == [], slide
    assert slide["explorer"][0]["controls"] == 1
    assert slide["explorer"][0]["picture"] >= 2 / 3 * 1280, slide["explorer"]
    assert "explorers.TemperatureExplorer(" in slide["text"]
    assert problems == [], problems[:5]


# what moves in a deck: reveal.js's settings and the longest CSS transition or
# animation of anything in it, in seconds
MOTION = """() => {
  const config = Reveal.getConfig();
  let longest = 0;
  for (const el of document.querySelectorAll('.reveal, .reveal *')) {
    const style = getComputedStyle(el);
    for (const d of (style.transitionDuration + ',' + style.animationDuration)
        .split(',')) longest = Math.max(longest, parseFloat(d) || 0);
  }
  return {transition: config.transition, background: config.backgroundTransition,
          autoAnimate: config.autoAnimate, longest};
}"""


@pytest.mark.parametrize("motion", ["reduce", "no-preference"])
def test_deck_moves_and_typesets_math(browser, decks, motion):
    """A deck pages with the keyboard and typesets its math, each formula with
    the MathML a screen reader reads (MathJax's AssistiveMML). When the reader's
    system asks for reduced motion nothing moves: no slide or background
    transition, no auto-animate, no CSS transition or animation (reveal.js's
    progress bar and controls have them otherwise)."""
    context, page, problems = offline_page(browser, reduced_motion=motion)
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
        page.evaluate("() => new Promise(r => MathJax.Hub.Queue(r))")
        assert page.locator(".MathJax_Error, .mjx-merror").count() == 0
        typeset = page.locator(".MathJax_CHTML").count()
        readable = page.locator(".MathJax_CHTML .MJX_Assistive_MathML > math")
        assert readable.count() == typeset > 0
        moving = page.evaluate(MOTION)
        assert moving["transition"] == moving["background"] == "none", moving
        if motion == "reduce":
            assert moving["autoAnimate"] is False and moving["longest"] == 0, moving
        else:
            assert moving["autoAnimate"] is True and moving["longest"] > 0, moving
        assert problems == [], problems[:5]
    finally:
        context.close()


def test_decks_have_no_dead_widget_and_their_sliders_move(browser, decks):
    """Built from stored outputs, a deck shows each explorer as a still; a deck
    that does carry sliders (lesson 01's, with frames) moves them."""
    moved = 0
    for path in decks:
        html = path.read_text(encoding="utf-8")
        assert "widget-view+json" not in html, f"{path.name}: a dead widget view"
        if 'type="range"' in html:
            moved += move_every_slider(browser, path)
    assert moved >= 1, "lesson 01's deck has no slider"


def test_explorers_not_executed_are_stills_with_a_note(decks):
    assert_explorers_are_stills_with_a_note(decks, executed=EXECUTED)


def test_speaker_view_shows_the_notes(browser, decks):
    """The S key opens reveal.js's speaker view (a second window, offline) with
    the current slide's notes: lesson 01's "Seeing it" slide, whose reading of
    the figure the slide leaves to the speaker."""
    deck = next(d for d in decks if d.stem.startswith("01"))
    context, page, problems = offline_page(browser)
    try:
        page.goto(deck.as_uri())
        page.wait_for_function("() => window.Reveal && Reveal.isReady()")
        index = page.evaluate(
            """() => Reveal.getSlides().findIndex(s =>
                 /Seeing it/i.test(s.querySelector('h2') ? s.querySelector('h2')
                   .textContent : ''))"""
        )
        assert index >= 0, "no 'Seeing it' slide"
        page.evaluate(
            "(i) => Reveal.slide(...Object.values(Reveal.getIndices("
            "Reveal.getSlides()[i])))",
            index,
        )
        with page.expect_popup() as popup_info:
            page.keyboard.press("s")
        popup = popup_info.value
        notes = popup.locator(".speaker-controls-notes .value")
        notes.wait_for(timeout=15_000)
        popup.wait_for_function(
            "() => /softmax keeps/i.test(document.querySelector("
            "'.speaker-controls-notes .value').textContent)",
            timeout=15_000,
        )
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        popup.screenshot(path=str(ARTIFACTS / "speaker_view_01.png"))
        assert problems == [], problems[:5]
    finally:
        context.close()


def test_handouts_one_page_per_slide(browser, decks):
    """make slides prints a handout per deck (pagebuild.write_handouts); one
    deck, the smallest (printing takes about a second a slide), is printed here,
    offline, and has one page per slide or fewer; the next test checks that the
    build prints one for every deck."""
    deck = min(decks, key=lambda d: d.stat().st_size)
    (pdf,) = pagebuild.write_handouts([deck], browser)
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF")
    pages = len(re.findall(rb"/Type\s*/Page\b", data))
    context, page, _ = offline_page(browser)
    try:
        page.goto(deck.as_uri())
        page.wait_for_function("() => window.Reveal && Reveal.isReady()")
        slides = page.evaluate("() => Reveal.getTotalSlides()")
    finally:
        context.close()
    assert 1 <= pages <= slides, f"{pages} pages for {slides} slides"


def test_make_slides_writes_a_handout_per_lesson(monkeypatch, decks):
    printed = []
    monkeypatch.setattr(pagebuild, "export", lambda kind, **options: decks)
    monkeypatch.setattr(pagebuild, "write_handouts", printed.extend)
    coursebuild.main(["slides"])
    assert sorted(printed) == sorted(decks)
    names = {pagebuild.handout_path(d).name for d in decks}
    assert len(names) == len(decks) and all(n.endswith(".handout.pdf") for n in names)


def test_shipped_assets_are_small(decks):
    size = sum(f.stat().st_size for f in pagebuild.ASSETS.rglob("*") if f.is_file())
    assert size < 15e6, f"build/assets is {size / 1e6:.0f} MB"
