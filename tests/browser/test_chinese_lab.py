"""The Chinese edition's first screen: `make lab-zh` in a fresh browser profile.

The server is started as `make lab-zh` starts it (tools/lab.py with ``--zh``:
the project's settings plus JupyterLab's display language, the Chinese
student copy of lesson 00 as the first screen) on a temporary copy of the
lessons, with a fresh HOME and Jupyter dirs: nothing a learner set before can
make the menus Chinese, only the course's own settings. The test follows the
URL the server printed and checks the English first screen's promises in
Chinese: JupyterLab's menus are Chinese, Chinese lesson 00 is in view with its
exercise unsolved, no popup covers it.
"""

import os
import re
import secrets
import shutil
import subprocess

import nbformat
import pytest

from .conftest import ARTIFACTS, REPO, _free_port, _missing_browser

pytestmark = pytest.mark.browser

# JupyterLab's top menus as jupyterlab-language-pack-zh-CN names them
MENUS_ZH = {"文件", "编辑", "查看", "运行", "内核", "标签页", "设置", "帮助"}
MENUS_EN = {"File", "Edit", "View", "Run", "Kernel", "Tabs", "Settings", "Help"}


@pytest.fixture(scope="module")
def lab_zh(tmp_path_factory):
    """JupyterLab as `make lab-zh` starts it; yields (token, root, printed URL)."""
    from tools import coursebuild
    from tools import lab as course_lab

    reason = _missing_browser()
    if reason:
        pytest.fail(f"browser test cannot run: {reason}")
    first = REPO / "notebooks" / course_lab.FIRST_LESSON_ZH
    assert first.exists(), f"{first} is missing (make notebooks-zh)"
    home = tmp_path_factory.mktemp("lab-zh")
    root = home / "notebooks"
    shutil.copytree(REPO / "notebooks", root, ignore=shutil.ignore_patterns(".*"))
    coursebuild.write_present_copies(root / "present" / "zh", source=root / "zh")
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "HOME": str(home / "home"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
    }
    env.pop("COURSE_LANG", None)  # the lessons' folder alone makes them Chinese
    extra = [
        "--no-browser",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
    ]
    if os.geteuid() == 0:
        extra.append("--allow-root")
    cmd = course_lab.command(root=root, extra=extra, zh=True)
    log_path = home / "server.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            course_lab.wait_until_answering(
                f"{base}/api/status?token={token}", server, 60, log=log_path
            )
            text = log_path.read_text()
            printed = re.findall(rf"http://127\.0\.0\.1:{port}/\S+", text)
            yield token, root, printed[0] if printed else None
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


@pytest.mark.slow
@pytest.mark.zh
def test_chinese_first_screen_has_chinese_menus_and_lesson_00(lab_zh, browser):
    token, root, printed = lab_zh
    assert printed, "JupyterLab printed no URL"
    assert "/lab/tree/zh/student/00_start_here.ipynb" in printed, printed
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        page.goto(printed.replace("token=...", f"token={token}"))
        page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").first.wait_for(
            timeout=120_000
        )
        page.get_by_text(re.compile(r"Python 3 \(ipykernel\) \| 空闲")).wait_for(
            timeout=120_000
        )
        page.wait_for_timeout(1500)  # give a news prompt time to appear
        menus = set(page.locator(".lm-MenuBar-itemLabel").all_inner_texts())
        assert MENUS_ZH <= menus, menus
        assert not MENUS_EN & menus, menus
        title = page.locator(".jp-mod-current .lm-TabBar-tabLabel").first.inner_text()
        assert title.startswith("00_start_here"), title
        text = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").inner_text()
        lesson = nbformat.read(root / "zh" / "00_start_here.ipynb", as_version=4)
        heading = lesson.cells[0].source.splitlines()[0].lstrip("# ").strip()
        assert heading.startswith("第 00 课"), heading
        assert heading in text, "Chinese lesson 00's title is not in view"
        for cell in lesson.cells:
            if "solution" not in cell.metadata.get("tags", []):
                continue
            solved = cell.source.split("# BEGIN SOLUTION")[1].split("# END")[0]
            for line in solved.strip().splitlines():
                if len(line.strip()) > 12:
                    assert line.strip() not in text, f"a solution is in view: {line}"
        assert "NotImplementedError" in text
        toasts = page.locator(".jp-toast-container .Toastify__toast")
        assert toasts.count() == 0, toasts.first.inner_text()
        assert page.locator(".jp-Dialog").count() == 0
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "first_screen_zh.png"))
    finally:
        context.close()


# -- the Chinese decks: the English decks' measures ------------------------------------

# The English measure counts words; a Chinese sentence has no spaces, so its
# prose is counted as Latin words plus 0.6 per Chinese character (60 words of
# English come out as about 100 characters of Chinese).
WORDS_JS = "words += (text.match(/[^\\W_][\\w'’.-]*/gu) || []).length;"
WORDS_ZH_JS = (
    "{ const han = (text.match(/\\p{Script=Han}/gu) || []).length;"
    " const latin = (text.replace(/\\p{Script=Han}/gu, ' ')"
    ".match(/[^\\W_][\\w'’.-]*/gu) || []).length;"
    " words += latin + Math.round(0.6 * han); }"
)


@pytest.fixture(scope="module")
def zh_decks(tmp_path_factory):
    """Every Chinese lesson's deck, built from notebooks/zh/ beside the assets."""
    from tools import i18n_build

    from .offline import build

    paths = i18n_build.zh_lessons()
    assert len(paths) == 14, f"{len(paths)} Chinese lessons (make notebooks-zh)"
    return build("slides", tmp_path_factory, paths=paths)


@pytest.mark.slow
@pytest.mark.zh
def test_every_chinese_slide_is_a_slide(browser, zh_decks):
    """The English decks' measures (tests/browser/test_slides.py) on the Chinese
    decks at 1280x800: nothing overflows, clips or scrolls, text >= 24 px, code
    >= 20 px, at most 60 words of prose (Chinese counted as above), notes where
    a slide shortens the lesson; the page's language is zh-CN; no formula in a
    list is broken at less than its line's width (tests/browser/slide_math.py:
    the cause of lesson 04's slide 2 overflowing, fixed in the template)."""
    from .offline import offline_page
    from .slide_math import narrow_formulas
    from .test_slides import EVERY_SLIDE, slide_problems

    assert WORDS_JS in EVERY_SLIDE, "test_slides.py counts words another way now"
    measure = EVERY_SLIDE.replace(WORDS_JS, WORDS_ZH_JS)
    report = []
    for deck in zh_decks:
        assert '<html lang="zh-CN"' in deck.read_text(encoding="utf-8"), deck.name
        context, page, problems = offline_page(browser, 1280, 800)
        try:
            page.goto(deck.as_uri())
            page.wait_for_function(
                "() => window.Reveal && Reveal.isReady()", timeout=30_000
            )
            slides = page.evaluate(measure, None)
            assert len(slides) >= 5, f"{deck.name}: {len(slides)} slides"
            for slide in slides:
                bad = slide_problems(deck, slide)
                if bad:
                    report.append(f"{deck.name} {slide['where']} {', '.join(bad)}")
            report += [f"{deck.name} {p}" for p in problems]
            if deck.stem.startswith("01"):
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                page.evaluate("() => Reveal.slide(3, 0)")
                page.screenshot(path=str(ARTIFACTS / "slides_zh_01_3_0.png"))
            report += [f"{deck.name} {p}" for p in narrow_formulas(page)]
        finally:
            context.close()
    assert not report, f"{len(report)} slides are not slides:\n" + "\n".join(
        report[:30]
    )


@pytest.mark.slow
@pytest.mark.zh
def test_every_chinese_deck_image_has_a_chinese_description(zh_decks):
    """No <img> of a Chinese deck without a Chinese description (the pages'
    rule, tests/browser/test_chinese_pages.py)."""
    from .alt_text import assert_every_image_described
    from .test_chinese_pages import bad_zh_alt

    assert_every_image_described(zh_decks, "Chinese deck", bad_zh_alt)
