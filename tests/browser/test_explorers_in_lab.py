"""Each lesson with an explorer, opened in JupyterLab in headless Chromium.

The test does what a learner does: open the notebook, wait for the kernel, run
all cells, then move each explorer's first slider with the keyboard. It asserts
that every cell ran without an error, that every explorer rendered as a live
widget (not the fallback text shown when widgets do not load), and that moving
the slider changed both the readout and the plot image. A screenshot per lesson
lands in test-artifacts/browser/.
"""

import re

import nbformat
import pytest

from .conftest import ARTIFACTS, REPO

pytestmark = pytest.mark.browser

LESSONS = sorted(
    path.name
    for path in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb")
    if any(
        re.search(r"\bwidgets\.\w+Explorer\(", cell.source)
        for cell in nbformat.read(path, as_version=4).cells
        if cell.cell_type == "code"
    )
)

ALL_CELLS_RAN = """() => {
  const prompts = [...document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt')];
  return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
}"""

HAS_ERROR = """() => [...document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output')]
  .some(e => e.innerText.includes('Traceback (most recent call last)'))"""

OUTPUT_TEXTS = """() => [...document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output')]
  .map(e => e.innerText)"""


def _explorer_state(explorer):
    return (
        explorer.locator("img.widget-image").get_attribute("src"),
        explorer.locator(".widget-html-content").first.inner_text(),
    )


def _wait_for_change(page, explorer, before, timeout_s=15):
    for _ in range(int(timeout_s / 0.25)):
        if _explorer_state(explorer) != before:
            return True
        page.wait_for_timeout(250)
    return False


@pytest.mark.parametrize("lesson", LESSONS)
def test_explorer_slider_changes_plot(lab, browser, lesson):
    base, token, _ = lab
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        # ?reset: a fresh workspace, so no earlier lesson's tab is restored
        page.goto(f"{base}/lab/tree/{lesson}?token={token}&reset")
        # Run All before the kernel is idle opens a "Select Kernel" dialog.
        page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=90_000)
        page.click("li.lm-MenuBar-item:has-text('Run')")
        page.click("li.lm-Menu-item:has-text('Run All Cells')")
        # Run All stops at the first error, so wait for "all ran" or an error.
        page.wait_for_function(
            f"() => ({ALL_CELLS_RAN})() || ({HAS_ERROR})()", timeout=300_000
        )
        page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)

        outputs = page.evaluate(OUTPUT_TEXTS)
        errors = [t for t in outputs if "Traceback (most recent call last)" in t]
        assert not errors, f"{lesson}: a cell raised:\n{errors[0][:2000]}"
        assert page.evaluate(ALL_CELLS_RAN), f"{lesson}: not every cell ran"
        fallback = [
            t
            for t in outputs
            if re.match(r"\w+Explorer\(", t.strip())
            or "Error displaying widget" in t
            or "Loading widget" in t
        ]
        assert not fallback, f"{lesson}: an explorer did not render: {fallback[0]}"

        explorers = page.locator(
            ".jp-NotebookPanel:not(.lm-mod-hidden) .widget-vbox:has(> img.widget-image)"
        )
        count = explorers.count()
        assert count >= 1, f"{lesson}: no explorer widget on the page"
        for i in range(count):
            explorer = explorers.nth(i)
            explorer.scroll_into_view_if_needed()
            before = _explorer_state(explorer)
            assert before[0] and before[0].startswith("blob:"), "no plot image"
            slider = explorer.locator(".widget-slider").first
            handle = slider.locator(".noUi-handle")
            readout = slider.locator(".widget-readout")
            value = readout.inner_text()
            handle.focus()
            handle.press("ArrowRight")
            handle.press("ArrowRight")
            if readout.inner_text() == value:  # at its maximum: go the other way
                handle.press("ArrowLeft")
                handle.press("ArrowLeft")
            assert readout.inner_text() != value, f"{lesson}: the slider did not move"
            # the kernel recomputes and sends a new PNG; allow for a loaded machine
            _wait_for_change(page, explorer, before, timeout_s=60)
            after = _explorer_state(explorer)
            assert after[0] != before[0], f"{lesson}: explorer {i}: plot unchanged"
            assert after[1] != before[1], f"{lesson}: explorer {i}: readout unchanged"
    finally:
        # on failure too: the screenshot shows what the learner would have seen
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{lesson[:-6]}.png"), full_page=False)
        page.close()
