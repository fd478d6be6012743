"""The live course's accessibility: a lesson opened in JupyterLab, checked with
axe-core (pinned in tests/browser/package-lock.json, read from disk) against
WCAG 2.0/2.1 A and AA.

The pages, every slide of every deck and the keyboard walk of a page are
checked where they are built once (tests/browser/test_html_pages.py and
test_slides.py); here lesson 01 is opened in JupyterLab as a learner finds it,
its explorer cell and the cells it needs are run, and axe checks the
notebook's output areas (the lesson's figures, printed results, the explorer's
controls and readout): 0 serious or critical violations apart from EXCEPTIONS
(ipywidgets' own slider markup, with its reason). JupyterLab's own
chrome (menus, toolbars, side panels, the cell editors) is out of the course's
hands: what axe finds there is printed, not failed on."""

import json
import urllib.request

import pytest

from .conftest import ARTIFACTS, LESSON_01
from .offline import count_by_rule, describe, run_axe, serious

pytestmark = pytest.mark.browser

LESSON = LESSON_01
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"
# the course's content in JupyterLab: what the lesson's cells put out
CONTENT = {"include": [[f"{PANEL} .jp-OutputArea"]]}
# everything else: JupyterLab's chrome and the cells' editors
CHROME = {"exclude": [[f"{PANEL} .jp-OutputArea"]]}
# findings in the output areas that are not the course's markup: (rule, the
# node's selector ends with) -> why
EXCEPTIONS = {
    ("aria-input-field-name", ".noUi-handle"): (
        "ipywidgets draws a slider's handle with noUiSlider: role=slider with no "
        "aria-label, and the widget's description <label> is not tied to it "
        "(noUiSlider issue 1223); no ipywidgets option sets it"
    ),
}


def course_findings(violations):
    """``violations`` without the nodes EXCEPTIONS names (each with its reason)."""
    kept = []
    for v in violations:
        nodes = [
            n
            for n in v["nodes"]
            if not any(
                v["id"] == rule and n["target"].endswith(end)
                for rule, end in EXCEPTIONS
            )
        ]
        if nodes:
            kept.append({**v, "nodes": nodes})
    return kept


def shut_down_kernels(base, token):
    """End every kernel session of the server: this file and
    test_explorers_in_lab.py share one JupyterLab (conftest.py's TOGETHER), and
    lesson 01 must start in a fresh kernel (the checks count its cells from 1)."""
    with urllib.request.urlopen(f"{base}/api/sessions?token={token}") as reply:
        sessions = json.load(reply)
    for session in sessions:
        url = f"{base}/api/sessions/{session['id']}?token={token}"
        urllib.request.urlopen(urllib.request.Request(url, method="DELETE")).close()


def test_a_lesson_in_jupyterlab_meets_wcag_aa(lesson_01_in_lab):
    """Lesson 01 in JupyterLab, its explorer run and drawn: axe finds no serious
    or critical violation in the notebook's output areas; JupyterLab's chrome
    is reported. (The lesson is opened and run once for this test and the
    slider test of test_explorers_in_lab.py: conftest.py's lesson_01_in_lab.)"""
    page, _ = lesson_01_in_lab
    try:
        # the explorer drawn as a live widget (its sliders; that its picture
        # moves is tests/browser/test_explorers_in_lab.py's to check)
        explorer = page.locator(f"{PANEL} .widget-vbox:has(.widget-slider)")
        explorer.first.wait_for(state="attached", timeout=120_000)
        # every output of the lesson drawn (JupyterLab renders cells lazily)
        page.evaluate(
            f"() => document.querySelectorAll('{PANEL} .jp-Cell')"
            ".forEach(c => c.scrollIntoView())"
        )
        explorer.first.scroll_into_view_if_needed()
        outputs = page.locator(f"{PANEL} .jp-OutputArea-output").count()
        assert outputs >= 10, f"only {outputs} outputs drawn"
        content = run_axe(page, CONTENT)
        chrome = run_axe(page, CHROME)
    finally:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "accessibility_lab_01.png"))
    print(f"{LESSON} in JupyterLab, {outputs} outputs: {count_by_rule(content)}")
    print(f"JupyterLab's own chrome (not failed on): {count_by_rule(chrome)}")
    print("\n".join(describe("chrome", serious(chrome), limit=1)))
    found = describe(LESSON, serious(course_findings(content)))
    assert not found, f"{len(found)} findings:\n" + "\n".join(found[:30])
