"""The Chinese edition's HTML pages (`make html-zh`, build/html-zh/), checked in
Chromium as the English pages are (tests/browser/test_html_pages.py, whose
helpers these tests use): every Chinese lesson's page built once from its
stored outputs (notebooks/zh/; make html-zh runs them first, which changes the
explorers, not the text), opened from disk with the network blocked.

Each page: axe-core finds no serious or critical violation of WCAG 2.0/2.1 A and
AA, every formula carries its assistive MathML, the page says lang="zh-CN", its
Chinese renders in a CJK font (the fonts Chromium drew the glyphs with, not the
CSS's font list: Noto Sans CJK is a fallback no style names), and every image
has a Chinese description. Long runs of the Chinese edition: `make test-zh`.
"""

import re

import pytest

from .alt_text import bad_alt, figures_stored, images
from .offline import build
from .test_html_pages import assert_pages_meet_wcag_aa

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.zh]

# Chinese characters: the CJK Unified Ideographs, extension A, compatibility
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# a font Chromium may draw Chinese with: Noto Sans/Serif CJK (fonts-noto-cjk)
CJK_FONT = re.compile(r"\bCJK\b")


@pytest.fixture(scope="module")
def zh_pages(tmp_path_factory):
    """Every Chinese lesson's page, built once beside the shipped assets."""
    from tools import i18n_build

    paths = i18n_build.zh_lessons()
    assert len(paths) == 14, f"{len(paths)} Chinese lessons (make notebooks-zh)"
    return build("html", tmp_path_factory, paths=paths)


def bad_zh_alt(alt):
    """Why ``alt`` is no Chinese description, or None when it is one. The
    English rule (alt_text.bad_alt) with its words counted as the Chinese decks
    count them: Latin words plus 0.6 per Chinese character."""
    why = bad_alt(alt)
    if why and why != "too short to say what it shows":
        return why
    han = len(HAN.findall(alt))
    if not han:
        return "not in Chinese"
    words = len(HAN.sub(" ", alt).split()) + round(0.6 * han)
    return None if words >= 8 else "too short to say what it shows"


def test_bad_zh_alt_tells_a_chinese_description_from_others():
    described = "双对数图：分数的方差随 d_k 从 1 到 1024 的变化，实测值沿着预测的虚线。"
    assert bad_zh_alt(described) is None
    assert bad_zh_alt("Log-log plot of the variance of the scores against d_k") == (
        "not in Chinese"
    )
    assert bad_zh_alt("条形图") == "too short to say what it shows"
    assert bad_zh_alt("TemperatureExplorer") == "a class name"
    assert bad_zh_alt("") == "empty"


def test_every_image_has_a_chinese_description(zh_pages):
    """Each picture the Chinese lesson stores is an <img> of its page, and no
    <img> of any page lacks a Chinese description."""
    from tools import i18n_build

    pages = {path.stem: path for path in zh_pages}
    problems, counted = [], 0
    for lesson in i18n_build.zh_lessons():
        found = images(pages[lesson.stem])
        counted += len(found)
        for alt, cls in found:
            why = bad_zh_alt(alt)
            if why:
                problems.append(f"{lesson.stem}: img.{cls or '?'} alt {why}: {alt!r}")
        stored = figures_stored(lesson)
        assert len(found) >= stored, f"{lesson.name}: {len(found)} of {stored}"
    assert counted > 20, f"only {counted} images in the Chinese pages"
    assert problems == [], "\n".join(problems[:10])


OWN_TEXT = """el => [...el.childNodes].filter(n => n.nodeType === Node.TEXT_NODE)
  .map(n => n.textContent).join('')"""


def cjk_glyphs(page, selector):
    """How many glyphs Chromium drew in CJK fonts, and in any font, for the
    text of the first element matching ``selector`` (DevTools'
    CSS.getPlatformFontsForNode: the fonts actually used, fallbacks included),
    and the element's own text (that of its child text nodes, which the
    glyphs counted are)."""
    cdp = page.context.new_cdp_session(page)
    try:
        cdp.send("DOM.enable")
        cdp.send("CSS.enable")
        root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})
        assert node["nodeId"], f"nothing matches {selector}"
        fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node["nodeId"]})
    finally:
        cdp.detach()
    cjk = sum(
        f["glyphCount"] for f in fonts["fonts"] if CJK_FONT.search(f["familyName"])
    )
    text = page.eval_on_selector(selector, OWN_TEXT)
    return cjk, [f["familyName"] for f in fonts["fonts"]], text


# The lesson's heading and its first paragraph (or list item) with at least 5
# Chinese characters of its own text, marked for DevTools to find.
MARK_PROSE = """() => {
  const own = el => [...el.childNodes].filter(n => n.nodeType === Node.TEXT_NODE)
    .map(n => n.textContent).join('');
  const han = s => (s.match(/\\p{Script=Han}/gu) || []).length;
  const h1 = document.querySelector('.jp-RenderedMarkdown h1');
  const prose = [...document.querySelectorAll(
    '.jp-RenderedMarkdown p, .jp-RenderedMarkdown li')].find(el => han(own(el)) >= 5);
  if (h1) h1.dataset.courseProse = 'heading';
  if (prose) prose.dataset.courseProse = 'paragraph';
}"""
PROSE = ('[data-course-prose="heading"]', '[data-course-prose="paragraph"]')


def test_every_page_meets_wcag_aa_in_chinese(browser, zh_pages):
    """axe-core (pinned, read from disk) finds no serious or critical violation
    of WCAG 2.0/2.1 A and AA on any Chinese page, math typeset; every formula
    carries MathJax's assistive MathML; the page declares lang="zh-CN"; its
    heading and a paragraph of Chinese prose are drawn in Noto Sans CJK, every
    Chinese character with a CJK font's glyph."""
    assert_pages_meet_wcag_aa(browser, zh_pages, "zh-CN", more=chinese_not_in_cjk)


def chinese_not_in_cjk(path, page):
    """The heading and the paragraph of ``page`` whose Chinese characters are
    not all drawn in a CJK font, one finding each."""
    findings = []
    page.evaluate(MARK_PROSE)
    for selector in PROSE:
        cjk, fonts, text = cjk_glyphs(page, selector)
        han = len(HAN.findall(text))
        assert han, f"{path.name} {selector}: no Chinese in {text[:40]!r}"
        if cjk < han:
            findings.append(
                f"{path.name} {selector}: {han} Chinese characters, "
                f"{cjk} drawn in a CJK font (fonts used: {fonts})"
            )
    return findings
