"""The engine's own messages, for a failure that no known mistake names.

A wrong shape, a wrong value at an index, an exception: ``helpers.checks._engine``
finds them, and these functions word them as a :class:`Generated` message, told
in the steps of a known mistake (see ``_hints``): the first failure says what is
wrong and where, in words; the same failure again adds a short why that fits its
kind; ``checks.hint`` gives the method (which output, which case, how to find
the step that differs) and the checker's code hint, if it wrote one.
"""

import itertools
import re

import numpy as np

from helpers._validate import fmt
from helpers.checks._failure import Generated, Mistake
from helpers.i18n import N_, _

RTOL = 1e-6
ATOL = 1e-6


def same(a, b, tol=(RTOL, ATOL)):
    """Same shape and equal within the tolerance (nan equals nan)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    with np.errstate(all="ignore"):
        return bool(
            np.allclose(
                a.astype(np.float64),
                b.astype(np.float64),
                rtol=tol[0],
                atol=tol[1],
                equal_nan=True,
            )
        )


def num(value):
    value = np.asarray(value)
    if value.dtype == np.bool_:
        return str(bool(value))
    return f"{float(value):.6g}"


def shape_text(shape, sizes, expected=None):
    """``(6, 5)`` becomes ``(6, 5) = (m, d_v)`` when the sizes name each axis.

    With the ``expected`` shape, an axis (counted from the right) whose size is
    not the expected one there is named only when that does not guess: its size
    is not in the expected shape, or comes no more often in the answer than in
    the expected shape. So an (n - 1, d_v) answer with n - 1 == d_v reads
    ``(2, 2) = (2, d_v)``, not ``(d_v, d_v)``, and a transposed (d_v, n) answer
    keeps its names. An axis of size 1 is left unnamed: it may as well be a kept
    axis (keepdims, q[None]) as a size that is 1.
    """
    names = []
    for axis, size in enumerate(shape):
        match = [k for k, v in sizes.items() if v == size and size != 1]
        name = match[0] if len(match) == 1 else str(size)
        if expected is not None and not _at(expected, axis - len(shape), size):
            wanted = list(expected).count(size)
            if wanted and list(shape).count(size) > wanted:
                name = str(size)
        names.append(name)
    text = fmt(shape)
    if any(not x.isdigit() for x in names):
        text += " = (" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"
    return text


def _at(shape, axis, size):
    """Whether ``shape`` has ``size`` at ``axis`` (a negative axis)."""
    return -len(shape) <= axis and shape[axis] == size


def _shape_why(out, got, want):
    """Why a shape is wrong, by what happened to the axes."""
    if len(got) < len(want):
        what = _("an axis was dropped (a sum, max or index that did not keep it)")
    elif len(got) > len(want):
        what = _("an axis was kept or added (a size-1 axis, or a batch axis too many)")
    elif sorted(got) == sorted(want):
        what = _("two axes were swapped (a transpose, or a product in the other order)")
    else:
        what = _("an axis has another size: it came from the wrong input or axis")
    rule = out.shape or fmt(want)
    return _(
        "each axis of an output has a meaning, and `{name}` is {rule}; here {what}"
    ).format(name=out.name, rule=rule, what=what)


def shape_problem(got, expected, outputs, case, tol):
    """A message for values returned in the wrong order or with a wrong shape."""
    if len(got) > 1 and [g.shape for g in got] != [e.shape for e in expected]:
        for order in itertools.permutations(range(len(got))):
            # order[j] is the position where the learner returned output j
            if all(same(got[p], e, tol) for p, e in zip(order, expected, strict=True)):
                returned = ", ".join(
                    outputs[order.index(p)].name for p in range(len(got))
                )
                right = ", ".join(o.name for o in outputs)
                return _(
                    "you returned ({returned}); return them in the order ({right})"
                ).format(returned=returned, right=right)
    for out, g, e in zip(outputs, got, expected, strict=True):
        if g.shape != e.shape:
            rule = "" if out.shape == fmt(e.shape) else f"{out.shape} = "
            text = _("`{name}` has shape {shape} but it should be {rule}{expected}")
            method = _(
                "run your function on this case's inputs ({label}) "
                "and print the shape of each array it computes, in order; compare "
                "each with its shape in the lesson: the first that differs is "
                "where `{name}` lost its shape"
            )
            return Generated(
                text.format(
                    name=out.name,
                    shape=shape_text(g.shape, case.sizes, e.shape),
                    rule=rule,
                    expected=fmt(e.shape),
                ),
                why=_shape_why(out, g.shape, e.shape),
                fix=_(out.hint),
                method=method.format(label=case.label, name=out.name),
            )
    return None


def value_problem(got, expected, outputs, tol, label=""):
    """Where the first wrong output differs most from the reference."""
    right = [
        o.name
        for o, g, e in zip(outputs, got, expected, strict=True)
        if same(g, e, tol)
    ]
    for out, g, e in zip(outputs, got, expected, strict=True):
        if same(g, e, tol):
            continue
        g64, e64 = g.astype(np.float64), e.astype(np.float64)
        diff = np.where(np.isnan(g64) != np.isnan(e64), np.inf, np.abs(g64 - e64))
        diff = np.nan_to_num(diff, nan=0.0, posinf=np.inf)
        index = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.ndim else ()
        index = tuple(int(i) for i in index)
        where = _(" at index {index}").format(index=index) if index else ""
        message = _(
            "`{name}` is wrong{where}: you have {got}, the right answer has {right}"
        ).format(name=out.name, where=where, got=num(g[index]), right=num(e[index]))
        if right:
            names = ", ".join(f"`{r}`" for r in right)
            more = (
                _(
                    ". Your {names} matches the reference, so look at the steps that "
                    "compute `{name}` from there"
                )
                if len(right) == 1
                else _(
                    ". Your {names} match the reference, so look at the steps that "
                    "compute `{name}` from there"
                )
            )
            message += more.format(names=names, name=out.name)
        return Generated(message, method=method(label, out.name, where))
    return None


def method(case, output, where=""):
    """How to find a wrong value's step: run the case, compare each intermediate.

    ``case`` is a Case or its label; ``output`` the first output that differs.
    """
    label = getattr(case, "label", case)
    inputs = f" ({label})" if label else ""
    differs = (
        _("; the first output that differs is `{output}`{where}").format(
            output=output, where=where
        )
        if output
        else ""
    )
    return _(
        "run your function on this case's inputs{inputs}, print each intermediate "
        "it computes (the scores, the weights, a total, ...) and compare each with "
        "its definition in the lesson{differs}"
    ).format(inputs=inputs, differs=differs)


# Why an exception usually happens in this kind of code, by its type and text.
_RAISED_WHY = (
    (
        ValueError,
        "broadcast",
        N_(
            "NumPy lines two shapes up from their last axis, and each pair of sizes "
            "must be equal or 1: an array lost the axis a sum or max reduced, or its "
            "axes are in another order than the other array's"
        ),
    ),
    (
        ValueError,
        "matmul|core dimension|not aligned",
        N_(
            "in A @ B the last axis of A must have the size of B's second-to-last "
            "axis: one side is transposed, or the product is in the other order"
        ),
    ),
    (
        ValueError,
        "reshape",
        N_(
            "a reshape keeps every entry: the new sizes must multiply to the old "
            "total, and the axes you split must be the ones that hold those entries"
        ),
    ),
    (
        IndexError,
        "",
        N_(
            "an index ran past the end of an axis, or named an axis the array does "
            "not have: an axis is missing, or the index counts along another axis"
        ),
    ),
    (
        TypeError,
        "",
        N_(
            "a value has a type the operation cannot use (None, a list or a tuple "
            "where an array was expected), or a call got the wrong arguments"
        ),
    ),
    (
        (AttributeError, KeyError),
        "",
        N_(
            "your code asked an object for a name it does not have (an attribute, a "
            "method or a key): e.g. torch's .size() on a NumPy array, which has .shape"
        ),
    ),
    (
        (ZeroDivisionError, FloatingPointError),
        "",
        N_(
            "a division by a total or a size that is 0 in this case (an empty row, "
            "a single key, a fully masked query)"
        ),
    ),
    (
        ValueError,
        "",
        N_(
            "a NumPy function got an array whose shape or value it cannot use: the "
            "shapes going into the line that raised are where to start"
        ),
    ),
)


def raised_why(err):
    """What an exception of this type and text usually means in array code."""
    for kind, pattern, why in _RAISED_WHY:
        if isinstance(err, kind) and re.search(pattern, str(err)):
            return _(why)
    return ""


def raised(err, case, hint, signature, where):
    """The message for a learner's function that raised ``err`` on ``case``.

    ``hint`` is the checker's word for a ValueError or IndexError: a string
    (shown at once) or a :class:`Mistake` whose ``symptom`` is words (shown at
    once), whose ``fix`` is the code (for ``checks.hint``) and whose ``why``, if
    any, replaces the generic one.
    """
    text = str(err).splitlines()[0] if str(err) else ""
    kind = type(err).__name__
    message = _("your function raised {kind}: {text}").format(kind=kind, text=text)
    why, fix = raised_why(err), ""
    if isinstance(err, TypeError) and "argument" in str(err):
        message += _(
            ". Your function must accept the arguments of {signature}."
        ).format(signature=signature)
    elif isinstance(err, (ValueError, IndexError)) and isinstance(hint, Mistake):
        hint = hint.translated()
        message = f"{message.rstrip('.')} — {hint.symptom}"
        why, fix = hint.why or why, hint.fix
    elif isinstance(err, (ValueError, IndexError)) and hint:
        message += _(". Hint: {hint}").format(hint=_(hint))
    else:
        message += "."
    line = f" ({where})" if where else ""
    method = _(
        "run your function on this case's inputs ({label}) and print "
        "the shape of every array that goes into the line that raised{line}; "
        "compare each with its shape in the lesson: the first that differs is the "
        "mistake"
    )
    return Generated(
        message, why=why, fix=fix, method=method.format(label=case.label, line=line)
    )
