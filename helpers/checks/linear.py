"""Checker for lesson 12's exercise 12.3: the ★★★ build of linear attention.

``check_linear_attention`` runs the learner's ``linear_attention(Q, K, V,
feature_map=None, causal=False)``, as ``helpers.attention_np`` has it, on seeded
cases, names the likely mistake with a :class:`Mistake` (symptom, why, fix), then
refuses an answer that builds the (n, m) similarities on a long sequence. 12.1's
checker is in ``delta_rule``, 12.2's in ``running_state``.
"""

import math
from functools import partial

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.checks.running_state import (
    BIG,
    BIG_LIMIT,
    TOL,
    _long_mismatch,
    _peak_and_result,
    _refuse_helpers,
    _torch_on_numpy,
)
from helpers.i18n import N_, _

_PASSED = N_("✓ {name}: {count} cases passed; a long sequence too, in small memory")

__all__ = ["check_linear_attention"]

# --------------------------------------------------------------------------
# check_linear_attention (exercise 12.3, build): the whole helper
# --------------------------------------------------------------------------

_L_NO_Z = ck.Mistake(
    symptom="your output is phi(Q) (phi(K)^T V) without the normaliser: the rows "
    "are weighted sums of the values, not weighted averages",
    why="the kernel smoother divides by Z_i = sum_j sim(q_i, k_j) = phi(q_i) . "
    "sum_j phi(k_j); without it the weights do not sum to 1",
    fix="divide by phi(Q) @ phi(K).sum(axis=-2)[..., None]; causal: by phi(q_i) . z, "
    "z the running sum of phi(k_j)",
)
_L_ELU = ck.Mistake(
    symptom="your default feature map gives negative features where x < 0 (it is "
    "elu(x) itself), so a similarity can be negative",
    why="a weighted average needs sim(q, k) >= 0; elu(x) + 1 is positive everywhere",
    fix="phi(x) = elu(x) + 1 = np.where(x > 0, x + 1, np.exp(x))",
)
_L_IGNORES_MAP = ck.Mistake(
    symptom="with feature_map given (this case passes one) your output is the "
    "default elu(x) + 1's",
    why="feature_map replaces the default; the Performer's random features and "
    "exp are passed this way",
    fix="phi = feature_map if feature_map is not None else elu_plus_one",
)
_L_MAP_ONE_SIDE = ck.Mistake(
    symptom="your similarity is not phi(q) . phi(k): the feature map is applied to "
    "only one of Q and K",
    why="linear attention's kernel is a dot product of features on both sides",
    fix="apply phi to both Q and K",
)
_L_IGNORES_CAUSAL = ck.Mistake(
    symptom="with causal=True (this case) every query still sees every key",
    why="causal: query i sees keys j <= i + (m - n) (lower-right, as the course's "
    "masks), so later keys must not reach it",
    fix="keep running sums S and z over the key axis and read each query at its "
    "own position, after its key is written",
)
_L_Z_AXIS = ck.Mistake(
    symptom="your normaliser is not sum_j phi(q_i) . phi(k_j): z = phi(K) is summed "
    "over another axis than the key axis (this case's shapes let it run)",
    why="z sums the m keys' features, so it is (..., r): the key axis of phi(K) "
    "(..., m, r) is -2, whatever the batch axes in front",
    fix="z = phi(K).sum(axis=-2)",
    line=r"\bz\s*=[^=].*(sum|cumsum)|sum\(",
)
_L_S_RAW_K = ck.Mistake(
    symptom="your state S is built from the raw keys: S = K^T V, while z (and Q) "
    "use the feature map",
    why="the similarity is phi(q) . phi(k) in the numerator as in Z: S must sum "
    "phi(k_j) v_j^T",
    fix="S = phi(K)^T V, with the same phi as z",
    line=r"\bS\s*=[^=]",
)
_L_UPPER_LEFT = ck.Mistake(
    symptom="with n={n} queries and m={m} keys your causal query i sees keys j <= i: "
    "aligned upper-left",
    why="the course aligns causal masks lower-right: the last query sees every key",
    fix="query i sees keys j <= i + (m - n)",
)
_L_NO_DIAGONAL = ck.Mistake(
    symptom="your causal queries miss their own key: query i sees j < i + (m - n)",
    why="causal attention includes the query's own position",
    fix="write key j into the state before the query at position j reads it",
)
_L_SOFTMAX = ck.Mistake(
    symptom="your output is softmax attention's: the similarity is exp(q . k / "
    "sqrt(d_k)), not phi(q) . phi(k)",
    why="linear attention replaces the exponential kernel by a dot product of "
    "features, so that the sums over keys can be regrouped",
    fix="sim(q, k) = phi(q) . phi(k) with phi the feature map",
)


_L_STATE_D_K = ck.Mistake(
    symptom="your function crashes on this case, whose feature map gives r = 2 d_k "
    "features, and runs when the map keeps r = d_k: the state S or the normaliser "
    "z is sized with d_k",
    why="S = phi(K)^T V is (..., r, d_v) and z is (..., r), with r the feature "
    "map's output size; the Performer's random features make r = 32 for d_k = 4",
    fix="size S and z from phi(K).shape[-1], not from Q's or K's last axis",
    line=r"zeros.*(d_k|[QK]\.shape\[-1\])",
)
_L_QUADRATIC = ck.Mistake(
    symptom="your function builds an (..., n, m) array: with n = m = {big} "
    "(causal={big_causal}) it needed {peak_mb:.0f} MB at its peak, where phi(K)^T "
    "V and a running state need well under 1 MB",
    why="linear attention's point is that the sums over keys do not depend on the "
    "query, so the (n, m) similarities are never needed, causal or not; a long "
    "sequence is where that saving matters",
    fix="non-causal: phi(Q) (phi(K)^T V) / phi(Q) z; causal: run S and z over the "
    "key axis and read each query at its own position",
    line=r"@\s*(np\.)?(swapaxes|transpose|moveaxis)\(|@\s*[\w().]+\.(T|mT|swapaxes"
    r"|transpose)\b|einsum\(.*->\.*nm",
)


def _pair_map(x):
    """A positive feature map with r = 2 d_k: exp(x) next to exp(-x)."""
    return np.concatenate([np.exp(x), np.exp(-x)], axis=-1)


def _elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def _elu1(x):
    return np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))


def _linear_variant(
    Q,
    K,
    V,
    feature_map=None,
    causal=False,
    *,
    normalise=True,
    phi_default=_elu1,
    use_map=True,
    sides="both",
    use_causal=True,
    aligned=True,
    diagonal=True,
    softmax=False,
    z_axis=-2,
    s_raw=False,
):
    """The reference, or a common mistake, through the quadratic form."""
    phi = feature_map if (feature_map is not None and use_map) else phi_default
    n, m = Q.shape[-2], K.shape[-2]
    phi_q = phi(Q) if sides in ("both", "Q") else Q
    phi_k = phi(K) if sides in ("both", "K") else K
    if softmax:
        A = np.exp(Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1]))
    else:
        A = phi_q @ np.swapaxes(phi_k, -1, -2)  # (..., n, m)
    if causal and use_causal:
        shift = (m - n) if aligned else 0
        A = A * (
            np.arange(m)[None, :] <= np.arange(n)[:, None] + shift - (not diagonal)
        )
    Z = A.sum(axis=-1, keepdims=True)
    if z_axis != -2 and causal:  # a running z over another axis than the keys'
        z = np.cumsum(phi_k, axis=z_axis)[..., m - n :, :]  # (..., n, r)
        Z = (phi_q * z).sum(axis=-1, keepdims=True)
    elif z_axis != -2:  # the shapes line up by chance (m == r)
        Z = phi_q @ phi_k.sum(axis=z_axis)[..., None]
    if s_raw:  # S = K^T V, the feature map left out of the state only
        A = phi_q @ np.swapaxes(K, -1, -2)
    if not normalise:
        return A @ V
    return np.where(Z != 0, A @ V / np.where(Z != 0, Z, 1.0), 0.0)


def _linear_cases(rng):
    specs = [
        ((), 4, 6, 3, 5, None, False),
        ((2, 3), 5, 4, 4, 2, None, False),
        ((), 3, 7, 4, 2, "exp", False),
        ((), 4, 6, 3, 2, None, True),
        ((2,), 5, 5, 3, 4, None, True),
        ((), 3, 5, 2, 3, "square", True),
        ((), 4, 6, 3, 2, "exp(±x)", False),
        ((2,), 3, 6, 4, 3, "exp(±x)", True),
    ]
    maps = {"exp": np.exp, "square": lambda x: x**2 + 0.1, "exp(±x)": _pair_map}
    cases = []
    for batch, n, m, d_k, d_v, name, causal in specs:
        Q = rng.standard_normal((*batch, n, d_k))
        K = rng.standard_normal((*batch, m, d_k))
        V = rng.standard_normal((*batch, m, d_v))
        sizes = {"n": n, "m": m, "d_k": d_k, "d_v": d_v}
        cases.append(
            ck.make_case(
                ("Q", "K", "V"),
                Q,
                K,
                V,
                sizes=sizes,
                facts={"n": n, "m": m},
                feature_map=maps.get(name),
                causal=causal or None,
                note=(f"feature_map={name}" if name else "")
                + (", r = 2 d_k features" if name == "exp(±x)" else ""),
            )
        )
    return cases


def _sized_by_d_k(fn, case):
    """Does ``fn`` run on ``case`` once its r = 2 d_k feature map keeps r = d_k?"""
    kwargs = {**case.kwargs, "feature_map": np.exp}
    try:
        with np.errstate(all="ignore"):
            fn(*(ck.copy(a) for a in case.args), **kwargs)
    except Exception:  # noqa: BLE001 - any crash: not this mistake
        return False
    return True


def _memory_probe(name, fn):
    """Refuse an answer that builds (n, m) on a long sequence; compare it too."""
    rng = np.random.default_rng(1)
    Q, K = 0.5 * rng.standard_normal((2, BIG, 2))  # (n, d_k), (m, d_k)
    V = rng.standard_normal((BIG, 2))  # (m, d_v)
    for causal in (False, True):
        case = ck.make_case(
            ("Q", "K", "V"),
            Q,
            K,
            V,
            causal=causal or None,
            note=_("a long sequence, n = m = {n}").format(n=BIG),
        )
        got, peak = _peak_and_result(name, fn, case, "linear_attention(Q, K, V, ...)")
        where = _("inputs: {label}").format(label=case.label)
        if peak > BIG_LIMIT:
            facts = {"big": BIG, "big_causal": causal, "peak_mb": peak / 2**20}
            raise ck.CheckFailed(
                name, _L_QUADRATIC.filled(facts), where, ck.look_at(fn, _L_QUADRATIC)
            )
        want = anp.linear_attention(Q, K, V, causal=causal)
        if not ck.same(np.asarray(got), want, TOL):
            raise _long_mismatch(name, fn, where)


def check_linear_attention(fn, *, seed=0):
    """Check ``fn(Q, K, V, feature_map=None, causal=False) -> (..., n, d_v)``.

    Against ``attention_np.linear_attention``: the default feature map elu(x) + 1,
    given ones (np.exp, x^2 + 0.1, and exp(±x) with r = 2 d_k), batch axes,
    n != m, d_v != d_k, and causal lower-right (query i sees keys j <= i + (m - n)).
    Then a long sequence (n = m = 2048), causal and not, on which an answer that
    builds the (n, m) similarities is refused by its peak memory.
    """
    name = "check_linear_attention"
    reason = N_(
        "12.3 asks you to build linear attention; anp.linear_attention is the "
        "answer, and a causal mask needs the (n, m) matrix the exercise does without"
    )
    fn = _refuse_helpers(fn, reason)
    v = partial(partial, _linear_variant)
    variants = [
        (_L_SOFTMAX, v(softmax=True)),
        (_L_NO_Z, v(normalise=False)),
        (
            _L_ELU,
            v(phi_default=lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0)))),
        ),
        (_L_IGNORES_MAP, v(use_map=False)),
        (_L_MAP_ONE_SIDE, v(sides="Q")),
        (_L_MAP_ONE_SIDE, v(sides="K")),
        (_L_IGNORES_CAUSAL, v(use_causal=False)),
        (_L_UPPER_LEFT, v(aligned=False)),
        (_L_NO_DIAGONAL, v(diagonal=False)),
        (_L_S_RAW_K, v(s_raw=True)),
        (_L_Z_AXIS, v(z_axis=-1)),
        (_L_Z_AXIS, v(z_axis=0)),
    ]
    cases = _linear_cases(np.random.default_rng(seed))
    try:
        ck.run(
            name,
            fn,
            cases,
            anp.linear_attention,
            (ck.Out("output", "(..., n, d_v)", "One row per query, d_v values."),),
            variants,
            signature="linear_attention(Q, K, V, feature_map=None, causal=False)",
            hint="phi(K) is (..., m, r): its transpose times V is (..., r, d_v)",
            tol=TOL,
            announce=False,
        )
    except ck.CheckFailed as err:
        crashed = isinstance(err.__cause__, (ValueError, IndexError))
        inputs = _("inputs: {label}").format
        case = next((c for c in cases if err.case == inputs(label=c.label)), None)
        if crashed and case is not None and "r = 2 d_k" in case.label:
            if _sized_by_d_k(fn, case):
                raise ck.CheckFailed(
                    name, _L_STATE_D_K, err.case, ck.look_at(fn, _L_STATE_D_K)
                ) from err.__cause__
        raise _torch_on_numpy(name, fn, err) or err from err.__cause__
    _memory_probe(name, fn)
    print(_(_PASSED).format(name=name, count=len(cases)))
    return True
