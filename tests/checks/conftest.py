"""Every test of the checkers turns a CheckerBugWarning into an error.

A ``CheckerBugWarning`` means that a diagnosis step raised inside a checker and
was skipped: the learner still gets a message, but a test must not pass that
way. The catalogue and the harness hold asserts, so pytest rewrites them too.
The staged hints start from scratch in every test.
"""

from pathlib import Path

import pytest

from helpers.checks import _hints

pytest.register_assert_rewrite("tests.checks.catalogue", "tests.checks.harness")


@pytest.fixture(autouse=True)
def fresh_hint_steps():
    """Every test starts as a fresh kernel: no mistake told yet (see _hints), so
    a message never depends on which tests ran before it in the process."""
    _hints.reset()
    yield


HERE = Path(__file__).parent
CHECKER_BUG_IS_AN_ERROR = pytest.mark.filterwarnings(
    "error::helpers.checks._engine.CheckerBugWarning"
)


def pytest_collection_modifyitems(items):
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(CHECKER_BUG_IS_AN_ERROR)
