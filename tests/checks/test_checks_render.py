"""A failed check shows a few short lines: the diagnosis and where to look.

IPython displays ``_render_traceback_()`` instead of a traceback through the
checker's internals; a learner sees the mistake, the case, and the line of
their own cell to look at.
"""

import re

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

from helpers import checks
from helpers.checks import _engine as ck

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def plain(lines):
    return [ANSI.sub("", line) for line in lines]


def softmax_columns(x, axis=-1):
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def softmax_raises(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis)  # no keepdims: broadcasting fails


def test_a_failure_renders_as_a_few_short_lines():
    with pytest.raises(ck.CheckFailed) as info:
        checks.check_softmax(softmax_columns)
    err = info.value
    assert isinstance(err, AssertionError)
    lines = plain(err._render_traceback_())
    text = "\n".join(lines)
    assert lines[0].startswith(
        "✗ check_softmax: your softmax normalises over the wrong"
    )
    assert 3 <= len(lines) <= 10, text
    assert all(len(line) <= 88 for line in lines), text
    assert "case 1 of 6: x (3, 5)" in text
    assert "look at: softmax_columns (test_checks_render.py, line" in text
    assert "Traceback" not in text and "_checking.py" not in text


def test_an_exception_in_the_learners_code_points_at_their_line():
    with pytest.raises(ck.CheckFailed) as info:
        checks.check_softmax(softmax_raises)
    text = "\n".join(plain(info.value._render_traceback_()))
    assert "your function raised ValueError" in text
    assert "keepdims=True" in text  # the hint for a broadcasting error
    assert "softmax_raises, test_checks_render.py, line" in text
    assert "e / e.sum(axis=axis)" in text  # the learner's own line


def test_str_holds_the_whole_message_for_plain_python():
    with pytest.raises(AssertionError) as info:
        checks.check_softmax(softmax_columns)
    text = str(info.value)
    assert text.startswith("check_softmax: your softmax normalises over the wrong")
    assert "Look at: softmax_columns" in text


NOTEBOOK = [
    "import numpy as np\nfrom helpers import checks",
    "def my_softmax(x, axis=-1):\n"
    "    e = np.exp(x - x.max(axis=0, keepdims=True))\n"
    "    return e / e.sum(axis=0, keepdims=True)",
    "checks.check_softmax(my_softmax)",
    "def my_broken(x, axis=-1):\n    e = np.exp(x)\n    return e / e.sum(axis=axis)",
    "assert checks.check_softmax(my_broken)",
    "def my_stub(x, axis=-1):\n"
    '    raise NotImplementedError("Exercise: replace this line with your code")',
    "checks.check_softmax(my_stub)",
]


@pytest.fixture(scope="module")
def executed():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in NOTEBOOK]
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True).execute()
    return nb


def _error(nb, index):
    (error,) = [o for o in nb.cells[index].outputs if o.output_type == "error"]
    return error, plain("\n".join(error.traceback).splitlines())


def test_in_a_notebook_a_wrong_answer_shows_the_diagnosis_in_a_few_lines(executed):
    error, lines = _error(executed, 2)
    text = "\n".join(lines)
    assert error.ename == "CheckFailed"
    assert 3 <= len(lines) <= 10, text
    assert "over the wrong" in lines[0] and "axis" in text
    assert "look at: my_softmax (Cell In[2], line 1)" in text
    assert "helpers" not in text and "Traceback" not in text


def test_in_a_notebook_an_exception_points_at_the_learners_cell(executed):
    _, lines = _error(executed, 4)
    text = "\n".join(lines)
    assert 3 <= len(lines) <= 10, text
    assert "your function raised ValueError" in text
    assert "my_broken, Cell In[4], line 3: return e / e.sum(axis=axis)" in text


def test_in_a_notebook_a_stub_says_not_implemented(executed):
    error, lines = _error(executed, 6)
    assert "not implemented yet" in error.evalue
    assert len(lines) <= 6
