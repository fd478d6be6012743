"""A real JupyterHub for the class tests, started from hub/jupyterhub_config.py.

JupyterHub (PyPI, requirements.txt) with configurable-http-proxy (npm, pinned in
hub/package.json, installed into hub/node_modules on first use) on 127.0.0.1
with random ports. A small test config loads the course's config and swaps in
what a test needs: a DummyAuthenticator with a password and
SimpleLocalProcessSpawner, each student's home a folder under a temp dir. The
course repository students pull is a local clone (file://), so nothing
reaches the network. Everything started here is stopped by its PID afterwards.
"""

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tools.chromium import CHROMIUM
from tools.lab import wait_until_answering

REPO = Path(__file__).resolve().parents[2]
HUB_DIR = REPO / "hub"
CHP = HUB_DIR / "node_modules" / ".bin" / "configurable-http-proxy"

TEST_CONFIG = """\
import os
c = get_config()  # noqa: F821
load_subconfig({course_config!r})  # noqa: F821  the course's hub config
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub_port}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {password!r}
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {homes!r} + "/{{username}}"
c.JupyterHub.db_url = "sqlite:///" + {data!r} + "/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = {data!r} + "/jupyterhub_cookie_secret"
c.ConfigurableHTTPProxy.pid_file = {data!r} + "/jupyterhub-proxy.pid"
c.JupyterHub.pid_file = {data!r} + "/jupyterhub.pid"
if os.geteuid() == 0:  # CI runs as root; real students never do
    c.Spawner.args = list(c.Spawner.args) + ["--allow-root"]
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_proxy():
    """configurable-http-proxy from npm (hub/package-lock.json), like make hub-proxy."""
    if not CHP.exists():
        if shutil.which("npm") is None:
            pytest.fail(
                "npm is missing: the hub test needs it for configurable-http-proxy"
            )
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--prefix", str(HUB_DIR)],
            check=True,
            capture_output=True,
        )
    return CHP


def git(*args, cwd):
    return subprocess.run(
        [
            "git",
            "-c",
            "user.name=Instructor",
            "-c",
            "user.email=i@example.invalid",
            *args,
        ],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture(scope="session")
def course_repo(tmp_path_factory):
    """A local clone of this repository's HEAD that students pull from (file://)."""
    where = tmp_path_factory.mktemp("upstream") / "course"
    git("clone", "--quiet", "--depth", "1", f"file://{REPO}", str(where), cwd=REPO)
    git("checkout", "-q", "-B", "main", cwd=where)
    return where


def _stop(proc, timeout=20):
    """Stop one process we started: SIGTERM, then SIGKILL, by its PID."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _pids_of_children(pid):
    """PIDs whose parent is pid (from /proc), recursively."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            child = int(stat.parent.name)
            children.append(child)
            children.extend(_pids_of_children(child))
    return children


@pytest.fixture(scope="session")
def hub(tmp_path_factory):
    """Start the hub; yield dict(url, password, homes, log)."""
    ensure_proxy()
    base = tmp_path_factory.mktemp("hub")
    data, homes = base / "data", base / "homes"
    data.mkdir()
    homes.mkdir()
    port, hub_port, api_port = free_port(), free_port(), free_port()
    password = secrets.token_hex(8)
    config = base / "jupyterhub_config.py"
    config.write_text(
        TEST_CONFIG.format(
            course_config=str(HUB_DIR / "jupyterhub_config.py"),
            port=port,
            hub_port=hub_port,
            api_port=api_port,
            password=password,
            homes=str(homes),
            data=str(data),
        )
    )
    log_path = data / "hub.log"
    log = open(log_path, "w")  # noqa: SIM115 (closed below)
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")}
    env["CONFIGPROXY_AUTH_TOKEN"] = secrets.token_hex(16)
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "jupyterhub"), "-f", str(config)],
        cwd=data,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(f"{url}/hub/api/", proc, 180, log=log_path)
        yield {"url": url, "password": password, "homes": homes, "log": log_path}
    finally:
        # JupyterHub stops the proxy and (cleanup_servers) every student's
        # server on SIGTERM; whatever of ours is left after that is killed
        children = _pids_of_children(proc.pid)
        _stop(proc, timeout=60)
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.close()


@pytest.fixture(scope="session")
def chromium_path():
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        pytest.fail("playwright is not installed (pip install -r requirements.txt)")
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing (Debian: apt-get install chromium)")
    return CHROMIUM
