"""Repo-wide pytest configuration.

nbval compares every stored text output of every notebook. Widget views carry
a random model id in their JSON, so that one MIME type is left out of the
comparison; the widget's text/plain form is still compared (explorer cells are
additionally tagged NBVAL_IGNORE_OUTPUT, with their reason, in the lessons).
"""

import resource
from collections import defaultdict

import matplotlib
import pytest

from tools import same_kernels

matplotlib.use("Agg")
# nbval's kernels (and every kernel a test starts) inherit torch's AVX2 kernels,
# the ones the stored outputs were computed with (tools/same_kernels.py)
same_kernels.apply()


def pytest_collectstart(collector):
    if collector.fspath and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("application/vnd.jupyter.widget-view+json",)


# make test runs two processes with --dist loadfile: each notebook (one kernel,
# cells in order) and each test file is one work unit, run in one process.
# SPREAD: these files' tests are independent, so each one is a unit of its own
# and the two processes finish together (the student-copy runs share one kernel
# per process, tests/course/test_student_copies.py). TOGETHER: files that share
# a session's server are one unit, so that one process starts it once (lesson 01
# checked with axe runs in the JupyterLab the explorer tests start).
SPREAD = {
    "tests/course/test_student_copies.py",
}
TOGETHER = {
    "tests/browser/test_accessibility.py": "tests/browser/test_explorers_in_lab.py",
}


# The longest work units first, longest to shortest, the rest in collection
# order (each at most about 5 s): a long unit handed out last would leave one
# process working alone at the end. make test-browser: the page and deck builds
# with their browser checks, then the JupyterLab unit (measured on 2026-12-03:
# 72, 75 and 34 s). make test: lessons and test files of 5-18 s (measured on
# 2026-12-01 at 20:51 UTC, again on 2026-12-03; the files added since placed by
# what they run). make test-slow
# (-m slow keeps this order): the JupyterLab unit (lessons 04, 07 and 09-13 on one
# page, 7-21 s each on 2026-12-03),
# the Chinese decks and pages, the hub class, nbgrader, then the Chinese lessons
# under nbval, the longest first.
FIRST = (
    "tests/browser/test_html_pages.py",
    "tests/browser/test_slides.py",
    "tests/browser/test_explorers_in_lab.py",
    "notebooks/04_why_sqrt_dk.ipynb",
    "notebooks/10_small_gpt.ipynb",
    "tests/browser/test_chinese_lab.py",
    "tests/browser/test_chinese_pages.py",
    "tests/hub/test_hub_class.py",
    "tests/course/test_nbgrader.py",
    "notebooks/zh/10_small_gpt.ipynb",
    "notebooks/zh/04_why_sqrt_dk.ipynb",
    "notebooks/08_attention_at_scale.ipynb",
    "notebooks/zh/08_attention_at_scale.ipynb",
    "notebooks/11_induction_heads.ipynb",
    "notebooks/zh/11_induction_heads.ipynb",
    "tests/checks/test_engine.py",
    "notebooks/12_linear_attention.ipynb",
    "notebooks/zh/12_linear_attention.ipynb",
    "notebooks/09_capstone.ipynb",
    "notebooks/zh/09_capstone.ipynb",
    "tests/course/test_chinese.py",
    "tests/checks/test_robustness.py",
    "notebooks/13_kv_cache_budget.ipynb",
    "notebooks/zh/13_kv_cache_budget.ipynb",
    "tests/explorers/test_widgets.py",
    "tests/browser/test_exported_explorers.py",
    "tests/checks/test_sqrt_dk.py",
    "tests/checks/test_hints.py",
)


def _unit(path):
    """The work unit a file's tests belong to (a path: the file or its group)."""
    return TOGETHER.get(path, path)


def pytest_collection_modifyitems(items):
    rank = {path: i for i, path in enumerate(FIRST)}
    items.sort(
        key=lambda item: rank.get(_unit(item.nodeid.split("::", 1)[0]), len(FIRST))
    )


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None  # xdist's own scheduler for every other --dist
    from xdist.scheduler import LoadFileScheduling

    class Scheduler(LoadFileScheduling):
        """loadfile, except that SPREAD's tests are work units of their own
        and TOGETHER's files one unit with their partner."""

        def _split_scope(self, nodeid):
            path = nodeid.split("::", 1)[0]
            return nodeid if path in SPREAD else _unit(path)

    return Scheduler(config, log)


# -- where the time goes: pytest --file-times ------------------------------------
# Each test's setup, call and teardown add to its file's time in the process that
# ran it (xdist's gw0, gw1, ...; "main" in one process): wall seconds, and CPU
# seconds of that process and of the children it has waited for (the kernels a
# test started and stopped; a server that outlives its test is counted when it
# stops). On a shared machine wall time varies with the load and CPU time much
# less: compare runs of the same file back to back. The summary lists each
# process's files longest first and its total: the last to finish decides make
# test's wall time.


def pytest_addoption(parser):
    parser.addoption(
        "--file-times",
        action="store_true",
        help="print the wall and CPU seconds of each test file, per process",
    )


def _cpu_seconds():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


_CPU_AT_START = {}
_FILE_TIMES = defaultdict(lambda: [0.0, 0.0])  # (process, file) -> [wall, cpu]


def pytest_runtest_logstart(nodeid, location):
    _CPU_AT_START[nodeid] = _cpu_seconds()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when == "teardown" and item.config.getoption("file_times"):
        spent = _cpu_seconds() - _CPU_AT_START.pop(item.nodeid, _cpu_seconds())
        outcome.get_result().user_properties.append(("cpu_s", spent))


def pytest_runtest_logreport(report):
    node = getattr(report, "node", None)  # set on xdist's controller
    process = node.gateway.id if node is not None else "main"
    times = _FILE_TIMES[process, report.nodeid.split("::", 1)[0]]
    times[0] += report.duration
    times[1] += dict(report.user_properties).get("cpu_s", 0.0)


def pytest_terminal_summary(terminalreporter, config):
    if not config.getoption("file_times") or hasattr(config, "workerinput"):
        return
    write = terminalreporter.write_line
    for process in sorted({p for p, _ in _FILE_TIMES}):
        files = {f: t for (p, f), t in _FILE_TIMES.items() if p == process}
        wall = sum(t[0] for t in files.values())
        cpu = sum(t[1] for t in files.values())
        write(f"-- {process}: {wall:.1f} s wall, {cpu:.1f} s CPU, {len(files)} files")
        for path, (w, c) in sorted(files.items(), key=lambda kv: -kv[1][0]):
            if w >= 0.5:
                write(f"{w:8.1f} s {c:8.1f} s CPU  {path}")
