"""Checkers for the softmax exercises of lessons 01 and 03 (plain and masked).

Each ``check_*`` runs the learner's function on seeded cases, compares it with
a reference and names the likely mistake; see ``helpers.checks``.
"""

from functools import partial

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.checks import _mistakes as mk
from helpers.checks.attention import MASK_AFTER, MASK_FLIPPED, without_helpers
from helpers.i18n import _

__all__ = ["check_softmax", "check_masked_softmax"]

# --------------------------------------------------------------------------
# check_softmax (lessons 01 and 03)
# --------------------------------------------------------------------------

_SOFTMAX_WRONG_AXIS = ck.Mistake(
    symptom="your softmax normalises over the wrong axis: your result sums to 1 "
    "along axis {a}, but this call asked for axis={{axis}}",
    why="softmax normalises each slice along the axis it is given; a fixed axis "
    "is right for one call and wrong for the others",
    fix="take the max and the sum over the `axis` argument (with keepdims=True), "
    "not over a fixed axis",
    line=r"axis|sum",
)
_SOFTMAX_NOT_NORMALISED = ck.Mistake(
    symptom="your values do not sum to 1 along axis={axis}",
    why="a softmax is a distribution: the exponentials are divided by their sum Z",
    fix="e / e.sum(axis=axis, keepdims=True)",
    line=r"return",
)
_SOFTMAX_NO_MAX = ck.Mistake(
    symptom="your softmax returns nan or inf for large inputs (entries near ±1000)",
    why="np.exp(1000) overflows to inf, and inf / inf is nan",
    fix="subtract the max along the axis before exponentiating; softmax(x) = "
    "softmax(x - max(x)), so the answer does not change",
    line=r"exp",
)
_SOFTMAX_GLOBAL_MAX = ck.Mistake(
    symptom="you subtracted the max of the whole array, x.max(), not the max along "
    "`axis`: a row near -1000 (while another is near +1000) comes out nan",
    why="a row whose entries are all far below that global max underflows: every "
    "exp is 0 and 0 / 0 is nan",
    fix="x.max(axis=axis, keepdims=True)",
    line=r"max",
)


_SOFTMAX_MAX_AXIS = ck.Mistake(
    symptom="you subtracted the max along axis {a} but summed along axis={{axis}}",
    why="the shift must be the max along the same axis as the sum, so that it is "
    "one number per slice and cancels between e^x and Z",
    fix="x.max(axis=axis, keepdims=True)",
    line=r"max",
)


def _max_along(x, axis=-1, *, a):
    return mk.shifted_softmax(x, axis, max_axis=a)


def _softmax_cases(rng):
    cases = []
    for shape, axis in [((3, 5), None), ((6,), None), ((2, 3, 4), None)]:
        cases.append(ck.make_case(("x",), rng.normal(size=shape), axis=axis))
    for shape, axis in [((4, 6), 0), ((2, 5, 3), 1)]:
        cases.append(ck.make_case(("x",), rng.normal(size=shape), axis=axis))
    offsets = np.array([[1000.0], [-1000.0], [0.0]])  # one row near +1000, one -1000
    x = rng.normal(size=(3, 4)) * 5 + offsets
    cases.append(ck.make_case(("x",), x, large=True, note="entries near ±1000"))
    for case in cases:
        case.facts["axis"] = case.kwargs.get("axis", -1)
    return cases


def _diagnose_softmax(case, got, expected):
    (result,) = got
    axis = case.facts["axis"] % result.ndim
    if not np.isfinite(result).all():
        if not case.large:
            return _("your result contains nan or inf where the reference is finite")
        x = case.args[0]
        bad = ~np.isfinite(result).all(axis=axis)
        row_max = x.max(axis=axis)
        if bad.any() and (row_max[bad] < x.max() - 700).all():
            return _SOFTMAX_GLOBAL_MAX  # only the rows far below the global max
        return _SOFTMAX_NO_MAX
    if case.large and (result == 0).all(axis=axis).any():
        return _SOFTMAX_GLOBAL_MAX  # a row where every exp underflowed to 0
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
    fn = without_helpers(fn, ("softmax",), "this exercise")
    variants = (
        [
            (_SOFTMAX_WRONG_AXIS.format(a=a), lambda x, axis=-1, a=a: anp.softmax(x, a))
            for a in (-1, 0, 1)
        ]
        + [
            (_SOFTMAX_MAX_AXIS.format(a=a), partial(_max_along, a=a))
            for a in (-1, 0, 1)
        ]
        + [
            (_SOFTMAX_NO_MAX, mk.naive_softmax),
            (mk.EXP_SIGN, partial(mk.shifted_softmax, sign=-1)),
            (mk.NO_EXP, partial(mk.shifted_softmax, use_exp=False)),
            (mk.NO_EXP, mk.no_exp_softmax),
            (_SOFTMAX_GLOBAL_MAX, mk.global_max_softmax),
            (_SOFTMAX_NOT_NORMALISED, lambda x, axis=-1: np.exp(x)),
            (
                _SOFTMAX_NOT_NORMALISED,
                lambda x, axis=-1: np.exp(x - x.max(axis=axis, keepdims=True)),
            ),
        ]
    )
    return ck.run(
        "check_softmax",
        fn,
        _softmax_cases(np.random.default_rng(seed)),
        anp.softmax,
        (ck.Out("result", "x.shape", "Softmax rescales every entry, it drops none."),),
        variants,
        _diagnose_softmax,
        signature="softmax(x, axis=-1)",
        hint=ck.Mistake(
            symptom="if NumPy says the shapes could not be broadcast together, a max "
            "or a sum dropped the axis it reduced",
            fix="keep the reduced axis: x.max(axis=axis, keepdims=True) and "
            "e.sum(axis=axis, keepdims=True)",
        ),
    )


# --------------------------------------------------------------------------
# check_masked_softmax (lesson 03, exercise 1): float16 under a mask
# --------------------------------------------------------------------------

_F16_MINUS_INF = ck.Mistake(
    symptom="a fully masked row gives nan in float16 (float32 was fine): "
    "np.float16(-1e9) is -inf",
    why="-1e9 does not fit in float16, whose largest magnitude is 65504; the row's "
    "max is then -inf and -inf - (-inf) = nan",
    fix="give rows with no allowed key zero weights explicitly, e.g. "
    "np.where(mask.any(axis=-1, keepdims=True), weights, 0)",
    line=r"1e9",
)
_NAN_ROW = ck.Mistake(
    symptom="a fully masked row (a query that may attend to no key) gives nan",
    why="its max is -inf and -inf - (-inf) = nan (or its sum is 0 and 0 / 0 = nan)",
    fix="give such rows zero weights: shift them by 0 instead of -inf, and divide "
    "by 1 where the sum is 0",
    line=r"max|sum",
)
_UNIFORM_ROW = ck.Mistake(
    symptom="a fully masked row must give zero weights, but yours spreads the "
    "weight evenly (1/m each)",
    why="a finite fill such as -1e9 makes all its scores equal, and the softmax of "
    "equal scores is uniform",
    fix="fill with -np.inf and give rows with no allowed key zero weights",
    line=r"1e9|where",
)
_F16_NO_MAX = ck.Mistake(
    symptom="your weights have nan or inf in float16: np.exp overflows float16",
    why="e^x passes 65504, float16's largest number, above x = 11.09",
    fix="subtract each row's max (over the allowed keys) before np.exp",
    line=r"exp",
)
_KEEP_DTYPE = ck.Mistake(
    symptom="your weights are {got} but the scores were {want}: something "
    "promotes {want} to {got}",
    why="a float64 constant or array, e.g. np.float64(-1e9) or np.array(-1e9), "
    "does that silently; a plain Python number like -np.inf or -1e9 does not",
    fix="compute in the dtype of `scores` (float16 in, float16 out), with plain "
    "Python numbers as constants",
    line=r"float64|np\.array|astype",
)


def _plain_rows(x):
    """Max-subtracted softmax over the last axis, without any guard."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _reference_masked_softmax(scores, mask):
    """Computed in float64 with zero rows where nothing is allowed, cast back."""
    weights = anp.softmax(np.where(mask, scores.astype(np.float64), -np.inf))
    return weights.astype(scores.dtype)


def _masked_variant(scores, mask, *, fill=-np.inf, mode="before", guard="none"):
    """A masked softmax with one of the common mistakes switched on."""
    if mode == "after":
        weights = _plain_rows(scores) * mask
    elif mode == "flipped":
        weights = _plain_rows(np.where(mask, fill, scores))
    elif mode == "naive":
        e = np.exp(np.where(mask, scores, fill))
        weights = e / e.sum(axis=-1, keepdims=True)
    elif mode == "global_max":
        x = np.where(mask, scores, fill)
        e = np.exp(x - scores.max())
        weights = e / e.sum(axis=-1, keepdims=True)
    elif mode == "max_axis":  # the guarded recipe, max taken down the columns
        x = np.where(mask, scores, fill)
        top = x.max(axis=-2, keepdims=True)
        e = np.exp(x - np.where(np.isfinite(top), top, 0))
        total = e.sum(axis=-1, keepdims=True)
        weights = e / np.where(total == 0, 1, total)
    else:
        weights = _plain_rows(np.where(mask, scores, fill))
    if guard == "multiply":  # nan * 0 is still nan
        weights = weights * np.broadcast_to(mask, weights.shape).any(-1, keepdims=True)
    return weights.astype(scores.dtype)


def _masked_cases(rng):
    def case(shape, mask, dtype, size=3.0, note=""):
        scores = (rng.normal(size=shape) * size).astype(dtype)
        facts = {"dtype": np.dtype(dtype).name}
        return ck.make_case(
            ("scores", "mask"), scores, mask, facts=facts, large=size > 5, note=note
        )

    def random_mask(shape, empty_rows=()):
        mask = rng.random(shape) < 0.6
        mask[..., 0] |= ~mask.any(-1)  # every row sees at least one key
        for row in empty_rows:
            mask[..., row, :] = False
        return mask

    return [
        case((3, 5), random_mask((3, 5)), np.float32),
        case((2, 4, 6), random_mask((4, 6), [2]), np.float32, note="query 2 masked"),
        case((4, 5), random_mask((4, 5), [1]), np.float16, note="query 1 masked"),
        case(
            (2, 3, 6), random_mask((2, 1, 6)), np.float16, size=20.0, note="scores ±60"
        ),
        case((3, 4), random_mask((3, 4), [0]), np.float32, size=40.0, note="large"),
    ]


def _diagnose_masked(case, got, expected):
    (weights,) = got
    scores, mask = case.args
    allowed = np.broadcast_to(mask, weights.shape)
    empty = ~allowed.any(-1)
    bad = ~np.isfinite(weights).all(-1)
    if bad.any() and not (bad & ~empty).any():
        return _F16_MINUS_INF if scores.dtype == np.float16 else _NAN_ROW
    if bad.any():
        return (
            _F16_NO_MAX
            if scores.dtype == np.float16
            else mk.NO_MAX.replace(" (here up to {max_score:.0f})", "")
        )
    w = weights.astype(np.float64)
    good = ~empty
    if case.large and ((w == 0).all(-1) & good).any():
        return mk.GLOBAL_MAX  # a row where every exp underflowed to 0
    if np.allclose(np.where(allowed, w, 0)[good], 0) and not np.allclose(w[good], 0):
        return MASK_FLIPPED
    if not np.allclose(w.sum(-1)[good], 1.0, atol=1e-2):
        if np.allclose(w[~allowed], 0.0):
            return MASK_AFTER
        return mk.ROWS_NOT_NORMALISED
    if not np.allclose(np.where(allowed, 0.0, w)[good], 0.0):
        return mk.MASK_IGNORED
    if empty.any() and np.allclose(w[empty], 1.0 / w.shape[-1], atol=1e-2):
        return _UNIFORM_ROW
    return None


def _keep_dtype(case, got):
    want, have = case.args[0].dtype, got[0].dtype
    if have != want:
        return _KEEP_DTYPE.format(got=have.name, want=want.name)
    return None


def check_masked_softmax(fn, *, seed=0):
    """Check ``fn(scores, mask) -> weights``: a softmax over the last axis that
    keeps the dtype of ``scores`` (float16 or float32).

    ``mask`` is boolean, True = may attend, broadcastable to the scores. Blocked
    keys get weight 0; a row with no allowed key gets all zeros.
    Cases: float32 and float16, batch axes, broadcast masks, fully masked rows,
    and scores large enough to overflow np.exp in float16 and float32.
    """
    fn = without_helpers(fn, ("softmax",), "this exercise")

    def v(**mistake):
        return partial(_masked_variant, **mistake)

    variants = [
        (MASK_FLIPPED, v(mode="flipped")),
        (MASK_AFTER, v(mode="after")),
        # only float16 cases can match this one: in float32 it is right
        (_F16_MINUS_INF, v(fill=-1e9, guard="multiply")),
        (_UNIFORM_ROW, v(fill=-1e9)),
        (_NAN_ROW, v()),
        (_NAN_ROW, v(guard="multiply")),
        (mk.GLOBAL_MAX, v(mode="global_max")),
        (mk.MAX_AXIS, v(mode="max_axis")),
    ]
    return ck.run(
        "check_masked_softmax",
        fn,
        _masked_cases(np.random.default_rng(seed)),
        _reference_masked_softmax,
        (ck.Out("weights", "scores.shape", "One weight per score."),),
        variants,
        _diagnose_masked,
        signature="masked_softmax(scores, mask)",
        hint=ck.Mistake(
            symptom="the mask may have fewer axes than the scores, and a max or sum "
            "over the keys must keep its axis",
            fix="np.where(mask, scores, -np.inf) broadcasts it; reduce with "
            "axis=-1, keepdims=True",
        ),
        inspect=_keep_dtype,
        tol=(1e-2, 2e-3),  # float16 keeps about 3 decimal digits
    )
