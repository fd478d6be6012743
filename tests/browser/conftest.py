"""A real JupyterLab, started for the browser tests and stopped after them.

The server is started the way `make lab` starts it (tools/lab.py: the project's
settings in jupyter/overrides.json, lesson 00 as the first screen), listens on
127.0.0.1 with a random port and a random token, serves a temporary copy of the
lessons (so that autosave never touches the committed notebooks), and keeps
HOME, settings, workspaces and runtime files in a temporary folder.
"""

import os
import re
import secrets
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from tools.chromium import CHROMIUM, CHROMIUM_ARGS

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "browser"
# opened and run once in JupyterLab for the explorer test and the axe check
LESSON_01 = "01_one_query.ipynb"


def _missing_browser():
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return (
            "the playwright package is not installed (pip install -r requirements.txt)"
        )
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (Debian: apt-get install chromium)"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _missing_browser()
    if reason is None:
        return
    if os.environ.get("CI"):
        return  # in CI a missing browser is a failure, reported by the fixture
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=f"browser test skipped: {reason}"))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """Start JupyterLab as `make lab` does; yield (base_url, token, root, url).

    The command is tools.lab's (the project's settings, lesson 00 as the first
    screen) on a copy of notebooks/ (autosave never touches the committed
    lessons), with a fresh HOME and Jupyter dirs, a random port and token, and
    the app exposed to the page (window.jupyterapp) so tests can run commands.
    ``url`` is the URL the server printed, as a learner would follow it.
    """
    from tools import coursebuild
    from tools import lab as course_lab

    reason = _missing_browser()
    if reason:
        pytest.fail(f"browser test cannot run in CI: {reason}")
    home = tmp_path_factory.mktemp("lab")
    root = home / "notebooks"
    shutil.copytree(REPO / "notebooks", root, ignore=shutil.ignore_patterns(".*"))
    coursebuild.write_present_copies(root / "present", source=root)  # as make lab
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "HOME": str(home / "home"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
    }
    extra = [
        "--no-browser",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        "--LabApp.expose_app_in_browser=True",
    ]
    if os.geteuid() == 0:
        extra.append("--allow-root")
    cmd = course_lab.command(root=root, extra=extra)
    log_path = home / "server.log"
    log = open(log_path, "w")  # noqa: SIM115 (closed below)
    server = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        course_lab.wait_until_answering(
            f"{base}/api/status?token={token}", server, 180, log=log_path
        )
        printed = re.findall(rf"http://127\.0\.0\.1:{port}/\S+", log_path.read_text())
        yield base, token, root, printed[0] if printed else None
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield b
        b.close()


@pytest.fixture(scope="session")
def lab_context(browser):
    """One browser context for the tests that open lessons in JupyterLab.

    Its HTTP and script caches let every page after the first load JupyterLab's
    bundles from memory; a new context per page fetched and compiled them again.
    Lesson 01's page opens JupyterLab with ``?reset`` (a fresh workspace); the
    slow lessons share one page and open each lesson in a new tab, closing the
    last one and shutting down its kernel (test_explorers_in_lab.py: lab_page).
    (The first-screen test makes its own context: a profile that has seen nothing.)
    """
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    yield context
    context.close()


@pytest.fixture(scope="session")
def lesson_01_in_lab(lab, lab_context):
    """Lesson 01 opened in JupyterLab in a fresh kernel and workspace, its
    explorer cell and the cells it needs run (test_explorers_in_lab.py's
    open_and_run asserts that they ran); yield (page, (lesson, explorer cells)).

    One page for the two tests that need it, test_explorers_in_lab.py's slider
    test and test_accessibility.py's axe check: each used to open the lesson and
    run its cells itself (about 13 s each, measured on 2026-12-02)."""
    from .test_accessibility import shut_down_kernels
    from .test_explorers_in_lab import open_and_run

    base, token, _, _ = lab
    shut_down_kernels(base, token)  # its cells count from 1 in a fresh kernel
    page = lab_context.new_page()
    try:
        yield page, open_and_run(page, lab, LESSON_01)
    finally:
        page.close()
