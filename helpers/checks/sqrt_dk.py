"""Checkers for lesson 04's new exercises: a predicted spread, a temperature on
the lesson's own draws, and the softmax backward pass built from a blank cell.

The predictions are compared with what the checker measures itself (sampled
scores, bisection), so no expected value sits in a check cell; what was measured
is printed only once the answer is right. (``check_softmax_jacobian`` and
``check_find_temperature`` live in ``helpers.checks.scale``.) See
``helpers.checks``.
"""

import contextlib
import functools
import io
import math
import re

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.checks.scale import _mean_entropy, _temperature, check_find_temperature
from helpers.i18n import N_, _
from helpers.measure import traced_call

_BACKWARD_PASSED = N_(
    "✓ {name}: {count} cases passed; one row of m = {m} keys took {peak_mb:.2f} MB, "
    "where its Jacobian would take {jacobian_mb:.0f} MB"
)

__all__ = [
    "check_predict_score_std",
    "check_half_entropy_temperature",
    "check_softmax_backward",
]

# --------------------------------------------------------------------------
# check_predict_score_std (lesson 04, exercise 4.1)
# --------------------------------------------------------------------------

_STD_IS_VARIANCE = ck.Mistake(
    symptom="your unscaled prediction grows like d_k itself: at d_k = {d_k} the "
    "measured spread of q.k is {measured:.3g}, far below what you predict",
    why="section 1 derived the variance, Var(q.k) = d_k; a standard deviation is "
    "the square root of a variance",
    fix="return math.sqrt(d_k) unscaled and 1.0 scaled",
    line=r"return|d_k",
)
_STD_SCALED_SHRINKS = ck.Mistake(
    symptom="your scaled prediction shrinks as d_k grows, but the measured spread "
    "of q.k / sqrt(d_k) at d_k = {d_k} is {measured:.3g}, the same at every d_k",
    why="dividing a random number by c divides its standard deviation by c: "
    "sqrt(d_k) / sqrt(d_k)",
    fix="return 1.0 when scaled is True",
    line=r"sqrt|/",
)
_STD_SWAPPED = ck.Mistake(
    symptom="your two predictions are swapped: at d_k = {d_k} you gave the "
    "unscaled scores the spread the scaled ones have, and the other way round",
    why="`scaled=True` means q.k / sqrt(d_k), the scores after the division",
    fix="return 1.0 if scaled else math.sqrt(d_k)",
    line=r"scaled",
)


def _score_std(d_k, scaled):
    return 1.0 if scaled else math.sqrt(d_k)


def _measured_std(d_k, scaled, rng, pairs=20_000):
    q = rng.standard_normal((pairs, d_k))  # (pairs, d_k)
    k = rng.standard_normal((pairs, d_k))  # (pairs, d_k)
    s = np.einsum("id,id->i", q, k)  # (pairs,)
    return float((s / math.sqrt(d_k) if scaled else s).std())


_STD_CASES = tuple(
    (d_k, scaled) for d_k in (100, 9, 400, 1) for scaled in (False, True)
)


@functools.lru_cache(maxsize=8)
def _measured_stds(seed):
    """The spreads the checker measures for ``seed``, case by case (_STD_CASES,
    drawn in that order from one generator). Kept per seed: a draw takes about
    a second, and a lesson's checks and the tests ask for the same seed again
    and again; the numbers are the same either way."""
    rng = np.random.default_rng(seed)
    return tuple(_measured_std(d_k, scaled, rng) for d_k, scaled in _STD_CASES)


def check_predict_score_std(fn, *, seed=0):
    """Check ``fn(d_k, scaled) -> std``: the spread of q.k, or of q.k / sqrt(d_k).

    The checker samples 20 000 pairs of standard-normal vectors for each case
    (d_k = 100, 9, 400 and 1, scaled and not) and compares within 5 %.
    """
    measured = dict(zip(_STD_CASES, _measured_stds(seed), strict=True))
    cases = []
    for d_k in (100, 9, 400, 1):
        for scaled in (False, True):
            cases.append(
                ck.make_case(
                    ("d_k", "scaled"),
                    d_k,
                    scaled,
                    facts={"d_k": d_k, "measured": measured[d_k, scaled]},
                )
            )
    variants = [
        (_STD_SWAPPED, lambda d_k, scaled: _score_std(d_k, not scaled)),
        (_STD_IS_VARIANCE, lambda d_k, scaled: 1.0 if scaled else float(d_k)),
        (
            _STD_SCALED_SHRINKS,
            lambda d_k, scaled: 1 / math.sqrt(d_k) if scaled else math.sqrt(d_k),
        ),
        (_STD_SCALED_SHRINKS, lambda d_k, scaled: 1 / d_k if scaled else float(d_k)),
    ]
    ck.run(
        "check_predict_score_std",
        fn,
        cases,
        lambda d_k, scaled: measured[d_k, scaled],
        (ck.Out("std", "()", "Return one number, the standard deviation."),),
        variants,
        signature="predict_score_std(d_k, scaled)",
        tol=(0.05, 0.0),
        announce=False,
    )
    print(
        _(
            "✓ check_predict_score_std: 8 cases passed; measured at d_k "
            "= 100: std {unscaled:.2f} unscaled, {scaled:.3f} scaled"
        ).format(unscaled=measured[100, False], scaled=measured[100, True])
    )
    return True


# --------------------------------------------------------------------------
# check_half_entropy_temperature (lesson 04, exercise 4.3)
# --------------------------------------------------------------------------


def lesson_draws(d_k=64, m=32, seeds=range(100)):
    """Lesson 04's unscaled scores K q, one row per seed, (num_seeds, m)."""
    rows = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        q = rng.standard_normal(d_k)  # (d_k,)
        K = rng.standard_normal((m, d_k))  # (m, d_k)
        rows.append(K @ q)  # (m,)
    return np.stack(rows)  # (num_seeds, m)


def check_half_entropy_temperature(fn, *, raw_scores=None):
    """Check ``fn(raw_scores, target_entropy) -> T``, then run it on the lesson's draws.

    First ``check_find_temperature`` on fresh scores; then ``fn`` on the
    lesson's 100 draws at d_k = 64, m = 32 (``raw_scores``, by default drawn
    here as the lesson draws them) for half the maximum entropy, compared with
    bisection done here.
    """
    name = "check_half_entropy_temperature"
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            check_find_temperature(fn)
    except ck.CheckFailed as err:  # the fresh cases failed: say it as this check
        message = err.mistake if err.mistake is not None else err.diagnosis
        raise ck.CheckFailed(name, message, err.case, err.where) from err.__cause__
    if raw_scores is None:
        raw_scores = lesson_draws()
    raw_scores = np.asarray(raw_scores, dtype=np.float64)  # (num_seeds, m)
    m = raw_scores.shape[-1]
    target = 0.5 * math.log(m)
    case = ck.make_case(
        ("raw_scores", "target_entropy"), raw_scores, target, note="the lesson's draws"
    )
    got = ck.to_arrays(
        ck.call(name, fn, case, "find_temperature(...)", ""), (ck.Out("T", "()"),), fn
    )
    expected = _temperature(raw_scores, target)
    if isinstance(got, str) or not math.isclose(float(got[0]), expected, rel_tol=1e-3):
        raise ck.CheckFailed(
            name,
            got
            if isinstance(got, str)
            else _(
                "your T passes the fresh cases but not the lesson's draws: it must "
                "reach the mean entropy asked for on any scores it is given, not on "
                "one fixed set"
            ),
            case.label,
            ck.defined_at(fn),
        )
    T = float(got[0])
    print(
        _(
            "✓ {name}: 3 fresh cases passed; on this lesson's draws T = "
            "{T:.2f}, mean entropy {entropy:.4f} = log(m) / 2, below the "
            "standard scale sqrt(d_k) = 8: sharper attention, lower T"
        ).format(name=name, T=T, entropy=_mean_entropy(raw_scores / T))
    )
    return True


# --------------------------------------------------------------------------
# check_softmax_backward (lesson 04, exercise 4.4, the build exercise)
# --------------------------------------------------------------------------

_VJP_NO_SHARED_Z = ck.Mistake(
    symptom="each entry of your gradient uses only its own a_j and g_j; raising "
    "one score also lowers every other weight, and your answer leaves that out "
    "(its rows do not sum to 0)",
    why="all the weights share one Z: J = diag(a) - a a^T, and the a a^T part "
    "couples every entry to every g",
    fix="grad = a * (g - (a * g).sum(axis=-1, keepdims=True))",
    line=r"return|\*",
)
_VJP_UNWEIGHTED = ck.Mistake(
    symptom="the number you subtract from g is not weighted by the weights a: "
    "on a near one-hot row your gradient still depends on the g of keys whose "
    "weight is about 0",
    why="(a a^T g)_j = a_j (a . g): the term shared by a row is a . g, the "
    "average of g under the weights",
    fix="grad = a * (g - (a * g).sum(axis=-1, keepdims=True))",
    line=r"sum\(|mean\(",
)
_VJP_NO_OUTER_A = ck.Mistake(
    symptom="your gradient is not multiplied by a_j: a key whose weight is about 0 "
    "still gets a large gradient",
    why="row j of J is a_j (e_j - a): every entry carries its own weight a_j, so a "
    "saturated softmax passes back almost nothing",
    fix="grad = a * (g - (a * g).sum(axis=-1, keepdims=True))",
    line=r"return",
)
_VJP_DIAGONAL = ck.Mistake(
    symptom="your gradient is the diagonal of J times g only: the off-diagonal "
    "entries -a_j a_t are missing",
    why="J = diag(a) - a a^T is a full matrix; its diagonal a_j (1 - a_j) is only "
    "how a_j reacts to its own score",
    fix="grad = a * (g - (a * g).sum(axis=-1, keepdims=True))",
    line=r"1\s*-|return",
)
_VJP_SIGN = ck.Mistake(
    symptom="your gradient has the opposite sign in every entry",
    why="raising score j raises a_j: J's diagonal a_j (1 - a_j) is positive",
    fix="grad = a * (g - (a * g).sum(axis=-1, keepdims=True))",
    line=r"-",
)
_VJP_AXIS = ck.Mistake(
    symptom="with batch axes ({label}) your rows mix: the sum over the keys runs "
    "along another axis than the last one",
    why="each row of a is one softmax over the m keys (the last axis); nothing "
    "mixes between rows",
    fix="sum with axis=-1, keepdims=True",
    line=r"axis|sum\(",
)


_VJP_KEEPDIMS = ck.Mistake(
    symptom="on rows of shape {rows} your function raised ValueError: a total over "
    "the last axis has shape {total}, which no longer lines up with the rows it "
    "was taken from",
    why="broadcasting lines axes up from the right, so a {total} total meets the "
    "{m} entries of a row, not the rows; each row's total must stay a column, "
    "size 1 on the last axis",
    fix="(a * g).sum(axis=-1, keepdims=True)",
)
_VJP_FULL_J = ck.Mistake(
    symptom="on one row of m = {m} keys your function needed {peak:.0f} MB at its "
    "peak, where the gradient itself is {need:.2f} MB: it forms the (m, m) "
    "Jacobian, or a table as large",
    why="J^T g = a * (g - a . g): a row shares one number, a . g, so the gradient "
    "takes O(m) work and memory; J takes m^2, {full:.0f} MB for this one row",
    fix="grad = a * (g - (a * g).sum(axis=-1, keepdims=True))",
)
_BIG_M = 4096  # J of one row would be 4096^2 float64 = 134 MB
_PEAK_LIMIT = 16e6  # bytes: the O(m) answer needs a few times 4096 * 8


def _lost_axis(err):
    """(rows, total) when a broadcast error shows a sum that lost its last axis."""
    shapes = [
        tuple(int(x) for x in text.split(",") if x.strip())
        for text in re.findall(r"\(([\d,\s]*)\)", str(err))
    ]
    for rows in shapes:
        for total in shapes:
            if len(rows) > 1 and total == rows[:-1]:
                return rows, total
    return None


def _peak_bytes(fn, a, g):
    """The answer and the peak memory (bytes) traced while ``fn(a, g)`` runs."""
    with np.errstate(all="ignore"):  # the copies count, as the learner's would
        return traced_call(lambda: fn(a.copy(), g.copy()))


def _check_linear_memory(name, fn, rng):
    """Fail if ``fn`` needs memory like the (m, m) Jacobian on one long row."""
    a = anp.softmax(rng.standard_normal(_BIG_M))  # (m,)
    g = rng.standard_normal(_BIG_M)  # (m,)
    case = f"a ({_BIG_M},), g ({_BIG_M},): one long row"
    try:
        grad, peak = _peak_bytes(fn, a, g)
    except MemoryError:
        grad, peak = None, float(_BIG_M**2 * 8)
    except Exception as err:
        text = str(err).splitlines()[0] if str(err) else ""
        raise ck.CheckFailed(
            name,
            _("your function raised {kind}: {text}").format(
                kind=type(err).__name__, text=text
            ),
            case,
            ck.raised_at(err) or ck.defined_at(fn),
        ) from err
    if peak > _PEAK_LIMIT:
        facts = {
            "m": _BIG_M,
            "peak": peak / 1e6,
            "need": a.nbytes / 1e6,
            "full": _BIG_M**2 * 8 / 1e6,
        }
        raise ck.CheckFailed(name, _VJP_FULL_J.filled(facts), case, ck.defined_at(fn))
    if not ck.same(grad, a * (g - a @ g), (1e-9, 1e-12)):
        raise ck.CheckFailed(
            name,
            _("on one row of m = {m} keys your gradient differs from J^T g").format(
                m=_BIG_M
            ),
            case,
            ck.defined_at(fn),
        )
    return peak


def _vjp_reference(a, g):
    """J^T g with J = diag(a) - a a^T formed row by row, (..., m)."""
    m = a.shape[-1]
    J = np.eye(m) * a[..., None, :] - a[..., :, None] * a[..., None, :]  # (..., m, m)
    return np.einsum("...ts,...t->...s", J, g)  # J^T g


def _vjp_cases(rng):
    cases = []
    for shape, size, note in [
        ((6,), 1.0, ""),
        ((3, 7), 2.0, ""),
        ((2, 3, 5), 1.0, "batch axes"),
        ((4,), 12.0, "near one-hot rows"),
        ((2, 40), 4.0, ""),
    ]:
        a = anp.softmax(size * rng.standard_normal(shape))  # (..., m)
        g = rng.standard_normal(shape)  # (..., m)
        label = f"a {shape}"
        cases.append(
            ck.make_case(
                ("a", "g"),
                a,
                g,
                sizes={"m": shape[-1]},
                facts={"label": label},
                note=note,
            )
        )
    return cases


def check_softmax_backward(fn, *, seed=0):
    """Check ``fn(a, g) -> grad``: the gradient on the scores, J^T g, (..., m).

    ``a = softmax(s)`` along the last axis and ``g`` the upstream gradient, both
    (..., m). Compared with J^T g, J = diag(a) - a a^T formed row by row. Cases:
    one row, a batch of rows, two batch axes, near one-hot rows.
    """
    variants = [
        (_VJP_NO_SHARED_Z, lambda a, g: a * g),
        (_VJP_UNWEIGHTED, lambda a, g: a * (g - g.sum(-1, keepdims=True))),
        (_VJP_UNWEIGHTED, lambda a, g: a * (g - g.mean(-1, keepdims=True))),
        (_VJP_NO_OUTER_A, lambda a, g: g - (a * g).sum(-1, keepdims=True)),
        (_VJP_DIAGONAL, lambda a, g: a * (1 - a) * g),
        (_VJP_SIGN, lambda a, g: a * ((a * g).sum(-1, keepdims=True) - g)),
        (_VJP_AXIS, lambda a, g: a * (g - (a * g).sum(0, keepdims=True))),
    ]

    def diagnose(case, got, expected):
        (grad,) = got
        if not np.allclose(grad.sum(axis=-1), 0.0, atol=1e-9):
            return _VJP_NO_SHARED_Z
        return None

    name = "check_softmax_backward"
    rng = np.random.default_rng(seed)
    cases = _vjp_cases(rng)
    try:
        ck.run(
            name,
            fn,
            cases,
            _vjp_reference,
            (
                ck.Out(
                    "grad", "(..., m)", "One gradient entry per score: the shape of a."
                ),
            ),
            variants,
            diagnose,
            signature="softmax_backward(a, g)",
            hint="a and g are (..., m): every total over the keys must still line "
            "up with the row it was taken from",
            tol=(1e-9, 1e-12),
            announce=False,
        )
    except ck.CheckFailed as err:
        lost = (
            _lost_axis(err.__cause__) if isinstance(err.__cause__, ValueError) else None
        )
        if lost is None:
            raise
        facts = {"rows": lost[0], "total": lost[1], "m": lost[0][-1]}
        raise ck.CheckFailed(
            name, _VJP_KEEPDIMS.filled(facts), err.case, err.where
        ) from err.__cause__
    peak = _check_linear_memory(name, fn, rng)
    count, peak_mb, jacobian_mb = len(cases) + 1, peak / 1e6, _BIG_M**2 * 8 / 1e6
    print(
        _(_BACKWARD_PASSED).format(
            name=name, count=count, m=_BIG_M, peak_mb=peak_mb, jacobian_mb=jacobian_mb
        )
    )
    return True
