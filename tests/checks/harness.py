"""The harness of the robustness and mutant tests: is a failure clean, and fair?

:class:`Watched` wraps a wrong implementation and remembers whether any answer
it gave differed from the right one; :func:`assert_fails_cleanly` asserts that
a checker either raised ``CheckFailed`` with a short message, or accepted an
implementation that never answered wrongly.
"""

import copy

import numpy as np

from helpers.checks import _engine as ck


def _numbers(x):
    """``x`` as a float array, or None if it is not an array of real numbers."""
    if not isinstance(x, (np.ndarray, np.generic, float, int, bool, list)):
        return None
    try:
        array = np.asarray(x)
    except Exception:
        return None
    return array.astype(float) if array.dtype.kind in "biuf" else None


def same_answer(want, got):
    """True if ``got`` is ``want`` up to 1% (so a checker may accept it)."""
    if isinstance(want, tuple):
        return (
            isinstance(got, (tuple, list))
            and len(got) == len(want)
            and all(same_answer(w, g) for w, g in zip(want, got, strict=True))
        )
    a, b = _numbers(want), _numbers(got)
    if a is None or b is None or a.shape != b.shape:
        return False
    return bool(np.allclose(a, b, rtol=1e-2, atol=1e-2, equal_nan=True))


class Watched:
    """Calls a mutant and remembers whether any answer differed from the right one.

    A checker may accept a mutant only if every answer it saw was right.
    """

    __name__ = "mutant"

    def __init__(self, right, mutant):
        self.right, self.mutant, self.changed = right, mutant, False

    def __call__(self, *args, **kwargs):
        want = self.right(*copy.deepcopy(args), **copy.deepcopy(kwargs))
        try:
            got = self.mutant(*args, **kwargs)
        except Exception:
            self.changed = True
            raise
        self.changed |= not same_answer(want, got)
        return got


def assert_fails_cleanly(checker, fn):
    """The checker raises CheckFailed with a short message, or accepts a right fn.

    ``fn`` is a :class:`Watched` mutant (accepted only if it never answered
    wrongly) or a function that must fail.
    """
    try:
        accepted = checker(fn)
    except ck.CheckFailed as err:
        text = str(err)
        assert err.diagnosis and len(err.diagnosis) < 700, text
        lines = err._render_traceback_()
        assert 1 <= len(lines) <= 14, "\n".join(lines)
        return err
    assert accepted is True
    assert isinstance(fn, Watched) and not fn.changed, "a wrong answer was accepted"
    return None
