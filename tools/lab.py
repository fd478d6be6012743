"""Start JupyterLab for the course: ``make lab`` runs ``python -m tools.lab``.

The first screen teaches: the URL JupyterLab prints (and opens) is the
learner's copy of lesson 00 (``notebooks/student/``, exercises unsolved; the
solved lessons are one folder up, in ``notebooks/``). The project's settings
(``jupyter/overrides.json``, passed as JupyterLab's app settings dir) switch off
the "get notified about Jupyter news?" prompt and the update check, so no popup
covers the lesson; the server listens on 127.0.0.1 with token auth on.

It also writes notebooks/present/ (tools/coursebuild.py, present_copy): the
lessons as jupyterlab-slideshow presents them, for live slides.

Extra arguments are passed to ``jupyter lab`` (later ones win).
"""

import os
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SETTINGS = REPO / "jupyter"
FIRST_LESSON = "student/00_start_here.ipynb"


def lab_args(root=REPO / "notebooks"):
    """The arguments after ``jupyter lab``."""
    return [
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.default_url=/lab/tree/{FIRST_LESSON}",
        f"--LabApp.app_settings_dir={SETTINGS}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]


def command(root=REPO / "notebooks", extra=()):
    return [sys.executable, "-m", "jupyter", "lab", *lab_args(root), *extra]


def wait_until_answering(url, process, timeout, log=None):
    """Ask ``url`` twice a second until it answers 200 OK (a server started by
    the tests, the class benchmark or the hub fixture). Raises RuntimeError,
    with the server's log file when there is one, if ``process`` exits first or
    ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            where = url.split("?")[0]
            text = Path(log).read_text() if log else "(no log)"
            raise RuntimeError(f"{where} did not answer:\n{text}")
        time.sleep(0.5)


def main(argv):
    from tools import coursebuild

    coursebuild.write_present_copies()  # notebooks/present/: live slides
    cmd = command(extra=argv)
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
