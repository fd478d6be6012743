"""Every test of the checkers turns a CheckerBugWarning into an error.

A ``CheckerBugWarning`` means that a diagnosis step raised inside a checker and
was skipped: the learner still gets a message, but a test must not pass that
way. The catalogue and the harness hold asserts, so pytest rewrites them too.
"""

from pathlib import Path

import pytest

pytest.register_assert_rewrite("tests.checks.catalogue", "tests.checks.harness")

HERE = Path(__file__).parent
CHECKER_BUG_IS_AN_ERROR = pytest.mark.filterwarnings(
    "error::helpers.checks._engine.CheckerBugWarning"
)


def pytest_collection_modifyitems(items):
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(CHECKER_BUG_IS_AN_ERROR)
