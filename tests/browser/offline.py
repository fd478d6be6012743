"""What the deck and page tests share: a build next to the shipped assets, a
browser page that may not reach the network, and moving an exported explorer's
sliders.

Decks (tests/browser/test_slides.py) and pages (tests/browser/test_html_pages.py)
are built and checked in separate files, so make test-browser's two processes can
take one each. Chromium opens them as file:// URLs; every http(s) request is aborted
and recorded, and every file:// request that finds nothing is recorded too: a
page may not need the network, nor an asset that build/assets does not ship.
"""

import hashlib
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from tools import coursebuild, explorer_export, pagebuild

from .conftest import ARTIFACTS

EXECUTED = coursebuild.NOTEBOOKS / "01_one_query.ipynb"  # its page gets frames

# axe-core, pinned in tests/browser/package-lock.json, installed by `npm ci` into
# build/npm-tests (a cache, never shipped) and read from disk into the page.
HERE = Path(__file__).resolve().parent
AXE_HOME = coursebuild.BUILD / "npm-tests"
AXE_JS = AXE_HOME / "node_modules" / "axe-core" / "axe.min.js"
# WCAG 2.0 and 2.1, levels A and AA
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
SERIOUS = ("serious", "critical")


def build(kind, tmp_path_factory, execute=(), frames=None, paths=None):
    """Every lesson exported as ``kind`` ("slides", "html"), beside the assets;
    ``frames``: explorers' frames by lesson path (pagebuild.export's);
    ``paths``: other lessons than the English ones (the Chinese edition's)."""
    if shutil.which("npm") is None and not pagebuild.ASSETS.exists():
        pytest.fail("npm is needed to install the slide assets (apt-get install npm)")
    pagebuild.ensure_assets()
    root = tmp_path_factory.mktemp(kind)
    shutil.copytree(pagebuild.ASSETS, root / "assets")  # only what is shipped
    return pagebuild.export(
        kind, paths, dest=root / kind, execute=set(execute), frames=frames
    )


def stored_frames(lesson):
    """Frames for lesson 01's explorer made of its stored pictures, as a run at
    build time would give them: two temperatures, each with its picture and
    readout. The decks and pages use them (running lesson 01 at build time
    added about 13 s to the browser tests); the frames a kernel writes at build time
    (pagebuild.execute_with_frames) are tested in test_exported_explorers.py."""
    nb = nbformat.read(lesson, as_version=4)
    cell = next(c for c in nb.cells if explorer_export.is_explorer_cell(c))
    # each stored picture with the description stored beside it (plotting.show)
    pictures = [
        (o["data"]["image/png"], o.get("metadata", {}).get("image/png", {}).get("alt"))
        for c in nb.cells
        for o in c.get("outputs", [])
        if "image/png" in o.get("data", {})
    ]
    still = next(
        p
        for p in pictures
        if p[0] in {o["data"].get("image/png") for o in cell.outputs if "data" in o}
    )
    other = next(p for p in pictures if p[0] != still[0])
    return {
        str(cell.execution_count): {
            "class": "TemperatureExplorer",
            "controls": [{"name": "temperature", "labels": ["0.5", "1.0"], "start": 1}],
            "frames": {
                "0": [other[0], "temperature 0.5", other[1]],
                "1": [still[0], "temperature 1.0", still[1]],
            },
        }
    }


def offline_page(browser, width=1280, height=800, **options):
    """A fresh context and page with the network blocked; and its problem list.
    ``options``: more of Playwright's context options (e.g. reduced_motion)."""
    context = browser.new_context(
        viewport={"width": width, "height": height}, **options
    )
    problems = []

    def block(route):
        problems.append(f"network: {route.request.url}")
        route.abort()

    context.route("http://**/*", block)
    context.route("https://**/*", block)
    page = context.new_page()
    page.on(
        "requestfailed", lambda r: problems.append(f"missing: {r.url} ({r.failure})")
    )
    page.on("pageerror", lambda e: problems.append(f"script error: {e}"))
    return context, page, problems


def open_next(page, problems, path):
    """Open ``path`` in ``page`` (one page for many files, so that the files
    after the first read the assets from the context's cache), ``problems``
    then being this file's only: the page is emptied first, so that what the
    last file left loading (a font, say) is cut off before the list is cleared."""
    page.goto("about:blank")
    problems.clear()
    page.goto(path.as_uri())


def move_every_slider(browser, path):
    """Open ``path`` offline, move every slider of every explorer by one step and
    assert that the picture and the readout change; return how many moved."""
    moved = 0
    context, page, problems = offline_page(browser)
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
            # in a deck, go to the explorer's slide first (the others are hidden)
            explorer.evaluate(
                "(e) => window.Reveal && Reveal.slide("
                "...Object.values(Reveal.getIndices(e.closest('section'))))"
            )
            explorer.scroll_into_view_if_needed()
            for j in range(explorer.locator("input[type=range]").count()):
                slider = explorer.locator("input[type=range]").nth(j)
                before = (
                    explorer.locator("img").get_attribute("src"),
                    explorer.locator(".course-explorer-readout").inner_text(),
                )
                top = int(slider.get_attribute("max"))
                now = int(slider.input_value())
                slider.fill(str(now + 1 if now < top else now - 1))
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
    return moved


def assert_explorers_are_stills_with_a_note(paths, executed=None):
    """An explorer whose lesson was not executed at build time is a still with a
    line saying that sliders need Jupyter."""
    for path in paths:
        if executed is not None and path.stem == executed.stem:
            continue
        html = path.read_text(encoding="utf-8")
        if "Explorer(" in html:
            assert "need a running kernel" in html, path.name


def axe_source():
    """axe.min.js, installed once by ``npm ci`` from the pinned lock file."""
    lock = HERE / "package-lock.json"
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    stamp = AXE_HOME / "installed.sha256"
    with pagebuild.exclusive(coursebuild.BUILD / ".npm-tests.lock"):
        if not (stamp.exists() and stamp.read_text() == digest and AXE_JS.exists()):
            npm = shutil.which("npm")
            if npm is None:
                pytest.fail("npm is needed to install axe-core (apt-get install npm)")
            AXE_HOME.mkdir(parents=True, exist_ok=True)
            for name in ("package.json", "package-lock.json"):
                shutil.copy2(HERE / name, AXE_HOME / name)
            subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--prefix", str(AXE_HOME)],
                check=True,
            )
            stamp.write_text(digest)
    return AXE_JS.read_text(encoding="utf-8")


# axe read into the page as a plain script: require.js is on the pages, and axe's
# UMD wrapper would otherwise define an anonymous AMD module, which require.js
# refuses ("Mismatched anonymous define()").
# Two kinds of span are left out of axe's color-contrast rule, and only of that
# rule: MathJax 2's typeset glyphs (a third to a half of a page's elements; a
# third of the rule's time, and axe gave them only "incomplete", as it cannot
# measure a glyph) and the code cells' Pygments token spans (about a third of
# the rest). Each is checked otherwise, on the same pass: a formula is drawn in
# its text's colour, which the rule checks (MATH_COLOUR finds any glyph that is
# not), and every token's contrast with its code block is computed with WCAG's
# formula (CODE_CONTRAST).
AXE_LOAD = """(source) => {
  if (!window.axe) {
    const define = window.define;
    window.define = undefined;
    try { (0, eval)(source); } finally { window.define = define; }
    axe.configure({rules: [
      {id: 'color-contrast',
       selector: '*:not(.MathJax_CHTML *):not(.highlight pre *)'}]});
  }
  return axe.version;
}"""

# every glyph of a typeset formula whose colour is not its formula's surrounding
# text's, or that has a background of its own (as "lesson: glyph: colour")
MATH_COLOUR = """() => {
  const odd = [];
  for (const math of document.querySelectorAll('.MathJax_CHTML')) {
    const text = getComputedStyle(math.parentElement).color;
    for (const el of [math, ...math.querySelectorAll('*')]) {
      const style = getComputedStyle(el);
      if (style.color !== text || style.backgroundColor !== 'rgba(0, 0, 0, 0)')
        odd.push(`${el.className || el.tagName}: ${style.color} on `
          + `${style.backgroundColor}, text ${text}`);
    }
  }
  return odd.slice(0, 5);
}"""


# every token of every code cell (a span in a Pygments block) whose contrast
# with the background it is drawn on is under WCAG AA's 4.5:1 (normal text's
# ratio, also where a deck's code is large enough for 3:1: stricter than axe), as
# "token text: ratio"; the colours as computed, alpha blended over the nearest
# opaque background; an element with opacity below 1 around it is reported too
CODE_CONTRAST = """() => {
  const rgba = (c) => { const v = c.match(/[\\d.]+/g).map(Number);
    return v.length === 3 ? [...v, 1] : v; };
  const over = (top, under) => top.slice(0, 3).map(
    (x, i) => x * top[3] + under[i] * (1 - top[3]));
  const channel = (x) => { x /= 255;
    return x <= 0.04045 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); };
  const lum = (c) => 0.2126 * channel(c[0]) + 0.7152 * channel(c[1])
    + 0.0722 * channel(c[2]);
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const style = getComputedStyle(e);
      if (parseFloat(style.opacity) < 1) return null;
      const bg = rgba(style.backgroundColor);
      if (bg[3] > 0) layers.push(bg);
      if (bg[3] === 1) break;
    }
    return layers.reduceRight((under, top) => over(top, under), [255, 255, 255]);
  };
  const low = [];
  let tokens = 0;
  for (const span of document.querySelectorAll('.highlight pre *')) {
    if (!span.textContent.trim() || !span.getClientRects().length) continue;
    tokens += 1;
    const bg = background(span);
    if (bg === null) {
      low.push(`${span.textContent.slice(0, 20)}: opacity`);
      continue;
    }
    const fg = over(rgba(getComputedStyle(span).color), bg);
    const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    const ratio = (a + 0.05) / (b + 0.05);
    if (ratio < 4.5) low.push(`${span.textContent.slice(0, 20)}: ${ratio.toFixed(2)}`);
  }
  return {tokens, low: low.slice(0, 5)};
}"""


def contrast_axe_leaves_out(page):
    """What axe's color-contrast rule leaves out of ``page`` (AXE_LOAD),
    checked here: up to five formula glyphs not drawn in their text's colour
    or on a background of their own, and up to five code tokens under 4.5:1
    against their block, as finding strings; and how many tokens were measured."""
    code = page.evaluate(CODE_CONTRAST)
    findings = page.evaluate(MATH_COLOUR) + [f"code {t}" for t in code["low"]]
    return findings, code["tokens"]


# one axe run: the violations, each node as its selector, its HTML and why.
# ``context``: a selector, or an axe context object ({include, exclude}).
AXE_RUN = """async ([context, tags]) => {
  const result = await axe.run(context || document, {
    runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({
      target: n.target.join(' '), html: n.html.slice(0, 160),
      why: (n.failureSummary || '').slice(0, 300)}))}));
}"""


# Every slide of a deck shown at once, one below the other, as the slides are
# (same DOM, same styles, same width), for one axe run over all of them: axe
# builds its tree of the whole document at every run, so a run per slide cost as
# much as a run over the deck (about 25 times as long for a deck). reveal.js's
# hiding of the other slides (hidden, aria-hidden, .future/.past) is lifted;
# call it after paging, the deck's layout is gone afterwards.
SHOW_EVERY_SLIDE = """() => {
  const style = document.createElement('style');
  style.textContent = `
    .reveal .slides section { display: block !important; visibility: visible !important;
      opacity: 1 !important; position: relative !important; transform: none !important;
      top: auto !important; left: auto !important; height: auto !important; }
    .reveal .slides { position: static !important; transform: none !important;
      zoom: 1 !important; overflow: visible !important; }`;
  document.head.appendChild(style);
  const slides = document.querySelectorAll('.reveal .slides section');
  slides.forEach(s => {
    s.removeAttribute('hidden');
    s.removeAttribute('aria-hidden');
    s.classList.remove('future', 'past');
  });
  return slides.length;
}"""


def load_axe(page):
    """Put axe-core into ``page``; returns its version."""
    return page.evaluate(AXE_LOAD, axe_source())


def run_axe(page, context=None):
    """The WCAG 2.0/2.1 A and AA violations axe finds in ``page`` (or in
    ``context`` of it), as dicts: id, impact, help, nodes."""
    load_axe(page)
    return page.evaluate(AXE_RUN, [context, WCAG_TAGS])


def serious(violations):
    """The violations axe rates serious or critical."""
    return [v for v in violations if v["impact"] in SERIOUS]


def count_by_rule(violations):
    """{rule (impact): number of nodes} over a list of violations."""
    counts = Counter()
    for v in violations:
        counts[f"{v['id']} ({v['impact']})"] += len(v["nodes"])
    return dict(sorted(counts.items()))


def describe(where, violations, limit=3):
    """Lines naming each violation's rule and its first nodes."""
    lines = []
    for v in violations:
        for node in v["nodes"][:limit]:
            lines.append(
                f"{where}: {v['id']} ({v['impact']}) {node['target']}: "
                f"{node['html'][:100]} -- {node['why'][:160]}"
            )
    return lines
