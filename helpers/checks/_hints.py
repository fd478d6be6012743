"""Staged hints: what a learner is told on each failure of the same mistake.

Every checker that ``helpers.checks`` exports is wrapped by :func:`checker`,
the one path a check goes through. The wrapper

- watches the learner's functions: if one raised ``NotImplementedError`` (a
  stub), the check ends in the engine's one "not implemented yet" message,
  whatever the checker did with the exception (lesson 11's checkers catch
  exceptions themselves; ``check_online_softmax`` calls two functions);
- remembers, per kernel, how often each (checker, mistake) failed: the first
  failure shows the symptom, a second one of the same mistake adds the why (see
  :meth:`CheckFailed.show`); a different mistake starts at step one again;
- forgets a checker's steps when it passes, so a mistake that comes back after a
  pass starts with its symptom again;
- keeps the checker's last failure, whose fix (or, for a failure no Mistake
  names, the method the engine wrote for it) :func:`hint_text` gives on request
  (``checks.hint("check_xxx")``).
"""

import difflib
import functools
import inspect
import threading

from helpers.checks._engine import CheckFailed, not_implemented
from helpers.i18n import _

_LOCK = threading.Lock()
_COUNTS = {}  # (checker, mistake key) -> failures of that mistake so far
_LAST = {}  # checker -> its last CheckFailed, or "passed"


def reset():
    """Forget every step and every last failure (a fresh kernel's state)."""
    with _LOCK:
        _COUNTS.clear()
        _LAST.clear()


class Watched:
    """A learner's function, called as itself, that notes a NotImplementedError.

    It keeps the function's name and code, so the messages still name and point
    at the learner's function.
    """

    def __init__(self, fn, stubs):
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", "your function")
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__code__ = getattr(fn, "__code__", None)
        self._stubs = stubs

    def __call__(self, *args, **kwargs):
        try:
            return self.__wrapped__(*args, **kwargs)
        except NotImplementedError:
            self._stubs.append(self.__wrapped__)
            raise

    def __getattr__(self, name):  # only for names the instance does not have
        wrapped = self.__dict__.get("__wrapped__")
        if wrapped is None:  # mid-copy (copy.deepcopy): no recursion
            raise AttributeError(name)
        return getattr(wrapped, name)


def _watch(value, stubs):
    is_function = inspect.isfunction(value) or inspect.ismethod(value)
    return Watched(value, stubs) if is_function else value


def _stage(name, err):
    """Show ``err`` at its step and remember it as ``name``'s last failure."""
    key = err.key  # None: a generated message with nothing more to tell
    with _LOCK:
        if key is not None:
            count = _COUNTS.get((name, key), 0) + 1
            _COUNTS[(name, key)] = count
            err.show(min(count, 2))
        _LAST[name] = err


def _passed(name):
    with _LOCK:
        for pair in [pair for pair in _COUNTS if pair[0] == name]:
            del _COUNTS[pair]
        _LAST[name] = "passed"


def checker(check):
    """The one path every exported checker goes through (see the module doc)."""
    name = check.__name__

    @functools.wraps(check)
    def wrapper(*args, **kwargs):
        stubs = []
        args = tuple(_watch(a, stubs) for a in args)
        kwargs = {k: _watch(v, stubs) for k, v in kwargs.items()}
        try:
            result = check(*args, **kwargs)
        except Exception as err:
            if stubs:  # a stub: always the one "not implemented yet" message
                failure = not_implemented(name, stubs[0])
                _stage(name, failure)
                raise failure from None
            if isinstance(err, CheckFailed):
                _stage(name, err)
            raise
        _passed(name)
        return result

    wrapper.__checker__ = check
    return wrapper


def _doc(check):
    return inspect.getdoc(getattr(check, "__checker__", check)) or ""


def doc_method(doc):
    """What a checker's docstring ``doc`` says it expects (its first paragraph,
    in English; ``tools.i18n_messages`` extracts it as a template)."""
    first = doc.split("\n\n")[0].replace("``", "").replace("\n", " ")
    return first.removeprefix("Check ").strip()


def doc_steps(doc):
    """A checker's documented steps (a docstring paragraph "Steps: ..."), or ""."""
    for paragraph in doc.split("\n\n"):
        if paragraph.startswith("Steps:"):
            return " ".join(paragraph.replace("``", "").split())
    return ""


def _method(check):
    """What the checker expects, from its docstring: the fallback of a hint."""
    method = doc_method(_doc(check))  # a template: extracted from the docstring
    return _(method)


def _steps(check):
    """The checker's documented steps, in the course's language, or ""."""
    steps = doc_steps(_doc(check))
    return _(steps)


def hint_text(name, known):
    """The hint for checker ``name`` (``check_x`` or ``x``); ``known`` maps names.

    ``known`` is ``{"check_x": checker}`` for every exported checker. The hint
    is the last failure's why and fix; without a fix, the method the engine
    wrote for it (which output, which case, how to find the step that differs)
    and the checker's documented steps; else what the checker expects.
    """
    text = str(name).strip()
    full = text if text.startswith("check_") else f"check_{text}"
    if full not in known:
        close = difflib.get_close_matches(full, list(known), n=3)
        names = ", ".join(close) if close else ", ".join(sorted(known))
        return _(
            "checks.hint: there is no checker called {name}. Try one of: {names}"
        ).format(name=repr(text), names=names)
    with _LOCK:
        last = _LAST.get(full)
    method = _method(known[full])
    if last is None:
        return _(
            "{name} has not failed in this kernel yet, so there is no mistake to "
            "hint at: run its check cell first. It checks: {method}"
        ).format(name=full, method=method)
    if last == "passed":
        return _("{name} passed on its last run: nothing to fix.").format(name=full)
    lines = [_("Hint for {name}, on its last failure:").format(name=full)]
    if last.why:
        lines.append("  " + _("Why: {why}").format(why=last.why))
    if last.fix:
        lines.append("  " + _("Fix: {fix}").format(fix=last.fix))
    if last.method and not (last.mistake is not None and last.fix):
        lines.append("  " + _("The method: {method}").format(method=last.method))
        steps = _steps(known[full])
        if steps:
            lines.append(f"  {steps}")
    elif not last.fix:
        lines.append(
            "  "
            + _("The method: {name} checks {method}").format(name=full, method=method)
        )
    return "\n".join(lines)
