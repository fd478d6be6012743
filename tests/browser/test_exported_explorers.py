"""An exported explorer, by keyboard only: reach its slider with Tab from its
cell, see the focus, move it with the arrow keys, and see the frame AND its
description change.

Lesson 01's page is built with frames written as make html writes them: by the
export's kernel code (explorer_export.FRAME_CODE) after the explorer's cell, in a
kernel (pagebuild.execute_with_frames), here a two-cell notebook that makes a
real TemperatureExplorer (running all of lesson 01 cost about 13 s more; nbval
runs the lesson itself). This is make test-browser's one run of that kernel path.
"""

import shutil

import nbformat
import numpy as np
import pytest

from tools import coursebuild, explorer_export, pagebuild

from .offline import offline_page

pytestmark = pytest.mark.browser

LESSON = coursebuild.NOTEBOOKS / "01_one_query.ipynb"
SCORES = np.array([0.8, 0.3, 1.3, -0.4, -1.0])


@pytest.fixture(scope="module")
def page_with_frames(tmp_path_factory):
    lesson = nbformat.read(LESSON, as_version=4)
    cell = next(c for c in lesson.cells if explorer_export.is_explorer_cell(c))
    run = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "import numpy as np\nfrom helpers import explorers"
            ),
            nbformat.v4.new_code_cell(
                f"explorers.TemperatureExplorer(np.array({SCORES.tolist()}), "
                "labels=list('abcde'))"
            ),
        ]
    )
    # the explorer is Out[2] in the kernel, Out[n] in the lesson
    (frames,) = pagebuild.execute_with_frames(run, LESSON).values()
    pagebuild.ensure_assets()
    root = tmp_path_factory.mktemp("html")
    shutil.copytree(pagebuild.ASSETS, root / "assets")  # as offline.build
    (page,) = pagebuild.export(
        "html",
        [LESSON],
        root / "html",
        frames={LESSON: {str(cell.execution_count): frames}},
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
        # start at the explorer's cell (tabbing from the top of the page through
        # its 280 stops took 8 s; that Tab reaches every control of this page,
        # in order, is test_html_pages.py's keyboard test), then Tab to the slider
        explorer.evaluate(
            "(e) => e.closest('.jp-Cell').querySelector('.jp-Cell-inputWrapper')"
            ".focus()"
        )
        for _ in range(400):  # Tab until the slider has focus
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
