"""JupyterHub for a class of "Attention, step by step" on one server.

Run it from the repository root with the course venv, after `make hub-proxy`
(configurable-http-proxy from npm into hub/node_modules):

    .venv/bin/jupyterhub -f hub/jupyterhub_config.py

Students log in, follow the nbgitpuller link the README gives, and get their
own copy of the course in their home folder; a later click on the same link
pulls the instructor's updates without overwriting their edits.

What is set here, and why:

- everything listens on 127.0.0.1 (put a TLS reverse proxy in front, or set
  `c.JupyterHub.bind_url` to a public address with `ssl_cert`/`ssl_key`);
- each student's server is `jupyterhub-singleuser` from the hub's own Python
  (the course venv: torch, the helpers, nbgitpuller), opening JupyterLab;
- one BLAS/OpenMP/torch thread per kernel: the lessons' matrices are tiny, and
  N students x 2 cores of threads only fight over the same cores
  (benchmarks/class_capacity.py measures what this saves);
- idle kernels are shut down after 20 minutes and idle servers after an hour,
  which frees a student's torch kernel (the larger part of their memory);
- the memory and CPU numbers come from benchmarks/class_capacity.py. Local
  processes are not limited by them (only container spawners such as
  DockerSpawner or KubeSpawner enforce `mem_limit`/`cpu_limit`); on one server
  size the machine with the README's table instead.

Authentication: JupyterHub's default, PAM (every student is a Unix account on
this machine, started with LocalProcessSpawner under that account). For a class
you will usually want an OAuthenticator (GitHub, Google, your LMS via LTI);
set `c.JupyterHub.authenticator_class`. The class list is hub/students.txt
(one login name a line), the admin `instructor` or $COURSE_HUB_ADMIN.
tests/hub/test_hub_class.py runs this file with a password-protected
DummyAuthenticator and SimpleLocalProcessSpawner (test only: no isolation
between Unix users) given on the command line, which overrides this file.
"""

import os
import shutil
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (injected by JupyterHub when it loads this file)

HUB_DIR = Path(__file__).resolve().parent
PYTHON_BIN = Path(sys.executable).parent

# From benchmarks/class_capacity.py (README, "A class on JupyterHub"): after
# lesson 01, a student's server is 121 MB RSS and their kernel (torch imported)
# 348 MB RSS: guarantee 512M; a second open lesson adds a kernel: limit 1G.
# A student dragging a slider keeps 0.056 of a core busy: guarantee 0.1 core;
# a kernel runs one thread, so more than one core would be unused: limit 1.
MEM_GUARANTEE = "512M"
MEM_LIMIT = "1G"
CPU_GUARANTEE = 0.1
CPU_LIMIT = 1.0

# --- network: 127.0.0.1 only ------------------------------------------------
c.JupyterHub.bind_url = "http://127.0.0.1:8000"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:8081"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:8001"
c.Spawner.ip = "127.0.0.1"

# configurable-http-proxy installed by `make hub-proxy` (npm ci in hub/, the
# version pinned in hub/package.json and package-lock.json), else from PATH
_chp = HUB_DIR / "node_modules" / ".bin" / "configurable-http-proxy"
if _chp.exists():
    c.ConfigurableHTTPProxy.command = [str(_chp)]
elif shutil.which("configurable-http-proxy") is None:
    raise SystemExit(
        "configurable-http-proxy not found: run `make hub-proxy` "
        "(npm ci --prefix hub: the version pinned in hub/package.json)"
    )

# --- each student's server ---------------------------------------------------
# the singleuser server from the same environment as the hub (the course venv)
c.Spawner.cmd = [str(PYTHON_BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 120
c.Spawner.environment = {
    # one thread per kernel: see the docstring and benchmarks/class_capacity.py
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    # students get neither nbgrader's menus nor its server extensions (both are
    # the instructor's): hub/student-config/ disables them, ahead of the venv's
    "JUPYTER_CONFIG_PATH": str(HUB_DIR / "student-config"),
    # the course venv's scripts (jupyter, python) first in a student's terminal
    "PATH": f"{PYTHON_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
}
c.Spawner.args = [
    # shut down a kernel nobody has used for 20 minutes (even with a tab open
    # it restarts on the next Run), and the whole server after an idle hour
    "--MappingKernelManager.cull_idle_timeout=1200",
    "--MappingKernelManager.cull_interval=60",
    "--MappingKernelManager.cull_connected=True",
    "--ServerApp.shutdown_no_activity_timeout=3600",
    # students should not be asked about Jupyter news on their first visit
    "--LabApp.news_url=None",
]
c.Spawner.mem_guarantee = MEM_GUARANTEE
c.Spawner.mem_limit = MEM_LIMIT
c.Spawner.cpu_guarantee = CPU_GUARANTEE
c.Spawner.cpu_limit = CPU_LIMIT

# --- the hub ------------------------------------------------------------------
# its database, cookie secret and the proxy's PID file in hub/.data/ (gitignored)
DATA = HUB_DIR / ".data"
DATA.mkdir(exist_ok=True)
c.JupyterHub.db_url = f"sqlite:///{DATA / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(DATA / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = str(DATA / "jupyterhub-proxy.pid")
# a student's server that stopped (culled) starts again when they come back
c.JupyterHub.redirect_to_server = True
# an admin can see and stop students' servers from /hub/admin
c.Authenticator.admin_users = {os.environ.get("COURSE_HUB_ADMIN", "instructor")}
# the class list: hub/students.txt, one login name a line (not committed);
# without it nobody but the admin may log in. With PAM, the hub (run as root)
# creates the Unix accounts of the listed students that do not exist yet.
c.LocalAuthenticator.create_system_users = True
_students = HUB_DIR / "students.txt"
if _students.exists():
    c.Authenticator.allowed_users = {
        line.strip()
        for line in _students.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
c.JupyterHub.cleanup_servers = True
