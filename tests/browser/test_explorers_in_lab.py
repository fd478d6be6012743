"""Each lesson with an explorer, opened in JupyterLab in headless Chromium.

The test opens the lesson as a learner finds it (every stored output drawn by
JupyterLab), runs each explorer cell and the earlier cells it needs (read from
the code by ``tests/course/cell_deps.py``; every cell of every lesson is nbval's to
run, and the JupyterHub class test runs all of lesson 01's student copy in
JupyterLab), then moves each explorer's first slider with the keyboard. It
asserts that those cells ran, in order, without an error, that every explorer
rendered as a live widget (not the fallback text shown when widgets do not
load), and that moving the slider changed both the readout and the plot image.
A screenshot per lesson lands in test-artifacts/browser/.

Lessons 09, 10 and 11 train a model before their explorers, and lessons 12 and
13 are long pages whose explorers are the same render engine again (their
Python side is driven directly in tests/explorers): all five are ``slow`` (make
test-slow, which CI runs), and so are lessons 04 and 07 (d_k and scale, heads:
the other kinds of explorer the engine first had), since 2026-12-02. make
test-browser drives lesson 01's (temperature)."""

import re

import nbformat
import pytest

from tests.course.cell_deps import cell_names, with_dependencies
from tools import explorer_export

from .conftest import ARTIFACTS, LESSON_01, REPO

pytestmark = pytest.mark.browser


def _explorer_cells(path):
    nb = nbformat.read(path, as_version=4)
    return nb, [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        and explorer_export.EXPLORER_CELL.search(cell.source)
    ]


# every lesson with an explorer; make test-browser drives lesson 01's, make
# test-slow the others' (04 and 07 were in make test until 2026-12-02)
LESSONS = [
    pytest.param(path.name, marks=[] if path.name == LESSON_01 else [pytest.mark.slow])
    for path in sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if _explorer_cells(path)[1]
]

# Runs the cells at these indices one after another in the lesson on screen,
# their stored execution counts cleared first (the promise is not awaited: the
# test waits for the outcome itself).
RUN_CELLS = """async (indices) => {
  const notebook = jupyterapp.shell.currentWidget.content;
  for (const i of indices) notebook.widgets[i].model.executionCount = null;
  for (const i of indices) {
    notebook.activeCellIndex = i;
    await jupyterapp.commands.execute('notebook:run-cell');
  }
}"""

# [execution count, any error output] of each cell at these indices
CELL_RESULTS = """(indices) => {
  const notebook = jupyterapp.shell.currentWidget.content;
  return indices.map(i => {
    const model = notebook.widgets[i].model;
    const outputs = model.outputs.toJSON();
    return [model.executionCount,
            outputs.filter(o => o.output_type === 'error')
              .map(o => o.ename + ': ' + o.evalue).join('\\n')];
  });
}"""

OUTPUT_TEXTS = """(indices) => {
  const notebook = jupyterapp.shell.currentWidget.content;
  return indices.flatMap(i => [...notebook.widgets[i].node.querySelectorAll(
    '.jp-OutputArea-output')].map(e => e.innerText));
}"""


def _explorer_state(explorer):
    return (
        explorer.locator("img.widget-image").get_attribute("src"),
        explorer.locator(".widget-html-content").first.inner_text(),
    )


def _wait_for_change(page, explorer, before, timeout_s=15):
    """Wait until the picture and the readout both changed (two kernel messages)."""
    for _ in range(int(timeout_s / 0.25)):
        after = _explorer_state(explorer)
        if after[0] != before[0] and after[1] != before[1]:
            return True
        page.wait_for_timeout(250)
    return False


def _cells_for_explorers(nb, explorer_cells):
    """The explorer cells and the earlier cells they need (course/cell_deps.py)."""
    return with_dependencies(
        nb, {i: cell_names(nb.cells[i].source) for i in explorer_cells}
    )


def _run_cells(page, run, lesson, fresh=True):
    """Run the cells at indices ``run`` in the lesson on screen, in order, and
    assert that each ran, once, without an error (in a ``fresh`` kernel, as its
    first cells; else as the kernel's next ones)."""
    page.evaluate(f"(indices) => {{ ({RUN_CELLS})(indices); }}", run)
    # the kernel numbers the cells in the order they ran; an error stops the
    # queue (asked twice a second, not at every frame)
    page.wait_for_function(
        f"""(indices) => {{
              const results = ({CELL_RESULTS})(indices);
              return results.some(([count, error]) => error)
                || results.every(([count, error], k) => count === k + 1)
                || (!{str(fresh).lower()}
                    && results.every(([count, error]) => count !== null));
           }}""",
        arg=run,
        polling=500,
        timeout=300_000,
    )
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)
    results = page.evaluate(CELL_RESULTS, run)
    errors = [(i, error) for i, (_, error) in zip(run, results, strict=True) if error]
    assert not errors, f"{lesson}: cell {errors[0][0]} raised {errors[0][1]}"
    counts = [count for count, _ in results]
    first = 1 if fresh else counts[0]
    assert first and counts == list(range(first, first + len(run))), (
        f"{lesson}: ran {counts}"
    )


# Opens a lesson in the JupyterLab already in the page, as a learner double-
# clicks it in the file browser (a new tab, a new kernel)
OPEN_LESSON = """(path) => jupyterapp.commands.execute('docmanager:open', {path})
  .then(() => {})"""

# The lesson on screen is ``path`` and its kernel is idle (false while the page
# is still loading JupyterLab: window.jupyterapp is set late in its start-up)
LESSON_READY = """(path) => {
  const widget = window.jupyterapp?.shell?.currentWidget;
  return widget?.context?.path === path && widget.context.isReady
    && widget.sessionContext.session?.kernel
    && widget.sessionContext.kernelDisplayStatus === 'idle';
}"""

# Closes every tab and shuts its kernel down, for the next lesson's fresh
# kernel (without the "save your work?" dialog: the server's copy is temporary);
# a kernel that will not shut down still has its tab closed
CLOSE_LESSONS = """async () => {
  for (const widget of [...jupyterapp.shell.widgets('main')]) {
    try { await widget.sessionContext?.shutdown(); } catch (e) {}
    widget.dispose();
  }
}"""


def close_lessons(page):
    """Leave ``page`` as the next lesson needs it: no dialog left open (one
    takes the keyboard focus), no tab, no kernel."""
    dialogs = page.locator(".jp-Dialog")
    for _ in range(5):
        if dialogs.count() == 0:
            break
        page.keyboard.press("Escape")
        page.wait_for_timeout(200)
    page.evaluate(CLOSE_LESSONS)


def open_and_run(page, lab, lesson):
    """Open ``lesson`` in ``page`` as a learner finds it and run its explorer
    cells and the cells they need (asserting that they ran, in order, without an
    error); return the lesson and the indices of its explorer cells.

    A page that already shows this JupyterLab opens the lesson in a new tab, as
    a learner opens the next lesson; any other page loads JupyterLab with the
    lesson, in a fresh workspace."""
    base, token, _, _ = lab
    nb, explorer_cells = _explorer_cells(REPO / "notebooks" / lesson)
    if page.url.startswith(f"{base}/lab"):
        page.evaluate(OPEN_LESSON, lesson)
    else:
        # ?reset: a fresh workspace, so no earlier lesson's tab is restored
        page.goto(f"{base}/lab/tree/{lesson}?token={token}&reset")
    # running a cell before the kernel is idle opens a "Select Kernel" dialog
    page.wait_for_function(LESSON_READY, arg=lesson, polling=250, timeout=90_000)
    _run_cells(page, _cells_for_explorers(nb, explorer_cells), lesson)
    return nb, explorer_cells


@pytest.fixture(scope="module")
def lab_page(lab, lab_context):
    """One JupyterLab page for the lessons opened here one after another, each
    closed and its kernel shut down after its test (lesson 01 has its own page,
    conftest.py's lesson_01_in_lab, which it shares with the axe check).

    A page per lesson loaded the whole app each time and left every kernel
    running: the seven lessons took 82 s and 105 s of CPU alone, against 63 s and
    75 s on one page (2026-12-03, calibrate 1.35 s)."""
    base, token, _, _ = lab
    page = lab_context.new_page()
    # a workspace of its own: lesson 01's page (same context, so the same local
    # storage) holds the default one, and JupyterLab would reload this page to
    # an automatic workspace while it starts
    page.goto(f"{base}/lab/workspaces/slow-lessons?token={token}&reset")
    page.wait_for_function("() => window.jupyterapp", polling=250, timeout=90_000)
    page.evaluate("() => jupyterapp.restored.then(() => {})")
    yield page
    page.close()


@pytest.mark.parametrize("lesson", LESSONS)
def test_explorer_slider_changes_plot(lab, lesson, request):
    # lesson 01 is opened and run once for this test and the axe check in
    # JupyterLab (tests/browser/conftest.py: lesson_01_in_lab)
    shared = lesson == LESSON_01
    if shared:
        page, (nb, explorer_cells) = request.getfixturevalue("lesson_01_in_lab")
    else:
        page = request.getfixturevalue("lab_page")
    try:
        if not shared:
            nb, explorer_cells = open_and_run(page, lab, lesson)

        outputs = page.evaluate(OUTPUT_TEXTS, explorer_cells)
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
        assert count == len(explorer_cells), f"{lesson}: {count} explorer widgets"
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
        try:
            # on failure too: the screenshot shows what the learner would have seen
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"{lesson[:-6]}.png"), full_page=False)
        finally:
            if not shared:
                close_lessons(page)


# the explorer's plot is part of the slide on screen (the deck hides the cells
# of other slides with visibility: hidden)
PLOT_SHOWN = """(img) => img.getBoundingClientRect().width > 0
  && getComputedStyle(img).visibility === 'visible'"""


def test_first_screen_is_lesson_00_with_no_solution_and_no_popup(lab, browser):
    """A fresh profile (and HOME) following the URL `make lab` prints."""
    base, token, root, printed = lab
    assert printed, "JupyterLab printed no URL"
    assert "/lab/tree/student/00_start_here.ipynb" in printed, printed
    url = printed.replace("token=...", f"token={token}")
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        page.goto(url)
        page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=120_000)
        page.wait_for_timeout(1500)  # give a news prompt time to appear
        title = page.locator(".jp-mod-current .lm-TabBar-tabLabel").first.inner_text()
        assert title.startswith("00_start_here"), title
        text = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").inner_text()
        assert "Lesson 00" in text
        lesson = nbformat.read(root / "00_start_here.ipynb", as_version=4)
        for cell in lesson.cells:
            if "solution" not in cell.metadata.get("tags", []):
                continue
            solved = cell.source.split("# BEGIN SOLUTION")[1].split("# END")[0]
            for line in solved.strip().splitlines():
                if len(line.strip()) > 12:
                    assert line.strip() not in text, f"a solution is in view: {line}"
        assert "Exercise: replace this line" in text or "NotImplementedError" in text
        toasts = page.locator(".jp-toast-container .Toastify__toast")
        assert toasts.count() == 0, toasts.first.inner_text()
        assert page.locator(".jp-Dialog").count() == 0
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "first_screen.png"))
    finally:
        context.close()


def _slide_starts(nb, upto):
    """Indices of the cells that start a slide or sub-slide, up to cell ``upto``."""
    return [
        i
        for i, cell in enumerate(nb.cells[: upto + 1])
        if cell.metadata.get("slideshow", {}).get("slide_type") in ("slide", "subslide")
    ]


PRESENT_01 = f"present/{LESSON_01}"


def test_live_slides_move_an_explorer(lab, lesson_01_in_lab):
    """jupyterlab-slideshow: open lesson 01's presenting copy, run its explorer
    (and what it needs), present it with the kernel running from two slides
    before the explorer's, press Space to the explorer's slide, move its slider.

    The copy opens in lesson_01_in_lab's JupyterLab, on the kernel that ran the
    lesson's explorer and the cells it needs (the copy's code cells are the
    lesson's, test markers stripped: tests/course/test_builds.py), so only the
    copy's explorer runs here; the tab is closed and the lesson's brought back
    afterwards, for the tests that share the page. (A page and kernel of its own,
    the cells run again, cost about 8 s; starting at slide 1 cost 33 presses,
    7 s; the static deck test pages every slide of every deck.)"""
    _, _, root, _ = lab
    page, _ = lesson_01_in_lab
    lesson = page.evaluate("() => jupyterapp.shell.currentWidget.id")
    page.set_viewport_size({"width": 1280, "height": 800})
    try:
        page.evaluate(
            """(path) => {
                 const kernel = jupyterapp.shell.currentWidget.sessionContext
                   .session.kernel;
                 return jupyterapp.commands.execute(
                   'docmanager:open', {path, kernel: {id: kernel.id}}).then(() => {});
               }""",
            PRESENT_01,
        )
        page.wait_for_function(
            """([path, lesson]) => {
                 const widget = jupyterapp.shell.currentWidget;
                 const lessonKernel = jupyterapp.shell.widgets('main')
                   .find(w => w.id === lesson).sessionContext.session.kernel.id;
                 return widget.context?.path === path
                   && widget.sessionContext.session?.kernel?.id === lessonKernel
                   && widget.sessionContext.kernelDisplayStatus === 'idle';
               }""",
            arg=[PRESENT_01, lesson],
            polling=100,
            timeout=90_000,
        )
        nb, explorer_cells = _explorer_cells(root / PRESENT_01)
        _run_cells(page, explorer_cells, "present/01", fresh=False)
        image = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) img.widget-image")
        image.first.wait_for(state="attached", timeout=60_000)
        # start presenting two slides before the explorer's (the deck starts at
        # the active cell), then press Space to it as a presenter would
        start = _slide_starts(nb, explorer_cells[0])[-3]
        page.evaluate(
            "(i) => { jupyterapp.shell.currentWidget.content.activeCellIndex = i; }",
            start,
        )
        page.evaluate("() => jupyterapp.commands.execute('deck:start')")
        page.wait_for_function(
            "() => document.body.dataset.jpDeckMode === 'presenting'", timeout=30_000
        )
        plot = image.first
        assert not plot.evaluate(PLOT_SHOWN), "the deck started on the explorer"
        page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").focus()
        for _ in range(20):  # Space: down a sub-slide, else forward
            if plot.evaluate(PLOT_SHOWN):
                break
            page.keyboard.press("Space")
            page.wait_for_timeout(150)
        assert plot.evaluate(PLOT_SHOWN), "never reached the explorer's slide"
        plot.scroll_into_view_if_needed()  # a tall slide: the presenter scrolls
        explorer = page.locator(
            ".jp-NotebookPanel:not(.lm-mod-hidden) .widget-vbox:has(> img.widget-image)"
        ).first
        before = _explorer_state(explorer)
        handle = explorer.locator(".widget-slider .noUi-handle").first
        handle.focus()
        handle.press("ArrowRight")
        assert _wait_for_change(page, explorer, before, timeout_s=60), (
            "the plot did not change in the live slide"
        )
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "live_slide_01.png"))
    finally:
        page.evaluate(
            """async (lesson) => {
                 if (document.body.dataset.jpDeckMode === 'presenting')
                   await jupyterapp.commands.execute('deck:stop');
                 const copy = jupyterapp.shell.currentWidget;
                 if (copy.id !== lesson) copy.dispose();
                 jupyterapp.shell.activateById(lesson);
               }""",
            lesson,
        )
        page.set_viewport_size({"width": 1400, "height": 1000})
