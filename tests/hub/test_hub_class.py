"""A class of two students on a real JupyterHub (hub/jupyterhub_config.py).

Two students at once, each in their own browser context of one headless
Chromium: log in, follow the nbgitpuller link of the README (here pointing at a
local clone of this repository), get lesson 01's student copy in JupyterLab,
add a cell of their own, Run All (which runs up to the first unsolved exercise,
as it does for a real student), move the temperature slider and see the plot
change, save. Then:

- each student's home holds their own edit and nobody else's, and the hub
  refuses a student's request for another student's files;
- the instructor pushes an update (lesson 01 and lesson 02 changed, a file
  added) and every student clicks the link again: nbgitpuller brings the new
  file and the untouched lesson 02 up to date and keeps the student's edited
  lesson 01 (its merge keeps local changes, `-Xours`).

Two students prove what six did (until 2026-12-01) and cost a third: two
servers spawned and running at once, each home holding only its own student's
edit while the other's was written at the same time, each student refused the
other's files, and the second pull taken both ways (the first student in the
browser, the second through the API the link's page calls). A third or sixth
student repeats one of these paths; their cost was a JupyterLab server and a
kernel running lesson 01 each, on two cores. How many students a server holds is
benchmarks/class_capacity.py's question, not this test's.

Screenshots land in test-artifacts/hub/.
"""

import asyncio
import concurrent.futures
import json
import re
import time
import urllib.parse

import pytest

from tools.chromium import CHROMIUM_ARGS

from .conftest import REPO, git

pytestmark = [pytest.mark.browser, pytest.mark.slow]

STUDENTS = ["student1", "student2"]  # two at once: see the docstring
LESSON = "notebooks/student/01_one_query.ipynb"
ARTIFACTS = REPO / "test-artifacts" / "hub"

LAB_SETTINGS = {
    # no news / update toasts over the notebook
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    # every cell in the page, so the explorer can be scrolled to
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {
        "windowingMode": "none"
    },
}

# An error output: stderr text naming an error (Run All stops at the first).
IS_ERROR = """e => e.matches(
    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
  && /(Error|Exception)\\b/.test(e.innerText)"""

# Run All is done: an error output, or every code cell ran
RUN_ALL_DONE = f"""() => {{
  const panel = '.jp-NotebookPanel:not(.lm-mod-hidden) ';
  const outputs = [...document.querySelectorAll(panel + '.jp-OutputArea-output')];
  if (outputs.some({IS_ERROR})) return true;
  const prompts = [...document.querySelectorAll(
    panel + '.jp-CodeCell .jp-InputPrompt')];
  return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
}}"""

CELL_STATES = f"""() => [...document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell')].map(c => ({{
  prompt: c.querySelector('.jp-InputPrompt').textContent,
  source: c.querySelector('.jp-InputArea-editor').innerText,
  error: [...c.querySelectorAll('.jp-OutputArea-output')].some({IS_ERROR}),
  text: [...c.querySelectorAll('.jp-OutputArea-output')]
    .map(e => e.innerText).join('\\n'),
}}))"""


def pull_link(hub_url, repo):
    query = urllib.parse.urlencode(
        {
            "repo": f"file://{repo}",
            "branch": "main",
            "urlpath": f"lab/tree/{repo.name}/{LESSON}",
        }
    )
    return f"{hub_url}/hub/user-redirect/git-pull?{query}"


def write_lab_settings(home):
    for name, value in LAB_SETTINGS.items():
        path = home / ".jupyter" / "lab" / "user-settings" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))


async def _explorer_state(explorer):
    return (
        await explorer.locator("img.widget-image").get_attribute("src"),
        await explorer.locator(".widget-html-content").first.inner_text(),
    )


async def open_lab(page, link):
    await page.goto(link, timeout=180_000)
    await page.wait_for_url(re.compile(r"/lab/"), timeout=180_000)
    await page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=180_000)


async def student_session(browser, hub, name, link):
    """One student's lesson; returns what the test asserts on."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await context.new_page()
    result = {"name": name, "t": [("start", time.monotonic())]}
    mark = lambda what: result["t"].append((what, time.monotonic()))  # noqa: E731
    try:
        await page.goto(f"{hub['url']}/hub/login", timeout=60_000)
        await page.fill("input[name=username]", name)
        await page.fill("input[name=password]", hub["password"])
        await page.click("input[type=submit], button[type=submit]")
        await page.wait_for_url(re.compile(r"/(hub/spawn|user/|hub/home)"))
        mark("login")
        await open_lab(page, link)
        mark("lab open")
        # nbgrader is the instructor's: no menu of it in a student's Lab
        nbgrader_menu = page.locator("li.lm-MenuBar-item:has-text('Nbgrader')")
        result["nbgrader_menus"] = await nbgrader_menu.count()

        # the student's own cell, below the title: toolbar button, then typed
        # into its editor once the editor has the focus (keys typed in command
        # mode would be shortcuts)
        panel = ".jp-NotebookPanel:not(.lm-mod-hidden)"
        cells = page.locator(f"{panel} .jp-Notebook .jp-Cell")
        count = await cells.count()
        await cells.first.click()
        await page.click(
            f"{panel} .jp-Toolbar [data-command='notebook:insert-cell-below']"
        )
        await page.wait_for_function(
            f"() => document.querySelectorAll('{panel} .jp-Notebook .jp-Cell')"
            f".length === {count + 1}"
        )
        editor = page.locator(f"{panel} .jp-Cell.jp-mod-active .cm-content")
        await editor.click()
        await page.locator(f"{panel} .jp-Notebook.jp-mod-editMode").wait_for()
        mine = f"edited_by_{name} = {len(name)}"
        await page.keyboard.type(mine)
        assert await editor.inner_text() == mine, await editor.inner_text()
        await page.keyboard.press("Escape")

        await page.click("li.lm-MenuBar-item:has-text('Run')")
        await page.click("li.lm-Menu-item:has-text('Run All Cells')")
        # the student copy stops at the first exercise, with the checker's message
        await page.wait_for_function(RUN_ALL_DONE, polling=500, timeout=300_000)
        await page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=120_000)
        result["cells"] = await page.evaluate(CELL_STATES)
        mark("run all")

        explorer = page.locator(
            ".jp-NotebookPanel:not(.lm-mod-hidden) .widget-vbox:has(> img.widget-image)"
        ).first
        await explorer.scroll_into_view_if_needed(timeout=60_000)
        before = await _explorer_state(explorer)
        slider = explorer.locator(".widget-slider").first
        handle = slider.locator(".noUi-handle")
        readout = slider.locator(".widget-readout")
        value = await readout.inner_text()
        await handle.focus()
        await handle.press("ArrowRight")
        await handle.press("ArrowRight")
        if await readout.inner_text() == value:  # at its maximum: go back
            await handle.press("ArrowLeft")
            await handle.press("ArrowLeft")
        result["readout"] = (value, await readout.inner_text())
        after = before
        for _ in range(240):  # the kernel recomputes and sends a new PNG
            after = await _explorer_state(explorer)
            # the readout text and the picture arrive as two messages: wait for both
            if after[0] != before[0] and after[1] != before[1]:
                break
            await page.wait_for_timeout(250)
        result["plot"] = (before, after)
        mark("slider")

        await page.keyboard.press("Control+s")
        await page.wait_for_timeout(500)
        dirty = page.locator(".jp-mod-dirty").first
        await dirty.wait_for(state="detached", timeout=60_000)

        # another student's files, asked for with this student's login
        other = STUDENTS[(STUDENTS.index(name) + 1) % len(STUDENTS)]
        response = await context.request.get(
            f"{hub['url']}/user/{other}/api/contents/course/{LESSON}",
            max_redirects=0,
        )
        result["other_status"] = response.status
        result["other_body"] = (await response.text())[:2000]
        mark("saved")
        return result
    finally:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
        result["context"] = context


async def second_pull(hub, repo, name, context, link):
    """The link again: one student in the browser, the others through the API
    the link's page calls (the same pull, without reloading JupyterLab)."""
    if name == STUDENTS[0]:
        await open_lab(context.pages[0], link)
        return "finished"
    query = urllib.parse.urlencode(
        {"repo": f"file://{repo}", "branch": "main", "targetpath": repo.name}
    )
    response = await context.request.get(
        f"{hub['url']}/user/{name}/git-pull/api?{query}", timeout=180_000
    )
    body = await response.text()
    assert response.ok, f"{name}: second pull: HTTP {response.status}\n{body[:2000]}"
    phases = re.findall(r'"phase": "(\w+)"', body)
    return phases[-1] if phases else body[:2000]


async def run_class(hub, repo, chromium, update_upstream):
    from playwright.async_api import async_playwright

    link = pull_link(hub["url"], repo)
    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=str(chromium), headless=True, args=CHROMIUM_ARGS
        )
        try:
            results = await asyncio.gather(
                *(student_session(browser, hub, name, link) for name in STUDENTS),
                return_exceptions=True,
            )
            failures = [r for r in results if isinstance(r, BaseException)]
            if not failures:
                update_upstream()
                pulls = await asyncio.gather(
                    *(
                        second_pull(hub, repo, r["name"], r["context"], link)
                        for r in results
                    )
                )
                for r, phase in zip(results, pulls, strict=True):
                    r["second_pull"] = phase
            return results, failures
        finally:
            await browser.close()


def test_two_students_pull_run_and_keep_their_own_work(hub, course_repo, chromium_path):
    for name in STUDENTS:
        write_lab_settings(hub["homes"] / name)
    lesson_02 = course_repo / "notebooks/student/02_matrix_form.ipynb"
    lesson_01 = course_repo / LESSON

    def update_upstream():
        """The instructor's next commit: a new file, lessons 01 and 02 changed."""
        (course_repo / "notebooks" / "week2.md").write_text("Week 2: read lesson 02.\n")
        for path in (lesson_01, lesson_02):
            nb = json.loads(path.read_text())
            nb["metadata"]["course_update"] = "week 2"
            path.write_text(json.dumps(nb, indent=1) + "\n")
        git("add", "-A", cwd=course_repo)
        git("commit", "-q", "-m", "week 2", cwd=course_repo)

    t0 = time.monotonic()
    # In a thread of its own: another test file in this pytest process may hold
    # Playwright's sync API open, whose event loop runs in the main thread.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        results, failures = pool.submit(
            asyncio.run, run_class(hub, course_repo, chromium_path, update_upstream)
        ).result()
    for r in results:
        if isinstance(r, dict):
            print(r["name"], [(w, round(t - t0, 1)) for w, t in r["t"]])
    print("second pull done", round(time.monotonic() - t0, 1))
    assert not failures, (
        f"a student's session failed: {failures[0]!r}\n"
        + hub["log"].read_text()[-4000:]
    )

    for r in results:
        name, cells = r["name"], r["cells"]
        # their own cell ran first, then every cell up to the first exercise
        assert cells[0]["source"].startswith(f"edited_by_{name}"), cells[0]["source"]
        errors = [i for i, c in enumerate(cells) if c["error"]]
        assert len(errors) == 1, f"{name}: expected one failing cell, got {errors}"
        first = errors[0]
        assert all(re.search(r"\[\d+\]", c["prompt"]) for c in cells[: first + 1]), name
        assert "check_" in cells[first]["source"], (
            f"{name}: Run All stopped before the first check cell: "
            f"{cells[first]['source'][:200]}\n{cells[first]['text'][:2000]}"
        )
        assert (
            "NotImplementedError" in cells[first]["text"]
            or "Exercise" in (cells[first]["text"])
        ), cells[first]["text"][:2000]
        explorer_cells = [i for i, c in enumerate(cells) if "Explorer(" in c["source"]]
        assert explorer_cells and explorer_cells[0] < first, f"{name}: no explorer ran"
        before, after = r["plot"]
        assert r["readout"][0] != r["readout"][1], f"{name}: the slider did not move"
        assert before[0] and before[0].startswith("blob:"), f"{name}: no plot image"
        assert after[0] != before[0], f"{name}: the plot did not change"
        assert after[1] != before[1], f"{name}: the readout did not change"
        # the hub does not hand one student's files to another
        assert r["other_status"] in (302, 403, 404), (
            f"{name} could read another student's lesson: {r['other_status']}"
        )
        assert "edited_by_" not in r["other_body"]
        assert r["nbgrader_menus"] == 0, f"{name} sees nbgrader's menu"
        assert r["second_pull"] == "finished", (
            f"{name}: second pull: {r['second_pull']}"
        )

    for name in STUDENTS:
        home = hub["homes"] / name / "course"
        mine = (home / LESSON).read_text()
        # their saved lesson: their cell and its run, nobody else's cell
        assert f"edited_by_{name}" in mine
        others = [o for o in STUDENTS if o != name and f"edited_by_{o} " in mine]
        assert not others, f"{name}'s lesson 01 holds {others}'s edit"
        saved = json.loads(mine)
        assert any(c.get("outputs") for c in saved["cells"] if c["cell_type"] == "code")
        # the second pull: new upstream files arrive, untouched lessons update,
        # the student's edited lesson stays theirs
        assert (home / "notebooks" / "week2.md").exists(), f"{name}: no update pulled"
        lesson_02_now = json.loads(
            (home / "notebooks/student/02_matrix_form.ipynb").read_text()
        )
        assert lesson_02_now["metadata"].get("course_update") == "week 2", (
            f"{name}: lesson 02 not updated"
        )
        assert f"edited_by_{name}" in (home / LESSON).read_text(), (
            f"{name}: the second pull overwrote the student's lesson 01"
        )
        log = git("log", "--format=%s", cwd=home)
        assert "week 2" in log, f"{name}: upstream commit not merged:\n{log}"
