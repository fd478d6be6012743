"""An exported explorer, by keyboard only: reach its slider with Tab, see the
focus, move it with the arrow keys, and see the frame AND its description change.

Lesson 01's page is built as make html builds it, with frames written by the
export's own kernel code (explorer_export.FRAME_CODE) from a real
TemperatureExplorer, run in this process instead of a kernel (running the
lesson would add its whole execution; test_html_pages.py does that).
"""

import json
import shutil

import nbformat
import numpy as np
import pytest

from helpers import explorers
from tools import coursebuild, explorer_export

from .offline import offline_page

pytestmark = pytest.mark.browser

LESSON = coursebuild.NOTEBOOKS / "01_one_query.ipynb"
SCORES = np.array([0.8, 0.3, 1.3, -0.4, -1.0])


@pytest.fixture(scope="module")
def page_with_frames(tmp_path_factory):
    nb = nbformat.read(LESSON, as_version=4)
    cell = next(c for c in nb.cells if explorer_export.is_explorer_cell(c))
    explorer = explorers.TemperatureExplorer(SCORES, labels=list("abcde"))
    path = tmp_path_factory.mktemp("frames") / "frames.json"
    exec(explorer_export.frame_code(path), {"Out": {cell.execution_count: explorer}})
    frames = json.loads(path.read_text())
    coursebuild.ensure_assets()
    root = tmp_path_factory.mktemp("html")
    shutil.copytree(coursebuild.ASSETS, root / "assets")  # as offline.build
    (page,) = coursebuild.export(
        "html", [LESSON], root / "html", frames={LESSON: frames}
    )
    return page


def _state(explorer):
    return {
        "src": explorer.locator("img").get_attribute("src"),
        "alt": explorer.locator("img").get_attribute("alt"),
        "said": explorer.locator(".course-explorer-description").text_content(),
        "valuetext": explorer.locator("input[type=range]").get_attribute(
            "aria-valuetext"
        ),
    }


def test_keyboard_moves_the_slider_and_the_description_follows(
    browser, page_with_frames
):
    context, page, problems = offline_page(browser)
    try:
        page.goto(page_with_frames.as_uri())
        explorer = page.locator(".course-explorer")
        assert explorer.count() == 1
        slider = page.get_by_role("slider", name="temperature")  # label for=
        assert slider.count() == 1
        for _ in range(400):  # Tab through the page until the slider has focus
            page.keyboard.press("Tab")
            if slider.evaluate("(s) => s === document.activeElement"):
                break
        else:
            pytest.fail("Tab never reached the explorer's slider")
        outline = slider.evaluate(
            "(s) => { const c = getComputedStyle(s); "
            "return [c.outlineStyle, parseFloat(c.outlineWidth)]; }"
        )
        assert outline[0] != "none" and outline[1] >= 2, outline  # focus visible
        before = _state(explorer)
        assert before["alt"] == before["said"] and "temperature 1," in before["alt"]
        assert float(before["valuetext"]) == 1.0
        live = explorer.locator(".course-explorer-description")
        assert live.get_attribute("aria-live") == "polite"
        page.keyboard.press("ArrowRight")
        after = _state(explorer)
        assert after["src"] != before["src"], "the frame did not change"
        assert after["alt"] != before["alt"], "the description did not change"
        assert after["said"] == after["alt"]
        value = float(after["valuetext"])  # the next temperature, read as text
        assert value > 1 and f"temperature {value:g}," in after["alt"]
        page.keyboard.press("ArrowLeft")
        assert _state(explorer) == before
        assert problems == [], problems[:5]
    finally:
        context.close()
