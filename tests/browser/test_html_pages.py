"""HTML pages: every lesson built once from its stored outputs (lesson 01's
explorer with frames made of its stored pictures, offline.stored_frames, so that
it has a slider as make html gives it; the others show the explorer as a still),
opened from disk in Chromium with the network blocked
(tests/browser/offline.py). Each page is checked with axe-core against WCAG
2.0/2.1 A and AA, its mathematics for the MathML a screen reader reads, and
lesson 01's page with the keyboard alone."""

import pytest

from .alt_text import (
    assert_every_image_described,
    assert_every_stored_figure_reaches_its_page,
)
from .offline import (
    EXECUTED,
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


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Every lesson's page, built once, next to the shipped assets. (The frames
    a kernel writes when make html runs a lesson: test_exported_explorers.py.)"""
    return build("html", tmp_path_factory, frames={EXECUTED: stored_frames(EXECUTED)})


def test_no_image_without_a_description(pages):
    """No image's alt is empty, nbconvert's placeholder or a class name."""
    assert_every_image_described(pages, "html")


def test_every_stored_figure_reaches_its_page(pages):
    assert_every_stored_figure_reaches_its_page(pages)


def test_no_test_marker_reaches_a_reader(pages):
    for path in pages:
        assert "NBVAL" not in path.read_text(encoding="utf-8"), path.name


def test_every_exported_slider_changes_its_plot(browser, pages):
    """On a page with sliders, moving any slider changes the picture and the
    readout. A page without frames has no slider at all. (That
    every page opens offline, with no script error, is checked where each one
    is opened for axe: test_every_page_meets_wcag_aa.)"""
    moved = 0
    for path in pages:
        html = path.read_text(encoding="utf-8")
        assert "widget-view+json" not in html, f"{path.name}: a dead widget view"
        if path.stem != EXECUTED.stem:
            assert 'type="range"' not in html, f"{path.name}: a slider, no frames"
            continue
        moved += move_every_slider(browser, path)
    assert moved >= 1, "no exported explorer has sliders (lesson 01 has frames)"


def test_explorers_not_executed_are_stills_with_a_note(pages):
    assert_explorers_are_stills_with_a_note(pages, executed=EXECUTED)


TYPESET = """() => new Promise(r =>
  (window.MathJax && MathJax.Hub) ? MathJax.Hub.Queue(() => r(true)) : r(true))"""

# [typeset formulas, those with MathML for assistive technology, <html lang>]
MATH_AND_LANG = """() => [
  document.querySelectorAll('.MathJax_CHTML').length,
  document.querySelectorAll('.MathJax_CHTML + .MJX_Assistive_MathML > math, '
    + '.MathJax_CHTML > .MJX_Assistive_MathML > math').length,
  document.documentElement.lang]"""


def test_every_page_meets_wcag_aa(browser, pages):
    """axe-core (pinned, read from disk) finds no serious or critical violation
    of WCAG 2.0/2.1 A and AA on any page, math typeset; every formula carries
    MathJax's assistive MathML (what a screen reader reads, offline) and is
    drawn in the colour of its text (axe's contrast rule checks the text, not
    the glyphs: offline.AXE_LOAD), every code token is at 4.5:1 or more against
    its code block (computed here, as axe leaves the token spans out too), and
    the page declares its language."""
    assert_pages_meet_wcag_aa(browser, pages, "en")


def assert_pages_meet_wcag_aa(browser, pages, lang, more=None):
    """The WCAG check of every page in ``pages``, whose html lang is ``lang``;
    ``more(path, page)``: a list of further findings on the open page (the
    Chinese pages' fonts, tests/browser/test_chinese_pages.py)."""
    report, found, formulas, tokens = [], {}, 0, 0
    # one context and page for every page (offline.open_next): a missing file
    # is still a failed request, in whatever cache
    context, page, problems = offline_page(browser)
    try:
        for path in pages:
            open_next(page, problems, path)
            page.evaluate(TYPESET)
            typeset, readable, page_lang = page.evaluate(MATH_AND_LANG)
            assert typeset == readable, f"{path.name}: {typeset - readable} unread"
            assert page_lang == lang, f"{path.name}: lang={page_lang!r}"
            formulas += typeset
            findings, measured = contrast_axe_leaves_out(page)
            report += [f"{path.name}: {f}" for f in findings]
            tokens += measured
            if more is not None:
                report += more(path, page)
            violations = run_axe(page)
            found[path.stem] = count_by_rule(violations)
            report += describe(path.name, serious(violations))
            report += [f"{path.name}: {p}" for p in problems]
    finally:
        context.close()
    print(f"axe-core, WCAG 2.0/2.1 A and AA, per page (lang {lang}):", found)
    assert formulas > 100, f"only {formulas} formulas typeset"
    assert tokens > 1000, f"only {tokens} code tokens measured"
    assert not report, f"{len(report)} findings:\n" + "\n".join(report[:30])


# Tab once and say what has the focus: its tag, type, text, and whether it shows
# a focus indicator (an outline of 2 px or more, or a box-shadow) as :focus-visible.
TAB_STOP = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const style = getComputedStyle(el);
  const outline = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2;
  const shadow = style.boxShadow !== 'none';
  return {id: el.dataset.courseTab, tag: el.tagName, visible: outline || shadow,
          focusVisible: el.matches(':focus-visible')};
}"""

# every control of the page (links, sliders, buttons, form fields), numbered
CONTROLS = """() => {
  const controls = [...document.querySelectorAll(
    'a[href], input, button, select, textarea')].filter(
    el => el.getClientRects().length && !el.closest('[hidden], [inert]')
      && el.tabIndex >= 0);
  controls.forEach((el, i) => { el.dataset.courseTab = String(i); });
  return controls.map(el => el.tagName + (el.type ? '[' + el.type + ']' : '')
    + ' ' + (el.getAttribute('href') || el.getAttribute('aria-label') || ''));
}"""


def test_keyboard_reaches_every_control_with_a_visible_focus(browser, pages):
    """Lesson 01's page (its explorer has sliders) with the keyboard alone: Tab
    reaches every link and slider, in order, and each shows a focus indicator
    (an outline of 2 px or more, or a box-shadow) while it has the focus."""
    path = next(p for p in pages if p.stem == EXECUTED.stem)
    context, page, problems = offline_page(browser)
    try:
        page.goto(path.as_uri())
        page.evaluate(TYPESET)
        controls = page.evaluate(CONTROLS)
        assert any("range" in c for c in controls), "no slider on the page"
        reached, unseen = [], []
        # nbconvert makes every input and output area a tab stop, and MathJax
        # every formula: the controls come among them
        for _ in range(3000):
            page.keyboard.press("Tab")
            stop = page.evaluate(TAB_STOP)
            if stop is None or stop["id"] is None:
                continue
            index = int(stop["id"])
            if reached and index <= reached[-1]:
                break  # round again
            reached.append(index)
            if not (stop["visible"] and stop["focusVisible"]):
                unseen.append(controls[index])
            if len(reached) == len(controls):
                break
        missed = [c for i, c in enumerate(controls) if i not in reached]
        assert not missed, f"Tab never reaches {missed[:5]}"
        assert not unseen, f"no visible focus on {unseen[:5]}"
        assert problems == [], problems[:5]
    finally:
        context.close()
