"""Checkers for attention with one head: lessons 01 and 02.

Each ``check_*`` runs the learner's function on seeded cases (n != m,
d_v != d_k, batch axes, large scores), compares it with
``helpers.attention_np`` and names the likely mistake; see ``helpers.checks``.
"""

import math
from dataclasses import replace
from functools import partial

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.checks import _mistakes as mk
from helpers.checks._refuse import refusing
from helpers.i18n import _

__all__ = [
    "check_attention_one_query",
    "check_attention",
    "check_scaled_dot_product_attention",
]


def without_helpers(fn, names, exercise):
    """``fn`` with ``anp.<name>`` refused while it runs: the exercise is to write it.

    Only calls from the learner's code are refused: the helper passed as the
    answer itself still runs (the robustness tests use it as the right answer).
    """
    names = tuple(names)
    reason = _(
        "{exercise} asks you to write the computation yourself; the course's "
        "{helpers} would pass without writing it"
    ).format(exercise=_(exercise), helpers=", ".join(f"anp.{n}" for n in names))
    if not callable(fn):  # the engine names that mistake itself
        return fn
    return refusing(fn, anp, names, reason)


# The line that uses the mask, not the `if mask is not None:` above it
_MASK_USE = r"^(?!\s*(if|elif|assert)\b).*\bmask\b"
MASK_AFTER = replace(mk.MASK_AFTER, line=_MASK_USE)
MASK_FLIPPED = replace(mk.MASK_FLIPPED, line=_MASK_USE)
MASK_ADDED = replace(mk.MASK_ADDED, line=_MASK_USE)


def relined(diagnose):
    """``diagnose`` with the mask mistakes pointing at the line that uses the mask."""
    local = {mk.MASK_AFTER: MASK_AFTER, mk.MASK_FLIPPED: MASK_FLIPPED}
    local[mk.MASK_ADDED] = MASK_ADDED

    def diagnose_relined(case, got, expected):
        message = diagnose(case, got, expected)
        return (
            local.get(message, message) if isinstance(message, ck.Mistake) else message
        )

    return diagnose_relined


# --------------------------------------------------------------------------
# check_attention_one_query (lesson 01)
# --------------------------------------------------------------------------

_FORGOT_1_OVER_Z = ck.Mistake(
    symptom="your weights do not sum to 1: you forgot the 1/Z",
    why="the weights are a distribution over the keys: each exp(score_s) is "
    "divided by their total Z",
    fix="divide each exp(score_s) by Z = sum_j exp(score_j), in the weights and in "
    "y = sum_s (1/Z) exp(score_s) v_s",
    line=r"exp",
)
_Y_FORGOT_1_OVER_Z = ck.Mistake(
    symptom="your weights are right but y is not: you forgot the 1/Z in y",
    why="y averages the values with the normalised weights; without 1/Z it is "
    "Z times too large",
    fix="y = sum_s (1/Z) exp(score_s) v_s (or y = weights @ V)",
    line=r"\by\b\s*=",
)
_Z_SHIFTED = ck.Mistake(
    symptom="your Z is sum_j exp(score_j - max score), the normaliser after "
    "subtracting the max",
    why="the shift cancels in the weights but not in Z itself: the exercise asks "
    "for the normaliser of the scores themselves",
    fix="Z = sum_j exp(score_j), the shifted sum times exp(max score)",
    line=r"\bZ\b\s*=",
)
_Z_ONE = ck.Mistake(
    symptom="your Z is 1, the sum of the weights after normalising",
    why="Z is the normaliser: the sum of the exponentials before dividing",
    fix="Z = sum_j exp(score_j), computed before you divide",
    line=r"\bZ\b\s*=",
)
_Z_UNSCALED = ck.Mistake(
    symptom="your Z is computed from unscaled scores",
    why="Z normalises the same scores as the weights, score_j = <q, k_j> / sqrt(d_k)",
    fix="Z = sum_j exp(score_j) with the scaled scores",
    line=r"\bZ\b\s*=",
)
_Y_WRONG_AXIS = ck.Mistake(
    symptom="your y has one entry per key: you summed weights[s] * v_s over the "
    "feature axis (axis 1) instead of over the keys (axis 0)",
    why="y is a weighted average of the value vectors, so it has d_v entries",
    fix="y = sum_s weights[s] * V[s] = weights @ V",
    line=r"sum|@",
)
_Y_FROM_K = ck.Mistake(
    symptom="your y is a weighted sum of the keys K instead of the values V",
    why="keys decide how much each position counts; values are what is averaged",
    fix="y = sum_s weights[s] * V[s]",
    line=r"\bK\b",
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
    use_exp=True,
):
    """attention_one_query with one of the common mistakes switched on."""
    scores = K @ q * mk.pick_scale(scale, scale_rule, q, K, V)  # (m,)
    e = np.exp(scores) if use_exp else scores
    Z = e.sum()
    weights = e / Z if weights_normalised else e
    values = V if y_from == "V" else K
    y = ((e / Z if y_normalised else e)[:, None] * values).sum(axis=y_axis)
    Z = {
        "true": np.exp(scores).sum(),  # even without exp in the weights
        "shifted": np.exp(scores - scores.max()).sum(),
        "one": 1.0,
        "unscaled": np.exp(K @ q).sum(),
    }[z]
    return y, weights, Z


def _one_query_cases(rng):
    cases = []
    for d_k, m, d_v, scale in [
        (4, 6, 5, None),
        (3, 5, 2, None),
        (8, 3, 7, 0.5),
        (2, 1, 3, None),
    ]:
        cases.append(
            ck.make_case(
                ("q", "K", "V"),
                rng.normal(size=d_k),
                rng.normal(size=(m, d_k)),
                rng.normal(size=(m, d_v)),
                scale=scale,
                sizes={"m": m, "d_k": d_k, "d_v": d_v},
                facts={"sqrt_d_k": math.sqrt(d_k), "scale": scale},
            )
        )
    return cases


def _diagnose_one_query(case, got, expected):
    y, weights, Z = got
    if not np.isclose(weights.sum(), 1.0):
        return _FORGOT_1_OVER_Z
    if ck.same(y, expected[0]) and ck.same(weights, expected[1]):
        return ck.Mistake(
            symptom="your y and weights are right but Z is {Z}, not the normaliser",
            why="Z is the sum of the exponentials of the scores, before dividing",
            fix="Z = sum_j exp(score_j), here {right_Z}",
            line=r"\bZ\b\s*=",
            key="your y and weights are right but Z is not",
        ).format(Z=ck.num(Z), right_Z=ck.num(expected[2]))
    return None


def check_attention_one_query(fn, *, seed=0):
    """Check ``fn(q, K, V, scale=None) -> (y, weights, Z)`` for one query.

    Cases: m != d_k != d_v, an explicit ``scale``, and a single key (m = 1).
    """
    fn = without_helpers(
        fn,
        ("softmax", "attention_one_query", "scaled_dot_product_attention"),
        "this exercise",
    )

    def v(**mistake):
        return partial(_one_query_variant, **mistake)

    variants = [
        (mk.NO_SCALE, v(scale_rule="none")),
        (mk.SCALE_D_K, v(scale_rule="d_k")),
        (mk.SCALE_D_V, v(scale_rule="d_v")),
        (mk.SCALE_IGNORED, v(scale_rule="ignored")),
        (mk.SCALE_DIVIDED, v(scale_rule="divided")),
        (mk.SCALE_TIMES_SQRT, v(scale_rule="times_sqrt")),
        (mk.SCALE_M, v(scale_rule="m")),
        (mk.NO_EXP, v(use_exp=False)),
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
        ck.Out("y", "(d_v,)", "y = sum_s weights[s] * V[s] sums over the keys."),
        ck.Out("weights", "(m,)", "One weight per key."),
        ck.Out("Z", "()", "Z is a single number, sum_j exp(score_j)."),
    )
    return ck.run(
        "check_attention_one_query",
        fn,
        _one_query_cases(np.random.default_rng(seed)),
        anp.attention_one_query,
        outputs,
        variants,
        _diagnose_one_query,
        signature="attention_one_query(q, K, V, scale=None)",
        hint=ck.Mistake(
            symptom="q is (d_k,), K (m, d_k) and V (m, d_v): the scores are one "
            "number per key, (m,), and y is one value row, (d_v,)",
            fix="scores = K @ q is (m,) and y = weights @ V is (d_v,)",
        ),
    )


# --------------------------------------------------------------------------
# check_attention (lesson 02, exercise 1) and
# check_scaled_dot_product_attention (masks, scale, fully masked rows)
# --------------------------------------------------------------------------


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
    softmax=None,
    transpose_output=False,
):
    """scaled_dot_product_attention with one of the common mistakes switched on."""
    scale = mk.pick_scale(scale, scale_rule, Q, K, V)
    scores = Q @ np.swapaxes(K, -1, -2) * scale  # (..., n, m)
    if softmax is not None:  # a softmax without the right max subtraction
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        weights = softmax(scores, axis)
    else:
        weights = mk.masked_softmax(scores, mask, mask_mode, axis)
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


def _attention_case(
    rng, batch, n, m, d_k, d_v, size=1.0, mask=None, scale=None, note=""
):
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
    return ck.make_case(
        ("Q", "K", "V"),
        Q,
        K,
        V,
        mask=mask,
        scale=scale,
        sizes=sizes,
        facts=facts,
        large=size > 1,
        note=note
        or (
            _("scores up to {top}").format(top=f"{facts['max_score']:.0f}")
            if size > 1
            else ""
        ),
    )


def _scale_and_axis_variants():
    v = partial(partial, _sdpa_variant)
    return [
        (mk.COLUMNS_SUM_TO_1, v(axis=-2)),
        (mk.BATCH_AXIS.replace("{a}", "0"), v(axis=0)),
        (mk.NO_SCALE, v(scale_rule="none")),
        (mk.SCALE_D_K, v(scale_rule="d_k")),
        (mk.SCALE_D_V, v(scale_rule="d_v")),
        (mk.OUTPUT_TRANSPOSED, v(transpose_output=True)),
        (mk.SCALE_TIMES_SQRT, v(scale_rule="times_sqrt")),
        (mk.SCALE_N, v(scale_rule="n")),
        (mk.SCALE_M, v(scale_rule="m")),
    ]


def _softmax_slip_variants():
    """Slips inside a hand-written softmax; listed last, after the mask mistakes."""
    v = partial(partial, _sdpa_variant)
    slip = partial(partial, mk.shifted_softmax)
    return [
        (mk.MAX_AXIS, v(softmax=slip(max_axis=-2))),
        (mk.EXP_SIGN, v(softmax=slip(sign=-1))),
        (mk.NO_EXP, v(softmax=slip(use_exp=False))),
        (mk.NO_EXP, v(softmax=mk.no_exp_softmax)),
    ]


_ATTENTION_OUTPUTS = (
    ck.Out("output", "(..., n, d_v)", "output = weights @ V: (n, m) @ (m, d_v)."),
    ck.Out("weights", "(..., n, m)", "One row per query, one column per key."),
)
_FLOAT64_TRAP = ck.Mistake(
    symptom="your `{name}` is {got} but Q, K and V were {want}: something turned "
    "them into float64",
    why="usually it is np.sqrt of d_k, a NumPy float64 scalar that promotes "
    "float32 arrays in NumPy 2 (lesson 02, section 2)",
    fix="divide by math.sqrt(d_k), a plain Python float, instead",
    line=r"np\.sqrt|float64",
)


def _keep_input_dtype(case, got):
    """The float64 trap: a float32 input must give float32 outputs."""
    want = case.args[0].dtype
    for out, array in zip(_ATTENTION_OUTPUTS, got, strict=True):
        if array.dtype != want:
            return _FLOAT64_TRAP.format(
                name=out.name, got=array.dtype.name, want=want.name
            )
    return None


def check_attention(fn, *, seed=0):
    """Check ``fn(Q, K, V) -> (output, weights)``, scaled by 1/sqrt(d_k).

    Q (..., n, d_k), K (..., m, d_k), V (..., m, d_v), any leading batch axes.
    No mask and no large scores. Cases: n != m and d_v != d_k, one and two batch
    axes, a single query, and float32 inputs, whose outputs must stay float32.
    """
    fn = without_helpers(
        fn,
        ("softmax", "attention_one_query", "scaled_dot_product_attention"),
        "this exercise",
    )
    rng = np.random.default_rng(seed)
    cases = [
        _attention_case(rng, (), 4, 6, 3, 5),
        _attention_case(rng, (2,), 3, 5, 4, 6),
        _attention_case(rng, (2, 3), 4, 5, 6, 2),
        _attention_case(rng, (), 1, 7, 5, 3, note="one query"),
    ]
    f32 = _attention_case(rng, (2,), 3, 6, 4, 5, note="float32 inputs")
    cases.append(replace(f32, args=tuple(a.astype(np.float32) for a in f32.args)))
    return ck.run(
        "check_attention",
        fn,
        cases,
        anp.scaled_dot_product_attention,
        _ATTENTION_OUTPUTS,
        _scale_and_axis_variants() + _softmax_slip_variants(),
        mk.diagnose_weights,
        signature="attention(Q, K, V)",
        hint=mk.PRODUCT_ORDER_HINT,
        inspect=_keep_input_dtype,
    )


_SDPA_HELPERS = (
    "softmax",
    "attention_one_query",
    "scaled_dot_product_attention",
    "online_attention",
    "multi_head_attention",
)


def check_scaled_dot_product_attention(fn, *, seed=0):
    """Check ``fn(Q, K, V, mask=None, scale=None) -> (output, weights)``.

    Cases: n != m and d_v != d_k, a batch axis, an explicit ``scale``, large
    scores, a random mask, a mask with a fully masked row, and two batch axes
    sharing one (n, m) mask (lesson 02's build exercise).
    """
    fn = without_helpers(fn, _SDPA_HELPERS, "this exercise")
    rng = np.random.default_rng(seed)
    fully_masked = _random_mask(rng, (4, 5))
    fully_masked[1] = False  # query 1 may attend to nothing
    cases = [
        _attention_case(rng, (), 4, 6, 3, 5),
        _attention_case(rng, (2,), 3, 5, 4, 6),
        _attention_case(rng, (), 3, 4, 5, 2, scale=0.3),
        _attention_case(rng, (), 3, 5, 4, 3, size=40.0),
        _attention_case(rng, (2,), 4, 6, 3, 2, mask=_random_mask(rng, (2, 4, 6))),
        _attention_case(
            rng, (), 4, 5, 3, 2, mask=fully_masked, note="query 1 fully masked"
        ),
        _attention_case(
            rng,
            (2, 3),
            3,
            5,
            4,
            2,
            mask=_random_mask(rng, (3, 5)),
            note="two batch axes, one (n, m) mask for all",
        ),
    ]
    v = partial(partial, _sdpa_variant)
    variants = (
        _scale_and_axis_variants()
        + [
            (mk.SCALE_IGNORED, v(scale_rule="ignored")),
            (mk.SCALE_DIVIDED, v(scale_rule="divided")),
            (MASK_AFTER, v(mask_mode="after")),
            (MASK_FLIPPED, v(mask_mode="flipped")),
            (MASK_ADDED, v(mask_mode="added")),
            (mk.FULLY_MASKED_UNIFORM, v(mask_mode="fill")),
            (mk.FULLY_MASKED_NAN, v(mask_mode="unguarded")),
            (mk.NO_MAX, v(softmax=mk.naive_softmax)),  # after the line above: both nan
            (mk.GLOBAL_MAX, v(softmax=mk.global_max_softmax)),
        ]
        + _softmax_slip_variants()
    )
    return ck.run(
        "check_scaled_dot_product_attention",
        fn,
        cases,
        anp.scaled_dot_product_attention,
        _ATTENTION_OUTPUTS,
        variants,
        relined(mk.diagnose_weights),
        signature="scaled_dot_product_attention(Q, K, V, mask=None, scale=None)",
        hint=mk.PRODUCT_ORDER_HINT,
    )
