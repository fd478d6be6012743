"""The Chinese lessons under nbval: ``slow`` (make test-slow), Chinese kernels.

make test runs the English lessons; the Chinese ones are the same code, so
their strict nbval runs go to make test-slow (README.zh-CN.md). Each one's
kernel starts with COURSE_LANG=zh (nbval starts it while setting up the
notebook's first cell; the variable is put back right after, so the tests that
run next in this process still see the English default). The kernel's folder
is notebooks/zh, which helpers/i18n.py reads as Chinese too.
"""

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _is_chinese_lesson(item):
    return (
        Path(str(item.fspath)).resolve().parent == HERE and item.fspath.ext == ".ipynb"
    )


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _is_chinese_lesson(item):
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.zh)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    if not _is_chinese_lesson(item):
        yield
        return
    before = os.environ.get("COURSE_LANG")
    os.environ["COURSE_LANG"] = "zh"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("COURSE_LANG", None)
        else:
            os.environ["COURSE_LANG"] = before
