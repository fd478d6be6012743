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
