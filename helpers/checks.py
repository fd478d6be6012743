"""Exercise checkers: run the learner's function and name the likely mistake.

Each ``check_*`` takes a function with the signature of the matching helper in
``helpers.attention_np``, runs it on a few seeded random cases (n != m,
d_v != d_k, batch axes, masks, large scores) and compares it with that helper.
On success it prints one line and returns True:

    >>> checks.check_softmax(my_softmax)
    ✓ check_softmax: 6 cases passed

On failure it raises AssertionError naming the most likely mistake. To find it,
the checker recomputes the case the way each common mistake would (softmax over
the wrong axis, no scaling, mask applied after the softmax, ...) and reports the
mistake whose result equals the learner's. When none does, it looks at
properties of the answer (rows sum to 1, the mask is obeyed) and finally shows
where the answer differs from the reference.
"""

import itertools
import math
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from helpers import attention_np as anp

__all__ = [
    "check_softmax",
    "check_attention_one_query",
    "check_scaled_dot_product_attention",
    "check_causal_mask",
    "check_split_heads",
    "check_multi_head_attention",
]

_RTOL = 1e-6
_ATOL = 1e-6

# --------------------------------------------------------------------------
# The machinery every checker shares
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Out:
    """One value the learner's function returns, and the shape rule it obeys."""

    name: str
    shape: str  # the rule in words, e.g. "(..., n, d_v)"
    hint: str = ""  # added to a wrong-shape message
    boolean: bool = False  # must have dtype bool


@dataclass
class _Case:
    """One call of the learner's function and what the messages may quote."""

    label: str  # the inputs in words, e.g. "Q (4, 3), K (6, 3), V (6, 5)"
    names: tuple  # names of the positional arguments
    args: tuple  # positional arguments
    kwargs: dict  # optional arguments, passed by keyword
    sizes: dict = field(default_factory=dict)  # named axis sizes: n, m, d_k ...
    facts: dict = field(default_factory=dict)  # other numbers messages quote
    large: bool = False  # scores big enough to overflow a naive exp


def _fmt(shape):
    return str(tuple(int(s) for s in shape))


def _describe(name, value):
    if isinstance(value, np.ndarray):
        kind = " bool" if value.dtype == np.bool_ else ""
        return f"{name} {_fmt(value.shape)}{kind}"
    return f"{name}={value!r}"


def _case(names, *args, sizes=None, facts=None, large=False, note="", **kwargs):
    """Build a case; optional arguments equal to None are left out of the call.

    ``note`` is added to the label to say what is special about the case.
    """
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    label = ", ".join(
        [_describe(k, a) for k, a in zip(names, args, strict=True)]
        + [_describe(k, v) for k, v in kwargs.items()]
        + ([note] if note else [])
    )
    sizes = dict(sizes or {})
    return _Case(label, tuple(names), args, kwargs, sizes, dict(facts or {}), large)


def _copy(value):
    return value.copy() if isinstance(value, np.ndarray) else value


def _fn_name(fn):
    name = getattr(fn, "__name__", "")
    return name if name and name != "<lambda>" else "your function"


def _shape_text(shape, sizes):
    """``(6, 5)`` becomes ``(6, 5) = (m, d_v)`` when the sizes name each axis."""
    names = []
    for size in shape:
        match = [k for k, v in sizes.items() if v == size]
        names.append(match[0] if len(match) == 1 else str(size))
    text = _fmt(shape)
    if any(not x.isdigit() for x in names):
        text += " = (" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"
    return text


def _same(a, b):
    """Same shape and equal within the tolerance (nan equals nan)."""
    if a.shape != b.shape:
        return False
    with np.errstate(invalid="ignore"):
        return bool(
            np.allclose(
                a.astype(np.float64),
                b.astype(np.float64),
                rtol=_RTOL,
                atol=_ATOL,
                equal_nan=True,
            )
        )


def _as_tuple(result, count):
    items = (result,) if count == 1 else tuple(result)
    return tuple(np.asarray(x) for x in items)


def _call(name, fn, case, signature, hint):
    """Run the learner's function on copies of the inputs; explain any exception."""
    args = [_copy(a) for a in case.args]
    kwargs = {k: _copy(v) for k, v in case.kwargs.items()}
    try:
        with np.errstate(all="ignore"):
            result = fn(*args, **kwargs)
    except NotImplementedError:
        raise AssertionError(
            f"{_fn_name(fn)} is not implemented yet: replace the "
            "`raise NotImplementedError(...)` line with your code"
        ) from None
    except Exception as err:
        advice = ""
        if isinstance(err, TypeError) and "argument" in str(err):
            advice = f"\n  Your function must accept the arguments of {signature}."
        elif isinstance(err, (ValueError, IndexError)) and hint:
            advice = f"\n  Hint: {hint}"
        raise AssertionError(
            f"{name}: your function raised {type(err).__name__}: {err}\n"
            f"  inputs: {case.label}{advice}"
        ) from err
    passed = list(zip(case.names, case.args, args, strict=True)) + [
        (k, case.kwargs[k], kwargs[k]) for k in kwargs
    ]
    for arg_name, before, after in passed:
        if isinstance(before, np.ndarray) and not np.array_equal(before, after):
            raise AssertionError(
                f"{name}: your function changed its input `{arg_name}` in place "
                f"(e.g. `{arg_name} -= ...` or `{arg_name}[...] = ...`). Compute a "
                f"new array instead (`{arg_name} = {arg_name} - ...`) so the "
                f"caller's data stays as it was.\n  inputs: {case.label}"
            )
    return result


def _to_arrays(result, outputs, fn):
    """The learner's return value as a tuple of numeric arrays, or a message."""
    names = ", ".join(o.name for o in outputs)
    if result is None:
        what = "a value" if len(outputs) == 1 else f"({names})"
        return (
            f"{_fn_name(fn)} returned None instead of {what}: did you forget `return`?"
        )
    if len(outputs) == 1:
        items = (result,)
    elif not isinstance(result, (tuple, list)):
        return (
            f"{_fn_name(fn)} returned one {type(result).__name__}; it must return "
            f"{len(outputs)} values: return {names}"
        )
    elif len(result) != len(outputs):
        return (
            f"{_fn_name(fn)} returned {len(result)} values; it must return "
            f"{len(outputs)}: return {names}"
        )
    else:
        items = tuple(result)
    arrays = []
    for out, item in zip(outputs, items, strict=True):
        try:
            array = np.asarray(item)
        except Exception:  # e.g. a ragged list
            array = None
        if array is None or not (
            array.dtype == np.bool_
            or np.issubdtype(array.dtype, np.integer)
            or np.issubdtype(array.dtype, np.floating)
        ):
            if isinstance(item, (tuple, list)):
                what = f"a {type(item).__name__} of {len(item)} items"
            else:
                text = repr(item)
                text = text if len(text) <= 40 else text[:37] + "..."
                what = f"a {type(item).__name__}, {text}"
            return f"`{out.name}` is not an array of numbers: got {what}"
        arrays.append(array)
    return tuple(arrays)


def _dtype_problem(got, outputs):
    """A message when a boolean output (a mask) has another dtype, else None."""
    for out, g in zip(outputs, got, strict=True):
        if out.boolean and g.dtype != np.bool_:
            return (
                f"`{out.name}` has dtype {g.dtype}; a mask must be boolean "
                "(True = may attend). Build it with dtype=bool, e.g. "
                "np.tril(np.ones((n, m), dtype=bool), k=m - n), or with a "
                "comparison such as j <= i + (m - n)"
            )
    return None


def _shape_problem(got, expected, outputs, case):
    """A message for values returned in the wrong order or with a wrong shape."""
    if len(got) > 1 and [g.shape for g in got] != [e.shape for e in expected]:
        for order in itertools.permutations(range(len(got))):
            # order[j] is the position where the learner returned output j
            if all(_same(got[p], e) for p, e in zip(order, expected, strict=True)):
                returned = ", ".join(
                    outputs[order.index(p)].name for p in range(len(got))
                )
                right = ", ".join(o.name for o in outputs)
                return f"you returned ({returned}); return them in the order ({right})"
    for out, g, e in zip(outputs, got, expected, strict=True):
        if g.shape != e.shape:
            rule = "" if out.shape == _fmt(e.shape) else f"{out.shape} = "
            return (
                f"`{out.name}` has shape {_shape_text(g.shape, case.sizes)} but it "
                f"should be {rule}{_fmt(e.shape)}. {out.hint}"
            ).rstrip()
    return None


def _match_variant(got, expected, case, variants):
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
                    *[_copy(a) for a in case.args],
                    **{k: _copy(v) for k, v in case.kwargs.items()},
                )
            wrong = _as_tuple(wrong, len(got))
        except Exception:  # this mistake cannot happen for these inputs
            continue
        if all(_same(g, w) for g, w in zip(got, wrong, strict=True)):
            return message
        computed.append((message, wrong))
    for message, wrong in computed:
        for g, w, e in zip(got, wrong, expected, strict=True):
            if _same(g, w) and not _same(g, e):
                return message
    return None


def _value_problem(got, expected, outputs):
    """Where the first wrong output differs from the reference."""
    right = [
        o.name for o, g, e in zip(outputs, got, expected, strict=True) if _same(g, e)
    ]
    for out, g, e in zip(outputs, got, expected, strict=True):
        if _same(g, e):
            continue
        g64, e64 = g.astype(np.float64), e.astype(np.float64)
        with np.errstate(invalid="ignore"):
            diff = np.where(np.isnan(g64) != np.isnan(e64), np.inf, np.abs(g64 - e64))
        diff = np.nan_to_num(diff, nan=0.0, posinf=np.inf)
        index = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.ndim else ()
        where = f" at index {tuple(int(i) for i in index)}" if index else ""
        message = (
            f"`{out.name}` is wrong{where}: you have {_num(g[index])}, "
            f"the reference has {_num(e[index])}"
        )
        if right:
            message += (
                f". Your {', '.join(f'`{r}`' for r in right)} "
                f"match{'es' if len(right) == 1 else ''} the reference, so look at "
                f"the steps that compute `{out.name}` from there"
            )
        return message
    return None


def _num(value):
    value = np.asarray(value)
    if value.dtype == np.bool_:
        return str(bool(value))
    return f"{float(value):.6g}"


def _explain(case, got, expected, outputs, variants, diagnose):
    """The most likely mistake behind a wrong answer, as a message.

    In order: the first known mistake in ``variants`` ((message, function)
    pairs) that reproduces the answer; a wrong shape; ``diagnose(case, got,
    expected)``, which reads properties of the answer; the place where the
    answer differs from the reference.
    """
    facts = {**case.sizes, **case.facts}  # what the message templates may quote
    template = _match_variant(got, expected, case, variants)
    if template is not None:
        return template.format_map(facts)
    message = _shape_problem(got, expected, outputs, case)
    if message is not None:
        return message
    template = diagnose(case, got, expected) if diagnose else None
    if template is not None:
        return template.format_map(facts)
    return _value_problem(got, expected, outputs)


def _run(
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
):
    """Run ``fn`` on every case, compare it with ``reference``, explain a mismatch.

    ``signature`` is quoted when ``fn`` rejects an argument; ``hint`` is added
    when ``fn`` raises a shape error (ValueError or IndexError).
    """
    if not callable(fn):
        raise AssertionError(
            f"{name} needs your function itself, e.g. {name}(my_function); "
            f"got a {type(fn).__name__}"
        )
    for number, case in enumerate(cases, 1):
        expected = _as_tuple(reference(*case.args, **case.kwargs), len(outputs))
        result = _call(name, fn, case, signature, hint)
        got = _to_arrays(result, outputs, fn)
        if isinstance(got, str):
            message = got
        else:
            message = _dtype_problem(got, outputs)
            if message is None and not all(
                _same(g, e) for g, e in zip(got, expected, strict=True)
            ):
                message = _explain(case, got, expected, outputs, variants, diagnose)
        if message is not None:
            raise AssertionError(
                f"{name}: {message}\n  (case {number} of {len(cases)}: {case.label})"
            )
    print(f"✓ {name}: {len(cases)} cases passed")
    return True


# --------------------------------------------------------------------------
# Building blocks for the known mistakes
# --------------------------------------------------------------------------


def _pick_scale(scale, d_k, rule):
    """The factor a (possibly wrong) implementation multiplies the scores by."""
    if rule == "none":  # forgot to scale
        return 1.0
    if rule == "ignored":  # always 1/sqrt(d_k), even when scale is given
        return 1.0 / math.sqrt(d_k)
    if scale is not None:
        return scale
    return 1.0 / d_k if rule == "d_k" else 1.0 / math.sqrt(d_k)


def _masked_softmax(scores, mask, mode="before", axis=-1):
    """Softmax of the scores with the mask applied the right or a wrong way."""
    if mask is None:
        return anp.softmax(scores, axis)
    if mode == "before":
        return anp.softmax(np.where(mask, scores, -np.inf), axis)
    if mode == "flipped":
        return anp.softmax(np.where(mask, -np.inf, scores), axis)
    if mode == "after":
        return anp.softmax(scores, axis) * mask
    if mode == "unguarded":  # max-subtracted, but fully masked rows become nan
        scores = np.where(mask, scores, -np.inf)
        e = np.exp(scores - scores.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)
    if mode == "fill":  # -1e9 instead of -inf: fully masked rows become uniform
        return anp.softmax(np.where(mask, scores, -1e9), axis)
    if mode == "added":  # the boolean mask added to the scores as 0/1
        return anp.softmax(scores + mask, axis)
    raise ValueError(mode)


def _naive_softmax(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


# --------------------------------------------------------------------------
# check_softmax
# --------------------------------------------------------------------------

_SOFTMAX_WRONG_AXIS = (
    "your softmax normalises over the wrong axis: your result sums to 1 along "
    "axis {a}, but this call asked for axis={{axis}}. Take the max and the sum "
    "over the `axis` argument (with keepdims=True), not over a fixed axis"
)
_SOFTMAX_NOT_NORMALISED = (
    "your values do not sum to 1 along axis={axis}: divide the exponentials by "
    "their sum Z, e / e.sum(axis=axis, keepdims=True)"
)
_SOFTMAX_NO_MAX = (
    "your softmax returns nan or inf for large inputs (entries near ±1000): "
    "np.exp(1000) overflows to inf, and inf / inf is nan. Subtract the max along "
    "the axis before exponentiating; softmax(x) = softmax(x - max(x)), so the "
    "answer does not change"
)


def _softmax_cases(rng):
    cases = []
    for shape, axis in [((3, 5), None), ((6,), None), ((2, 3, 4), None)]:
        cases.append(_case(("x",), rng.normal(size=shape), axis=axis))
    for shape, axis in [((4, 6), 0), ((2, 5, 3), 1)]:
        cases.append(_case(("x",), rng.normal(size=shape), axis=axis))
    offsets = np.array([[1000.0], [-1000.0], [0.0]])  # one row near +1000, one -1000
    x = rng.normal(size=(3, 4)) * 5 + offsets
    cases.append(_case(("x",), x, large=True, note="entries near ±1000"))
    for case in cases:
        case.facts["axis"] = case.kwargs.get("axis", -1)
    return cases


def _diagnose_softmax(case, got, expected):
    (result,) = got
    axis = case.facts["axis"] % result.ndim
    if not np.isfinite(result).all():
        if case.large:
            return _SOFTMAX_NO_MAX
        return "your result contains nan or inf where the reference is finite"
    if not np.allclose(result.sum(axis=axis), 1.0):
        for other in range(result.ndim):
            if other != axis and np.allclose(result.sum(axis=other), 1.0):
                return _SOFTMAX_WRONG_AXIS.format(a=other)
        return _SOFTMAX_NOT_NORMALISED
    return None


def check_softmax(fn, *, seed=0):
    """Check ``fn(x, axis=-1)``, a stable softmax along ``axis``.

    Cases: 1-, 2- and 3-D inputs, axis -1, 0 and 1, and inputs near ±1000.
    """
    variants = [
        (_SOFTMAX_WRONG_AXIS.format(a=a), lambda x, axis=-1, a=a: anp.softmax(x, a))
        for a in (-1, 0, 1)
    ] + [
        (_SOFTMAX_NO_MAX, _naive_softmax),
        (_SOFTMAX_NOT_NORMALISED, lambda x, axis=-1: np.exp(x)),
        (
            _SOFTMAX_NOT_NORMALISED,
            lambda x, axis=-1: np.exp(x - x.max(axis=axis, keepdims=True)),
        ),
    ]
    return _run(
        "check_softmax",
        fn,
        _softmax_cases(np.random.default_rng(seed)),
        anp.softmax,
        (_Out("result", "x.shape", "Softmax rescales every entry, it drops none."),),
        variants,
        _diagnose_softmax,
        signature="softmax(x, axis=-1)",
        hint="if NumPy says the shapes could not be broadcast together, keep the "
        "reduced axis: x.max(axis=axis, keepdims=True) and "
        "e.sum(axis=axis, keepdims=True)",
    )


# --------------------------------------------------------------------------
# check_attention_one_query
# --------------------------------------------------------------------------

_NO_SCALE = (
    "your scores are not scaled: score_s = <q, k_s> / sqrt(d_k), so multiply the "
    "dot products by scale = 1 / math.sqrt(d_k) (or by `scale` when it is given)"
)
_SCALE_D_K = (
    "you divided the scores by d_k = {d_k}; divide by sqrt(d_k) = {sqrt_d_k:.4g} "
    "instead (math.sqrt(d_k))"
)
_SCALE_IGNORED = (
    "you ignored the `scale` argument (this call passed scale={scale}): use it "
    "instead of 1 / sqrt(d_k) when it is not None"
)
_FORGOT_1_OVER_Z = (
    "your weights do not sum to 1: you forgot the 1/Z. Divide each exp(score_s) "
    "by Z = sum_j exp(score_j), in the weights and in y = sum_s (1/Z) "
    "exp(score_s) v_s"
)
_Y_FORGOT_1_OVER_Z = (
    "your weights are right but y is not: you forgot the 1/Z in "
    "y = sum_s (1/Z) exp(score_s) v_s (or use y = weights @ V)"
)
_Z_SHIFTED = (
    "your Z is sum_j exp(score_j - max score), the normaliser after subtracting "
    "the max. Return the normaliser of the scores themselves, Z = sum_j "
    "exp(score_j) (the shifted sum times exp(max score))"
)
_Z_ONE = (
    "your Z is 1, the sum of the weights after normalising. Return the sum before "
    "dividing: Z = sum_j exp(score_j)"
)
_Z_UNSCALED = (
    "your Z is computed from unscaled scores: Z = sum_j exp(score_j) with "
    "score_j = <q, k_j> / sqrt(d_k), the same scores as the weights"
)
_Y_WRONG_AXIS = (
    "your y has one entry per key: you summed weights[s] * v_s over the feature "
    "axis (axis 1) instead of over the keys (axis 0). y = sum_s weights[s] * V[s] "
    "= weights @ V has d_v entries"
)
_Y_FROM_K = (
    "your y is a weighted sum of the keys K instead of the values V: "
    "y = sum_s weights[s] * V[s]"
)


def _one_query_variant(
    q,
    K,
    V,
    scale=None,
    *,
    scale_rule="right",
    weights_normalised=True,
    y_normalised=True,
    z="true",
    y_from="V",
    y_axis=0,
):
    """attention_one_query with one of the common mistakes switched on."""
    scores = K @ q * _pick_scale(scale, q.shape[0], scale_rule)  # (m,)
    e = np.exp(scores)
    Z = e.sum()
    weights = e / Z if weights_normalised else e
    values = V if y_from == "V" else K
    y = ((e / Z if y_normalised else e)[:, None] * values).sum(axis=y_axis)
    Z = {
        "true": Z,
        "shifted": np.exp(scores - scores.max()).sum(),
        "one": 1.0,
        "unscaled": np.exp(K @ q).sum(),
    }[z]
    return y, weights, Z


def _one_query_cases(rng):
    cases = []
    for d_k, m, d_v, scale in [(4, 6, 5, None), (3, 5, 2, None), (8, 3, 7, 0.5)]:
        cases.append(
            _case(
                ("q", "K", "V"),
                rng.normal(size=d_k),
                rng.normal(size=(m, d_k)),
                rng.normal(size=(m, d_v)),
                scale=scale,
                sizes={"m": m, "d_k": d_k, "d_v": d_v},
                facts={"sqrt_d_k": math.sqrt(d_k), "scale": scale},
            )
        )
    cases.append(
        _case(
            ("q", "K", "V"),
            rng.normal(size=2),
            rng.normal(size=(1, 2)),
            rng.normal(size=(1, 3)),
            sizes={"m": 1, "d_k": 2, "d_v": 3},
            facts={"sqrt_d_k": math.sqrt(2), "scale": None},
        )
    )
    return cases


def _diagnose_one_query(case, got, expected):
    y, weights, Z = got
    if not np.isclose(weights.sum(), 1.0):
        return _FORGOT_1_OVER_Z
    if _same(y, expected[0]) and _same(weights, expected[1]):
        return (
            f"your y and weights are right but Z is {_num(Z)}; it should be "
            f"Z = sum_j exp(score_j) = {_num(expected[2])}, the sum of the "
            "exponentials before dividing"
        )
    return None


def check_attention_one_query(fn, *, seed=0):
    """Check ``fn(q, K, V, scale=None) -> (y, weights, Z)`` for one query.

    Cases: m != d_k != d_v, an explicit ``scale``, and a single key (m = 1).
    """

    def v(**mistake):
        return partial(_one_query_variant, **mistake)

    variants = [
        (_NO_SCALE, v(scale_rule="none")),
        (_SCALE_D_K, v(scale_rule="d_k")),
        (_SCALE_IGNORED, v(scale_rule="ignored")),
        (_FORGOT_1_OVER_Z, v(weights_normalised=False, y_normalised=False)),
        (_FORGOT_1_OVER_Z, v(weights_normalised=False)),
        (_Y_FORGOT_1_OVER_Z, v(y_normalised=False)),
        (_Z_SHIFTED, v(z="shifted")),
        (_Z_ONE, v(z="one")),
        (_Z_UNSCALED, v(z="unscaled")),
        (_Y_WRONG_AXIS, v(y_axis=1)),
        (_Y_FROM_K, v(y_from="K")),
    ]
    outputs = (
        _Out("y", "(d_v,)", "y = sum_s weights[s] * V[s] sums over the keys."),
        _Out("weights", "(m,)", "One weight per key."),
        _Out("Z", "()", "Z is a single number, sum_j exp(score_j)."),
    )
    return _run(
        "check_attention_one_query",
        fn,
        _one_query_cases(np.random.default_rng(seed)),
        anp.attention_one_query,
        outputs,
        variants,
        _diagnose_one_query,
        signature="attention_one_query(q, K, V, scale=None)",
        hint="the shapes are q (d_k,), K (m, d_k), V (m, d_v); the scores "
        "K @ q are (m,) and y = weights @ V is (d_v,)",
    )


# --------------------------------------------------------------------------
# check_scaled_dot_product_attention
# --------------------------------------------------------------------------

_COLUMNS_SUM_TO_1 = (
    "your weights' columns sum to 1, not its rows: did you take the softmax over "
    "axis 0 / axis -2 (the queries) instead of the last axis (the keys)? Each "
    "query's weights over the m keys must sum to 1: softmax(scores, axis=-1)"
)
_BATCH_AXIS = (
    "your weights sum to 1 over axis 0, the batch axis here: take the softmax "
    "over the last axis (the keys), axis=-1, so it works with any batch axes"
)
_MASK_AFTER = (
    "the blocked weights are zero but the rows no longer sum to 1: you applied "
    "the mask after the softmax. Mask the scores instead (blocked -> -inf, "
    "np.where(mask, scores, -np.inf)), then take the softmax, so the allowed "
    "keys share the whole weight"
)
_MASK_FLIPPED = (
    "your mask polarity is flipped: in this course masks are boolean with "
    "True = may attend, so block the positions where the mask is False: "
    "np.where(mask, scores, -np.inf). Yours blocks the True positions"
)
_MASK_ADDED = (
    "you added the boolean mask to the scores (scores + mask adds 0 or 1). A "
    "boolean mask selects: np.where(mask, scores, -np.inf)"
)
_MASK_IGNORED = (
    "your weights are not zero where the mask is False: the mask was not applied "
    "to the scores. Use np.where(mask, scores, -np.inf) before the softmax"
)
_FULLY_MASKED_UNIFORM = (
    "a fully masked row (a query that may attend to no key) must give zero "
    "weights and a zero output, but yours spreads the weight evenly (1/m each): "
    "filling with a finite number like -1e9 makes all its scores equal. Fill "
    "with -np.inf and set the weights of rows with no allowed key to 0"
)
_FULLY_MASKED_NAN = (
    "a fully masked row (a query that may attend to no key) gives nan: all its "
    "scores are -inf, so the max subtraction computes -inf - (-inf) = nan (or "
    "the sum is 0 and you divide 0 / 0). Return zero weights and a zero output "
    "for such rows, as torch's scaled_dot_product_attention does"
)
_NO_MAX = (
    "your result has nan or inf for large scores (here up to {max_score:.0f}): "
    "np.exp overflows to inf and inf / inf is nan. Subtract the max score of "
    "each row before exponentiating (softmax is unchanged by the shift)"
)
_OUTPUT_TRANSPOSED = (
    "your output is transposed, (d_v, n) instead of (n, d_v): compute "
    "output = weights @ V, (n, m) @ (m, d_v)"
)
_PRODUCT_ORDER_HINT = (
    "check the order of the matrix products and which matrix you transpose: "
    "scores = Q @ K^T is (..., n, m) and output = weights @ V is (..., n, d_v). "
    "For batched inputs transpose only the last two axes, "
    "np.swapaxes(K, -1, -2); K.T reverses all of them"
)


def _sdpa_variant(
    Q,
    K,
    V,
    mask=None,
    scale=None,
    *,
    scale_rule="right",
    axis=-1,
    mask_mode="before",
    naive=False,
    transpose_output=False,
):
    """scaled_dot_product_attention with one of the common mistakes switched on."""
    scale = _pick_scale(scale, Q.shape[-1], scale_rule)
    scores = Q @ np.swapaxes(K, -1, -2) * scale  # (..., n, m)
    if naive:
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        weights = _naive_softmax(scores, axis)
    else:
        weights = _masked_softmax(scores, mask, mask_mode, axis)
    output = weights @ V  # (..., n, d_v)
    return (np.swapaxes(output, -1, -2) if transpose_output else output), weights


def _random_mask(rng, shape):
    """A boolean mask whose every row has at least one True and one False."""
    mask = rng.random(shape) < 0.5
    m = shape[-1]
    first = rng.integers(m, size=shape[:-1])[..., None]
    second = (first + 1 + rng.integers(m - 1, size=shape[:-1])[..., None]) % m
    np.put_along_axis(mask, first, True, axis=-1)
    np.put_along_axis(mask, second, False, axis=-1)
    return mask


def _attention_cases(rng):
    def case(batch, n, m, d_k, d_v, size=1.0, mask=None, scale=None, note=""):
        Q = rng.normal(size=batch + (n, d_k)) * size
        K = rng.normal(size=batch + (m, d_k)) * size
        V = rng.normal(size=batch + (m, d_v))
        chosen = 1 / math.sqrt(d_k) if scale is None else scale
        sizes = {"n": n, "m": m, "d_k": d_k, "d_v": d_v}
        if batch:
            sizes["batch"] = batch[0]
        facts = {
            "sqrt_d_k": math.sqrt(d_k),
            "scale": scale,
            "max_score": float(np.abs(Q @ np.swapaxes(K, -1, -2) * chosen).max()),
        }
        return _case(
            ("Q", "K", "V"),
            Q,
            K,
            V,
            mask=mask,
            scale=scale,
            sizes=sizes,
            facts=facts,
            large=size > 1,
            note=note or (f"scores up to {facts['max_score']:.0f}" if size > 1 else ""),
        )

    fully_masked = _random_mask(rng, (4, 5))
    fully_masked[1] = False  # query 1 may attend to nothing
    return [
        case((), 4, 6, 3, 5),
        case((2,), 3, 5, 4, 6),
        case((), 3, 4, 5, 2, scale=0.3),
        case((), 3, 5, 4, 3, size=40.0),
        case((2,), 4, 6, 3, 2, mask=_random_mask(rng, (2, 4, 6))),
        case((), 4, 5, 3, 2, mask=fully_masked, note="query 1 fully masked"),
    ]


def _diagnose_attention(case, got, expected):
    """Name a mistake from the weights: rows sum to 1, the mask is obeyed."""
    output, weights = (g.astype(np.float64) for g in got)
    mask = case.kwargs.get("mask")
    allowed = None if mask is None else np.broadcast_to(mask, weights.shape)
    empty = np.zeros(weights.shape[:-1], bool) if mask is None else ~allowed.any(-1)
    bad = ~(np.isfinite(weights).all(-1) & np.isfinite(output).all(-1))  # (..., n)
    good = ~bad & ~empty
    if allowed is not None and good.any():
        on_allowed = np.where(allowed, weights, 0.0)[good]
        on_blocked = np.where(allowed, 0.0, weights)[good]
        if np.allclose(on_allowed, 0.0) and not np.allclose(on_blocked, 0.0):
            return _MASK_FLIPPED
    if bad.any():
        if not (bad & ~empty).any():
            return _FULLY_MASKED_NAN
        if case.large:
            return _NO_MAX
        return (
            "your result contains nan or inf where the reference is finite "
            f"({int(bad.sum())} rows of queries)"
        )
    if not np.allclose(weights.sum(-1)[~empty], 1.0):
        for axis in range(weights.ndim - 1):
            if np.allclose(weights.sum(axis), 1.0):
                return _COLUMNS_SUM_TO_1 if axis == weights.ndim - 2 else _BATCH_AXIS
        if allowed is not None and np.allclose(weights[~allowed], 0.0):
            return _MASK_AFTER
        return (
            "the rows of your weights do not sum to 1: each query's weights over "
            "the keys must sum to 1, softmax(scores, axis=-1)"
        )
    if allowed is not None:
        if not np.allclose(np.where(allowed, 0.0, weights)[good], 0.0):
            return _MASK_IGNORED
        if empty.any() and not np.allclose(weights[empty], 0.0):
            return _FULLY_MASKED_UNIFORM
    return None


def check_scaled_dot_product_attention(fn, *, seed=0):
    """Check ``fn(Q, K, V, mask=None, scale=None) -> (output, weights)``.

    Cases: n != m and d_v != d_k, a batch axis, an explicit ``scale``, large
    scores, a random mask, and a mask with a fully masked row.
    """

    def v(**mistake):
        return partial(_sdpa_variant, **mistake)

    variants = [
        (_COLUMNS_SUM_TO_1, v(axis=-2)),
        (_BATCH_AXIS, v(axis=0)),
        (_NO_SCALE, v(scale_rule="none")),
        (_SCALE_D_K, v(scale_rule="d_k")),
        (_SCALE_IGNORED, v(scale_rule="ignored")),
        (_OUTPUT_TRANSPOSED, v(transpose_output=True)),
        (_MASK_AFTER, v(mask_mode="after")),
        (_MASK_FLIPPED, v(mask_mode="flipped")),
        (_MASK_ADDED, v(mask_mode="added")),
        (_FULLY_MASKED_UNIFORM, v(mask_mode="fill")),
        (_FULLY_MASKED_NAN, v(mask_mode="unguarded")),
        (_NO_MAX, v(naive=True)),  # after the line above: both give nan rows
    ]
    outputs = (
        _Out("output", "(..., n, d_v)", "output = weights @ V: (n, m) @ (m, d_v)."),
        _Out("weights", "(..., n, m)", "One row per query, one column per key."),
    )
    return _run(
        "check_scaled_dot_product_attention",
        fn,
        _attention_cases(np.random.default_rng(seed)),
        anp.scaled_dot_product_attention,
        outputs,
        variants,
        _diagnose_attention,
        signature="scaled_dot_product_attention(Q, K, V, mask=None, scale=None)",
        hint=_PRODUCT_ORDER_HINT,
    )


# --------------------------------------------------------------------------
# check_causal_mask
# --------------------------------------------------------------------------

_CAUSAL_FLIPPED = (
    "your mask polarity is flipped: True must mean 'may attend', so query i sees "
    "key j exactly when j <= i + (m - n). Yours is True on the blocked (future) "
    "keys: negate it with ~"
)
_CAUSAL_TRIU = (
    "you kept the upper triangle (np.triu): a query may attend to the keys at or "
    "before its own position, the lower triangle (np.tril), diagonal included"
)
_CAUSAL_UPPER_LEFT = (
    "with n={n} queries and m={m} keys the mask must be aligned lower-right, so "
    "that the last query sees every key (as with a KV cache: the n new queries "
    "follow m - n earlier keys). Yours is aligned upper-left: use "
    "np.tril(..., k=m - n), here k={k}"
)
_CAUSAL_K_SIGN = (
    "you shifted the diagonal the wrong way: query i sees key j when "
    "j <= i + (m - n), so k = m - n = {k}, not n - m"
)
_CAUSAL_SQUARE = (
    "your mask is (n, n) = ({n}, {n}) but it needs one column per key: "
    "shape (n, m) = ({n}, {m})"
)


def _causal_cases():
    return [
        _case(
            ("n", "m"),
            n,
            m,
            sizes={"n": n, "m": m} if n != m else {},  # n == m names no axis
            facts={"n": n, "m": m, "k": m - n},
        )
        for n, m in [(4, 4), (3, 5), (1, 4), (2, 6), (5, 3)]
    ]


def check_causal_mask(fn):
    """Check ``fn(n, m) -> mask``, boolean (n, m), True = may attend, lower-right.

    Cases: n == m, n < m (queries after cached keys), one query, and n > m.
    """

    def ones(n, m):
        return np.ones((n, m), dtype=bool)

    variants = [
        (_CAUSAL_FLIPPED, lambda n, m: ~anp.causal_mask(n, m)),
        (_CAUSAL_TRIU, lambda n, m: np.triu(ones(n, m))),
        (_CAUSAL_TRIU, lambda n, m: np.triu(ones(n, m), k=m - n)),
        (_CAUSAL_UPPER_LEFT, lambda n, m: np.tril(ones(n, m))),
        (_CAUSAL_K_SIGN, lambda n, m: np.tril(ones(n, m), k=n - m)),
        (_CAUSAL_SQUARE, lambda n, m: np.tril(ones(n, n))),
    ]
    return _run(
        "check_causal_mask",
        fn,
        _causal_cases(),
        anp.causal_mask,
        (_Out("mask", "(n, m)", "One row per query, one column per key.", True),),
        variants,
        signature="causal_mask(n, m)",
    )


# --------------------------------------------------------------------------
# check_split_heads
# --------------------------------------------------------------------------

_SPLIT_NO_TRANSPOSE = (
    "you reshaped straight to (batch, num_heads, n, d_head) without the "
    "transpose: the shape is right, but each head now holds pieces of several "
    "tokens. Reshape to (batch, n, num_heads, d_head) first, then swap axes 1 "
    "and 2: x.reshape(batch, n, num_heads, d_head).transpose(0, 2, 1, 3)"
)
_SPLIT_INTERLEAVED = (
    "your heads are interleaved: head h got features h, h + num_heads, "
    "h + 2 * num_heads, ... Each head takes a contiguous block of "
    "d_head = d_model / num_heads features: reshape to "
    "(batch, n, num_heads, d_head), not (batch, n, d_head, num_heads)"
)


def _split_cases(rng):
    cases = []
    for batch, n, d_model, num_heads in [
        (2, 5, 12, 3),
        (1, 4, 6, 2),
        (3, 2, 8, 4),
        (2, 3, 5, 1),
    ]:
        d_head = d_model // num_heads
        sizes = {
            "batch": batch,
            "n": n,
            "d_model": d_model,
            "num_heads": num_heads,
            "d_head": d_head,
        }
        x = rng.normal(size=(batch, n, d_model))
        cases.append(_case(("x", "num_heads"), x, num_heads, sizes=sizes))
    return cases


def check_split_heads(fn, *, seed=0):
    """Check ``fn(x, num_heads)``: (batch, n, d_model) -> (batch, H, n, d_head).

    Cases: three or more distinct sizes, one sequence, and a single head.
    """

    def no_transpose(x, num_heads):
        batch, n, d_model = x.shape
        return x.reshape(batch, num_heads, n, d_model // num_heads)

    def interleaved(x, num_heads):
        batch, n, d_model = x.shape
        return x.reshape(batch, n, d_model // num_heads, num_heads).transpose(
            0, 3, 1, 2
        )

    return _run(
        "check_split_heads",
        fn,
        _split_cases(np.random.default_rng(seed)),
        anp.split_heads,
        (
            _Out(
                "result",
                "(batch, num_heads, n, d_head)",
                "split_heads cuts d_model into num_heads blocks of d_head features "
                "and moves the head axis in front of n.",
            ),
        ),
        [(_SPLIT_NO_TRANSPOSE, no_transpose), (_SPLIT_INTERLEAVED, interleaved)],
        signature="split_heads(x, num_heads)",
        hint="reshape to (batch, n, num_heads, d_head), then swap axes 1 and 2",
    )


# --------------------------------------------------------------------------
# check_multi_head_attention
# --------------------------------------------------------------------------

_MHA_SCALE_D_MODEL = (
    "you scaled the scores by sqrt(d_model) = sqrt({d_model}); each head attends "
    "with its own key size, the per-head d_k = d_model / num_heads = {d_k}: "
    "divide by math.sqrt(d_k)"
)
_MHA_SCALE_D_MODEL_NO_SQRT = (
    "you divided the scores by d_model = {d_model}; divide by the square root of "
    "the per-head d_k = d_model / num_heads = {d_k}: math.sqrt(d_k)"
)
_MHA_SCALE_D_K = (
    "you divided the scores by the per-head d_k = {d_k}; divide by its square "
    "root, math.sqrt(d_k)"
)
_MHA_SPLIT = (
    "your heads are split without the transpose: reshaping (batch, n, d_model) "
    "straight to (batch, num_heads, n, d_k) mixes tokens inside each head. "
    "Reshape to (batch, n, num_heads, d_k), then swap axes 1 and 2"
)
_MHA_MERGE = (
    "your heads are merged without the transpose: swap axes 1 and 2 back, "
    "(batch, num_heads, n, d_k) -> (batch, n, num_heads, d_k), before reshaping "
    "to (batch, n, d_model)"
)
_MHA_NO_W_O = (
    "your output skips the output projection: multiply the merged heads by W_O, "
    "output = merge_heads(heads) @ W_O"
)
_MHA_W_TRANSPOSED = (
    "you applied the projection matrices transposed (X @ W.T); this course "
    "applies them as X @ W_Q, kv @ W_K, kv @ W_V and merged @ W_O"
)
_MHA_AVERAGED = (
    "you returned the weights averaged over the heads, (batch, n, m); return "
    "every head's weights, shape (batch, num_heads, n, m)"
)
_MHA_KV_IGNORED = (
    "kv was given (cross-attention) but your keys and values come from X: "
    "K = kv @ W_K and V = kv @ W_V, while Q = X @ W_Q. Use X only when kv is None"
)


def _mha_variant(
    X,
    W_Q,
    W_K,
    W_V,
    W_O,
    num_heads,
    mask=None,
    kv=None,
    *,
    divide_by="sqrt_d_k",
    split_transpose=True,
    merge_transpose=True,
    mask_mode="before",
    use_kv=True,
    use_W_O=True,
    transpose_W=False,
    average_heads=False,
):
    """multi_head_attention with one of the common mistakes switched on."""
    if transpose_W:
        W_Q, W_K, W_V, W_O = W_Q.T, W_K.T, W_V.T, W_O.T
    source = kv if kv is not None and use_kv else X
    batch, n, d_model = X.shape
    d_k = d_model // num_heads

    def split(x):  # (batch, length, d_model) -> (batch, H, length, d_k)
        if split_transpose:
            return anp.split_heads(x, num_heads)
        return x.reshape(batch, num_heads, x.shape[1], d_k)

    Q, K, V = split(X @ W_Q), split(source @ W_K), split(source @ W_V)
    divisor = {
        "sqrt_d_k": math.sqrt(d_k),
        "sqrt_d_model": math.sqrt(d_model),
        "d_model": d_model,
        "d_k": d_k,
        "one": 1.0,
    }[divide_by]
    scores = Q @ np.swapaxes(K, -1, -2) / divisor  # (batch, H, n, m)
    weights = _masked_softmax(scores, mask, mask_mode)
    heads = weights @ V  # (batch, H, n, d_k)
    if merge_transpose:
        merged = anp.merge_heads(heads)
    else:
        merged = heads.reshape(batch, n, d_model)
    output = merged @ W_O if use_W_O else merged  # (batch, n, d_model)
    return output, (weights.mean(axis=1) if average_heads else weights)


def _mha_cases(rng):
    def case(batch, n, d_model, num_heads, m=None, mask=None, note=""):
        X = rng.normal(size=(batch, n, d_model))
        kv = None if m is None else rng.normal(size=(batch, m, d_model))
        W_Q, W_K, W_V, W_O = (
            rng.normal(size=(d_model, d_model)) / math.sqrt(d_model) for _ in range(4)
        )
        d_k = d_model // num_heads
        sizes = {"batch": batch, "n": n, "m": n if m is None else m}
        sizes.update(d_model=d_model, num_heads=num_heads, d_k=d_k)
        return _case(
            ("X", "W_Q", "W_K", "W_V", "W_O", "num_heads"),
            X,
            W_Q,
            W_K,
            W_V,
            W_O,
            num_heads,
            mask=mask,
            kv=kv,
            sizes=sizes,
            note=note,
        )

    return [
        case(2, 5, 12, 3),
        case(1, 4, 6, 2, mask=anp.causal_mask(4)),
        case(2, 3, 8, 4, m=5, note="cross-attention"),
        case(
            2,
            4,
            8,
            2,
            m=6,
            mask=anp.padding_mask(np.array([6, 3]), 6),
            note="cross-attention with padding",
        ),
        case(1, 3, 4, 1),
    ]


def check_multi_head_attention(fn, *, seed=0):
    """Check ``fn(X, W_Q, W_K, W_V, W_O, num_heads, mask=None, kv=None)``.

    It must return (output (batch, n, d_model), weights (batch, num_heads, n, m)).
    Cases: self-attention, a causal mask, cross-attention (kv) with and without
    a padding mask, and a single head.
    """

    def v(**mistake):
        return partial(_mha_variant, **mistake)

    variants = [
        (_MHA_SCALE_D_MODEL, v(divide_by="sqrt_d_model")),
        (_MHA_SCALE_D_MODEL_NO_SQRT, v(divide_by="d_model")),
        (_MHA_SCALE_D_K, v(divide_by="d_k")),
        (_NO_SCALE, v(divide_by="one")),
        (_MHA_SPLIT, v(split_transpose=False)),
        (_MHA_SPLIT, v(split_transpose=False, merge_transpose=False)),
        (_MHA_MERGE, v(merge_transpose=False)),
        (_MHA_NO_W_O, v(use_W_O=False)),
        (_MHA_W_TRANSPOSED, v(transpose_W=True)),
        (_MASK_AFTER, v(mask_mode="after")),
        (_MASK_FLIPPED, v(mask_mode="flipped")),
        (_MASK_ADDED, v(mask_mode="added")),
        (_MHA_AVERAGED, v(average_heads=True)),
        (_MHA_KV_IGNORED, v(use_kv=False)),
    ]
    outputs = (
        _Out("output", "(batch, n, d_model)", "The merged heads go through W_O."),
        _Out(
            "weights",
            "(batch, num_heads, n, m)",
            "Return every head's weights, one row per query, one column per key.",
        ),
    )
    return _run(
        "check_multi_head_attention",
        fn,
        _mha_cases(np.random.default_rng(seed)),
        anp.multi_head_attention,
        outputs,
        variants,
        _diagnose_attention,
        signature="multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads, "
        "mask=None, kv=None)",
        hint="Q = X @ W_Q is (batch, n, d_model); split it into "
        "(batch, num_heads, n, d_k) by reshaping to (batch, n, num_heads, d_k) and "
        "swapping axes 1 and 2. K and V come from kv (X when kv is None), so they "
        "have m rows. Per head, scores = Q @ np.swapaxes(K, -1, -2) is "
        "(batch, num_heads, n, m)",
    )
