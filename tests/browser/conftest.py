"""A real JupyterLab, started for the browser tests and stopped after them.

The server listens on 127.0.0.1 with a random port and a random token, serves a
temporary copy of the lessons (so that autosave never touches the committed
notebooks), and keeps its settings, workspaces and runtime files in a temporary
folder with the news and update toasts switched off.
"""

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO / "test-artifacts" / "browser"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


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
    """Start JupyterLab on a copy of notebooks/; yield (base_url, token, root)."""
    reason = _missing_browser()
    if reason:
        pytest.fail(f"browser test cannot run in CI: {reason}")
    home = tmp_path_factory.mktemp("lab")
    root = home / "notebooks"
    shutil.copytree(REPO / "notebooks", root, ignore=shutil.ignore_patterns(".*"))
    settings = home / "settings"
    toast = settings / "@jupyterlab" / "apputils-extension"
    toast.mkdir(parents=True)
    (toast / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    # Render every cell (no windowing), so that off-screen explorers exist in the
    # page and can be scrolled to, as in a plain browser page.
    tracker = settings / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text(
        json.dumps({"windowingMode": "none"})
    )
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
    }
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(home / "server.log", "w")  # noqa: SIM115 (closed below)
    server = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}") as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    "JupyterLab did not start:\n" + (home / "server.log").read_text()
                )
            time.sleep(0.5)
        yield base, token, root
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
