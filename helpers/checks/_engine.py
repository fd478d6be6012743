"""The engine behind the exercise checkers in ``helpers.checks``.

A checker describes its exercise (the cases, the reference, the outputs and the
known mistakes) and calls :func:`run`. ``run`` calls the learner's function on
copies of each case's inputs, turns what it returned into arrays, compares them
with the reference and, on a mismatch, explains it in this order:

1. a known mistake (a ``(message, function)`` pair) that reproduces the answer;
2. a wrong shape (or the right values in the wrong order);
3. the checker's own ``diagnose(case, got, expected)``, reading properties of
   the answer (rows sum to 1, the mask is obeyed, ...);
4. the place where the answer differs most from the reference.

Whatever the learner's function does (raises, returns None, a list, NaN, the
wrong dtype or shape), the result is a :class:`CheckFailed`, an AssertionError
whose notebook display is a few short lines: the diagnosis, the case, and where
to look (found by ``helpers.checks._where``). A step of the explanation that
fails itself is skipped with a :class:`CheckerBugWarning` (the tests turn it
into an error), never a crash.

Staged hints. A known mistake is a :class:`Mistake` (symptom, why, fix; it and
:class:`CheckFailed` live in ``_failure``, re-exported here), and a learner is
told it in steps, remembered per kernel for each (checker, mistake):

- the first failure shows the symptom, the case and where to look (the
  learner's function, or their line that matches the mistake's ``line``);
- the same mistake failing again in the same kernel adds the why, and says that
  ``checks.hint(...)`` has the fix;
- ``checks.hint("check_xxx")`` (or ``"xxx"``) prints the fix of that checker's
  last diagnosed mistake, or what the checker expects when there is no fix.

A failure no Mistake names (a wrong shape or value, an exception) is worded by
``helpers.checks._generic`` as a :class:`Generated` message, told in the same
steps: its repeat adds the why of its kind, and ``checks.hint`` gives the
method (which output, case and index; how to find the step that differs).

A different mistake starts at step one again. A passing run forgets the
checker's steps: a mistake that comes back after a pass is a new attempt and
starts with its symptom. nbgrader runs each check cell once in a fresh kernel,
so the first step is written to be enough on its own.

Every exported checker goes through one path, ``helpers.checks._hints.checker``
(applied in ``helpers.checks``): it records the steps, and a learner's function that
raised ``NotImplementedError`` (a stub) always ends in the one "not implemented
yet" message, whatever the checker did with the exception.
"""

import warnings
from dataclasses import dataclass, field

import numpy as np

from helpers._validate import fmt

# re-exported: checkers write ck.Mistake, ck.CheckFailed, ck.fill
from helpers.checks._failure import (  # noqa: F401
    CheckFailed,
    Generated,
    Mistake,
    fill,
    short_name,
)
from helpers.checks._generic import (  # noqa: F401  (re-exported: ck.same, ...)
    ATOL,
    RTOL,
    method,
    num,
    raised,
    same,
    shape_problem,
    shape_text,
    value_problem,
)
from helpers.checks._where import defined_at, fn_name, line_of, raised_at, return_line
from helpers.i18n import _


class CheckerBugWarning(UserWarning):
    """A step of a checker's explanation raised; the checker fell back."""


@dataclass(frozen=True)
class Out:
    """One value the learner's function returns, and the shape rule it obeys."""

    name: str
    shape: str  # the rule in words, e.g. "(..., n, d_v)"
    hint: str = ""  # a wrong shape's fix: shown by checks.hint, not at once
    boolean: bool = False  # must have dtype bool


@dataclass
class Case:
    """One call of the learner's function and what the messages may quote."""

    label: str  # the inputs in words, e.g. "Q (4, 3), K (6, 3), V (6, 5)"
    names: tuple  # names of the positional arguments
    args: tuple  # positional arguments
    kwargs: dict  # optional arguments, passed by keyword
    sizes: dict = field(default_factory=dict)  # named axis sizes: n, m, d_k ...
    facts: dict = field(default_factory=dict)  # other numbers messages quote
    large: bool = False  # scores big enough to overflow a naive exp


def describe(name, value):
    """``Q (4, 3)`` for an array, ``num_heads=2`` for anything else."""
    if isinstance(value, np.ndarray):
        kind = "" if value.dtype == np.float64 else f" {value.dtype}"
        return f"{name} {fmt(value.shape)}{kind}"
    if isinstance(value, float):
        return f"{name}={value:.6g}"
    if isinstance(value, np.random.Generator):
        return f"{name}=np.random.default_rng(...)"
    return f"{name}={value!r}"


def make_case(names, *args, sizes=None, facts=None, large=False, note="", **kwargs):
    """Build a case; optional arguments equal to None are left out of the call.

    ``note`` is added to the label to say what is special about the case.
    """
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    label = ", ".join(
        [describe(k, a) for k, a in zip(names, args, strict=True)]
        + [describe(k, v) for k, v in kwargs.items()]
        + ([_(note)] if note else [])
    )
    return Case(
        label, tuple(names), args, kwargs, dict(sizes or {}), dict(facts or {}), large
    )


def copy(value):
    return value.copy() if isinstance(value, np.ndarray) else value


def as_tuple(result, count):
    items = (result,) if count == 1 else tuple(result)
    if len(items) != count:
        raise ValueError(f"expected {count} values, got {len(items)}")
    return tuple(np.asarray(x) for x in items)


def not_implemented(name, fn):
    """The one message for a stub that still raises NotImplementedError."""
    return CheckFailed(
        name,
        _(
            "{function} is not implemented yet: replace the "
            "`raise NotImplementedError(...)` line with your code"
        ).format(function=fn_name(fn)),
        where=defined_at(fn),
    )


def require_function(name, fn):
    """Fail unless ``fn`` is a function (not, say, its result)."""
    if not callable(getattr(fn, "__wrapped__", fn)):  # a wrapper of a result too
        raise CheckFailed(
            name,
            _(
                "{name} needs your function itself, e.g. {name}(my_function), not "
                "what it returns; got a {kind}"
            ).format(name=name, kind=type(fn).__name__),
        )


def call(name, fn, case, signature, hint, mutable=()):
    """Run the learner's function on copies of the inputs; explain any exception.

    Changing an input in place is a mistake, except for the arguments named in
    ``mutable`` (e.g. a running state that the caller replaces anyway).
    """
    args = [copy(a) for a in case.args]
    kwargs = {k: copy(v) for k, v in case.kwargs.items()}
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            result = fn(*args, **kwargs)
    except NotImplementedError:
        raise not_implemented(name, fn) from None
    except Exception as err:
        if isinstance(getattr(err, "mistake", None), Mistake):  # _refuse.Refused
            raise CheckFailed(
                name,
                err.mistake,
                _("inputs: {label}").format(label=case.label),
                raised_at(err) or look_at(fn, err.mistake),
            ) from None
        where = raised_at(err) or defined_at(fn)
        raise CheckFailed(
            name,
            raised(err, case, hint, signature, where),
            _("inputs: {label}").format(label=case.label),
            where,
        ) from err
    passed = list(zip(case.names, case.args, args, strict=True)) + [
        (k, case.kwargs[k], kwargs[k]) for k in kwargs
    ]
    for arg_name, before, after in passed:
        if arg_name in mutable:
            continue
        if isinstance(before, np.ndarray) and not np.array_equal(
            before, after, equal_nan=before.dtype.kind == "f"
        ):
            raise CheckFailed(
                name,
                Mistake(
                    symptom="your function changed its input `{arg}` in place "
                    "(e.g. `{arg} -= ...` or `{arg}[...] = ...`)",
                    why="the caller's array is changed too: their data is no "
                    "longer what they passed in",
                    fix="compute a new array instead (`{arg} = {arg} - "
                    "...`) so the caller's data stays as it was",
                    line=rf"\b{arg_name}\s*(\[.*\]\s*)?[-+*/]?=[^=]",
                    key=f"your function changed its input `{arg_name}` in place "
                    f"(e.g. `{arg_name} -= ...` or `{arg_name}[...] = ...`)",
                ).format(arg=arg_name),
                _("inputs: {label}").format(label=case.label),
                line_of(fn, rf"\b{arg_name}\s*(\[.*\]\s*)?[-+*/]?=[^=]"),
            )
    return result


def _not_numbers(out, item):
    kind = type(item).__name__
    if isinstance(item, (tuple, list)):
        what = _("a {kind} of {count} items").format(kind=kind, count=len(item))
    else:
        text = repr(item)
        text = text if len(text) <= 40 else text[:37] + "..."
        what = _("a {kind}, {text}").format(kind=kind, text=text)
    return _("`{name}` is not an array of numbers: got {what}").format(
        name=out.name, what=what
    )


def to_arrays(result, outputs, fn):
    """The learner's return value as a tuple of numeric arrays, or a message."""
    names = ", ".join(o.name for o in outputs)
    function, count = fn_name(fn), len(outputs)
    if result is None:
        what = _("a value") if len(outputs) == 1 else f"({names})"
        return _(
            "{function} returned None instead of {what}: did you forget `return`?"
        ).format(function=function, what=what)
    if len(outputs) == 1:
        items = (result,)
    elif not isinstance(result, (tuple, list)):
        return _(
            "{function} returned one {kind}; it must return {count} values: "
            "return {names}"
        ).format(
            function=function, kind=type(result).__name__, count=count, names=names
        )
    elif len(result) != len(outputs):
        return _(
            "{function} returned {got} values; it must return {count}: return {names}"
        ).format(function=function, got=len(result), count=count, names=names)
    else:
        items = tuple(result)
    arrays = []
    for out, item in zip(outputs, items, strict=True):
        try:
            array = np.asarray(item)
        except Exception:  # e.g. a ragged list, a tensor that requires grad
            return _not_numbers(out, item)
        if array.dtype.kind not in "biuf":  # bool, integer, float; not complex
            return _not_numbers(out, item)
        arrays.append(array)
    return tuple(arrays)


def dtype_problem(got, outputs):
    """A message when a boolean output (a mask) has another dtype, else None."""
    for out, g in zip(outputs, got, strict=True):
        if out.boolean and g.dtype != np.bool_:
            return Mistake(
                symptom="`{name}` has dtype {dtype}, but a mask must be "
                "boolean (True = may attend)",
                why="np.where and indexing read 0/1 numbers as values or "
                "positions, not as a mask",
                fix="build it with dtype=bool, e.g. np.tril(np.ones((n, m), "
                "dtype=bool), k=m - n), or with a comparison such as "
                "j <= i + (m - n)",
                key=f"`{out.name}` has dtype {g.dtype}, but a mask must be "
                "boolean (True = may attend)",  # the English symptom, as before
            ).format(name=out.name, dtype=g.dtype)
    return None


def look_at(fn, message, output=""):
    """The learner's line a Mistake's ``line`` finds, else their ``return`` line
    (the one that returns ``output``, if named), else their function."""
    if isinstance(message, Mistake) and message.line:
        return line_of(fn, message.line)
    return return_line(fn, output)


def quietly(step, *args):
    """``step(*args)``, or None (with a CheckerBugWarning) if it raises."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return step(*args)
    except Exception as err:
        warnings.warn(
            f"{getattr(step, '__name__', step)} failed: {type(err).__name__}: {err}",
            CheckerBugWarning,
            stacklevel=2,
        )
        return None


def match_variant(got, expected, case, variants, tol):
    """The message of the first known mistake that reproduces the learner's answer.

    First pass: a mistake that reproduces every returned value. Second pass: a
    mistake that reproduces one of the wrong values (the others may hold a
    second mistake).
    """
    computed = []
    for message, variant in variants:
        try:
            with np.errstate(all="ignore"):
                wrong = variant(
                    *[copy(a) for a in case.args],
                    **{k: copy(v) for k, v in case.kwargs.items()},
                )
            wrong = as_tuple(wrong, len(got))
        except Exception:  # this mistake cannot happen for these inputs
            continue
        if all(same(g, w, tol) for g, w in zip(got, wrong, strict=True)):
            return message
        computed.append((message, wrong))
    for message, wrong in computed:
        for g, w, e in zip(got, wrong, expected, strict=True):
            if same(g, w, tol) and not same(g, e, tol):
                return message
    return None


def explain(case, got, expected, outputs, variants, diagnose, tol):
    """The most likely mistake behind a wrong answer, as a message.

    In order: the first known mistake in ``variants`` ((message, function)
    pairs) that reproduces the answer; a wrong shape; ``diagnose(case, got,
    expected)``, which reads properties of the answer; the place where the
    answer differs most from the reference.
    """
    facts = {**case.sizes, **case.facts}  # what the message templates may quote
    template = quietly(match_variant, got, expected, case, variants, tol)
    if template is not None:
        return fill(template, facts)
    message = quietly(shape_problem, got, expected, outputs, case, tol)
    if message is not None:
        return message
    if diagnose is not None:
        template = quietly(diagnose, case, got, expected)
        if template is not None:
            return fill(template, facts)
    message = quietly(value_problem, got, expected, outputs, tol, case.label)
    return message or _("your answer differs from the reference")


def _first_wrong(got, expected, outputs, tol):
    """The name of the first output that differs from the reference, or ""."""
    if isinstance(got, str):
        return ""
    for out, g, e in zip(outputs, got, expected, strict=True):
        if not same(g, e, tol):
            return out.name
    return ""


def run(
    name,
    fn,
    cases,
    reference,
    outputs,
    variants=(),
    diagnose=None,
    *,
    signature,
    hint="",
    inspect=None,
    tol=(RTOL, ATOL),
    mutable=(),
    announce=True,
):
    """Run ``fn`` on every case, compare it with ``reference``, explain a mismatch.

    ``signature`` is quoted when ``fn`` rejects an argument; ``hint`` is added
    when ``fn`` raises a shape error (ValueError or IndexError): a string of
    words, or a :class:`Mistake` whose symptom (words) is shown at once and
    whose fix (code) only on ``checks.hint`` (see ``_generic.raised``). ``inspect(case,
    got)`` may reject an answer before the comparison (e.g. a wrong dtype);
    ``tol`` is the (rtol, atol) of every comparison; the arguments named in
    ``mutable`` may be changed in place. ``announce`` prints the success line.
    """
    require_function(name, fn)
    for number, case in enumerate(cases, 1):
        expected = as_tuple(reference(*case.args, **case.kwargs), len(outputs))
        result = call(name, fn, case, signature, hint, mutable)
        got = to_arrays(result, outputs, fn)
        if isinstance(got, str):
            message = got
        else:
            message = dtype_problem(got, outputs)
            if message is None and inspect is not None:
                message = quietly(inspect, case, got)
            if message is None and not all(
                same(g, e, tol) for g, e in zip(got, expected, strict=True)
            ):
                message = explain(case, got, expected, outputs, variants, diagnose, tol)
                if isinstance(message, str):  # a diagnose's words: add the method
                    wrong = _first_wrong(got, expected, outputs, tol)
                    message = Generated(message, method=method(case, wrong))
        if message is not None:
            raise CheckFailed(
                name,
                message,
                _("case {number} of {count}: {label}").format(
                    number=number, count=len(cases), label=case.label
                ),
                look_at(fn, message, _first_wrong(got, expected, outputs, tol)),
            )
    if announce:
        print(_("✓ {name}: {count} cases passed").format(name=name, count=len(cases)))
    return True
