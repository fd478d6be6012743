"""Start JupyterLab for the course: ``make lab`` runs ``python -m tools.lab``.

The first screen teaches: the URL JupyterLab prints (and opens) is the
learner's copy of lesson 00 (``notebooks/student/``, exercises unsolved; the
solved lessons are one folder up, in ``notebooks/``). The project's settings
(``jupyter/overrides.json``, passed as JupyterLab's app settings dir) switch off
the "get notified about Jupyter news?" prompt and the update check, so no popup
covers the lesson; the server listens on 127.0.0.1 with token auth on.

It also writes notebooks/present/ (tools/coursebuild.py, present_copy): the
lessons as jupyterlab-slideshow presents them, for live slides.

``python -m tools.lab --zh`` (``make lab-zh``) is the Chinese edition: the
first screen is the learner's copy of the Chinese lesson 00
(``notebooks/zh/student/``), and JupyterLab's own menus are Chinese
(jupyterlab-language-pack-zh-CN). The language is set in a course-owned copy of
the project's settings, build/jupyter-zh/overrides.json (jupyter/overrides.json
plus the translation extension's ``locale``), passed as the app settings dir:
these are defaults, so the learner's own settings (in ~/.jupyter) are neither
read into nor written by the course, and a learner who picks another language
in Settings > Language keeps it. The helpers speak Chinese in these lessons
because their notebooks live in a folder named ``zh`` (helpers/i18n.py).

Extra arguments are passed to ``jupyter lab`` (later ones win).
"""

import json
import os
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SETTINGS = REPO / "jupyter"
FIRST_LESSON = "student/00_start_here.ipynb"
FIRST_LESSON_ZH = "zh/student/00_start_here.ipynb"
SETTINGS_ZH = REPO / "build" / "jupyter-zh"
TRANSLATION = "@jupyterlab/translation-extension:plugin"
LOCALE_ZH = "zh_CN"


def zh_settings(dest=SETTINGS_ZH):
    """Write the Chinese lab's app settings dir: the project's overrides plus
    JupyterLab's display language; returns the folder."""
    overrides = json.loads((SETTINGS / "overrides.json").read_text(encoding="utf-8"))
    overrides[TRANSLATION] = {"locale": LOCALE_ZH}
    dest.mkdir(parents=True, exist_ok=True)
    text = json.dumps(overrides, indent=2, ensure_ascii=False) + "\n"
    (dest / "overrides.json").write_text(text, encoding="utf-8")
    return dest


def lab_args(root=REPO / "notebooks", zh=False):
    """The arguments after ``jupyter lab`` (``zh``: the Chinese edition)."""
    first = FIRST_LESSON_ZH if zh else FIRST_LESSON
    settings = zh_settings() if zh else SETTINGS
    return [
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.default_url=/lab/tree/{first}",
        f"--LabApp.app_settings_dir={settings}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]


def command(root=REPO / "notebooks", extra=(), zh=False):
    return [sys.executable, "-m", "jupyter", "lab", *lab_args(root, zh), *extra]


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

    zh = "--zh" in argv
    argv = [arg for arg in argv if arg != "--zh"]
    coursebuild.write_present_copies()  # notebooks/present/: live slides
    if zh:  # notebooks/present/zh/: the Chinese ones (ignored by git as present/ is)
        zh_lessons = REPO / "notebooks" / "zh"
        if not (zh_lessons / "student" / "00_start_here.ipynb").exists():
            sys.exit("notebooks/zh/student/ is missing: run `make notebooks-zh` first")
        coursebuild.write_present_copies(
            REPO / "notebooks" / "present" / "zh", source=zh_lessons
        )
    cmd = command(extra=argv, zh=zh)
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
