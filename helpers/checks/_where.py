"""Where to look: the learner's function, and the line of theirs that raised.

A failed check ends with "Look at: ..." (see ``CheckFailed`` in
``helpers.checks._engine``). These functions find that place: the learner's function
by name and where it is defined, the line of theirs that returns an output, or
the last line of the learner's own code in a traceback, skipping the frames of
``helpers`` (all of it: a learner's call to an ``anp`` helper that raised points
at their call) and of installed packages. Inside
IPython a place reads ``Cell In[12], line 3``, as in IPython's own tracebacks;
elsewhere ``file.py, line 3`` (in English in the Chinese edition too, as
IPython's own tracebacks are).
"""

import inspect
import linecache
import re
import traceback
from pathlib import Path

from helpers.i18n import _

_HELPERS = Path(__file__).resolve().parent.parent  # helpers/, not only checks/


def fn_name(fn):
    """The function's name, or "your function" for a lambda or a nameless call."""
    name = getattr(fn, "__name__", "")
    return name if name and name != "<lambda>" else _("your function")


def _place(filename, lineno):
    """``Cell In[12], line 3`` inside IPython, else ``file.py, line 3``."""
    label = None
    try:
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None:
            label = shell.compile.format_code_name(filename)
    except Exception:  # no IPython, or an IPython without this method
        label = None
    where = " ".join(label) if label else Path(filename).name
    return f"{where}, line {lineno}"


def defined_at(fn):
    """Where the learner's function is defined, e.g. ``my_softmax (Cell In[4])``."""
    code = getattr(fn, "__code__", None)
    if code is None and hasattr(fn, "__wrapped__"):
        code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return fn_name(fn)
    return f"{fn_name(fn)} ({_place(code.co_filename, code.co_firstlineno)})"


def raised_at(err):
    """The last line of the learner's own code in the traceback of ``err``."""
    frames = [
        f
        for f in traceback.extract_tb(err.__traceback__)
        if _HELPERS not in Path(f.filename).resolve().parents
        and "site-packages" not in f.filename
    ]
    if not frames:
        return ""
    frame = frames[-1]
    code = (frame.line or linecache.getline(frame.filename, frame.lineno)).strip()
    where = f"{frame.name}, {_place(frame.filename, frame.lineno)}"
    return f"{where}: {code}" if code else where


def _source(fn):
    """``(code, lines, first line number)`` of ``fn``, or None without source."""
    code = getattr(fn, "__code__", None) or getattr(
        inspect.unwrap(fn), "__code__", None
    )
    try:
        lines, start = inspect.getsourcelines(code)
    except (OSError, TypeError):  # no source: a built-in, or code from exec
        return None
    return code, lines, max(start, 1)


def return_line(fn, output=""):
    """The learner's one ``return`` line (the one that names ``output``, if
    several return), e.g. ``my_softmax, Cell In[4], line 5: return e / Z``;
    ``defined_at`` when a simple scan of the source cannot tell which.
    """
    found = _source(fn)
    if found is None:
        return defined_at(fn)
    code, lines, start = found
    returns = [
        (number, text.strip())
        for number, text in enumerate(lines, start)
        if re.match(r"\s*return\b\s*\S", text)
    ]
    if not returns:
        return defined_at(fn)
    word = rf"\b{re.escape(output)}\b"
    named = [r for r in returns if output and re.search(word, r[1])]
    if len(named or returns) != 1:  # several returns: the scan would guess
        return defined_at(fn)
    number, text = (named or returns)[0]
    return f"{fn_name(fn)}, {_place(code.co_filename, number)}: {text}"


def line_of(fn, pattern):
    """The learner's first line matching ``pattern``, e.g.
    ``my_mask, Cell In[4], line 3: return np.tril(ones)``; else ``defined_at``.
    """
    found = _source(fn)
    if found is None:
        return defined_at(fn)
    code, lines, start = found
    for number, text in enumerate(lines, start):
        stripped = text.strip()
        if stripped.startswith(("#", "@", "def ", '"', "'")) and len(lines) > 1:
            continue  # a comment, decorator, signature or docstring: not the mistake
        if stripped and re.search(pattern, text):
            return f"{fn_name(fn)}, {_place(code.co_filename, number)}: {stripped}"
    return defined_at(fn)
