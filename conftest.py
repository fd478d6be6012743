"""Repo-wide pytest configuration.

nbval compares every stored text output of every notebook. Widget views carry
a random model id in their JSON, so that one MIME type is left out of the
comparison; the widget's text/plain form is still compared (explorer cells are
additionally tagged NBVAL_IGNORE_OUTPUT, with their reason, in the lessons).
"""

import matplotlib

matplotlib.use("Agg")


def pytest_collectstart(collector):
    if collector.fspath and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("application/vnd.jupyter.widget-view+json",)


# make test runs two processes with --dist loadfile: each notebook (one kernel,
# cells in order) and each test file stays in one process. The tests of these
# files are independent and long, so each one is handed out on its own, and the
# two processes finish together. (The JupyterLab tests stay together: one server
# and one browser serve them all.)
SPREAD = {
    "tests/course/test_student_copies.py",  # a fresh kernel each
}


# The longest work units first, longest to shortest as measured on 2026-12-01
# at 20:51 UTC (the two builds with their browser checks, the lessons in
# JupyterLab, then the lessons and test files that take 13-90 s on a busy
# machine), the rest in collection order (each at most about 5 s): a long unit
# handed out last would leave one process working alone at the end.
FIRST = (
    "tests/browser/test_slides.py",
    "tests/browser/test_html_pages.py",
    "notebooks/10_small_gpt.ipynb",
    "tests/browser/test_explorers_in_lab.py",
    "notebooks/08_attention_at_scale.ipynb",
    "notebooks/04_why_sqrt_dk.ipynb",
    "notebooks/12_linear_attention.ipynb",
    "notebooks/11_induction_heads.ipynb",
    "tests/checks/test_engine.py",
    "notebooks/09_capstone.ipynb",
    "tests/checks/test_robustness.py",
    "notebooks/13_kv_cache_budget.ipynb",
    "tests/explorers/test_widgets.py",
    "tests/checks/test_sqrt_dk.py",
    "tests/checks/test_hints.py",
)


def pytest_collection_modifyitems(items):
    rank = {path: i for i, path in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(FIRST)))


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None  # xdist's own scheduler for every other --dist
    from xdist.scheduler import LoadFileScheduling

    class Scheduler(LoadFileScheduling):
        """loadfile, except that SPREAD's tests are work units of their own."""

        def _split_scope(self, nodeid):
            path = nodeid.split("::", 1)[0]
            return nodeid if path in SPREAD else path

    return Scheduler(config, log)
