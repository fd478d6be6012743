"""Checkers for lesson 12: linear attention and the delta rule.

- ``check_delta_step``: one step of the delta rule, read before write;
- ``check_causal_linear_attention``: causal linear attention with a running
  state S and normaliser z, lower-right aligned;
- ``check_linear_attention``: the ★★★ build, ``linear_attention(Q, K, V,
  feature_map=None, causal=False)`` as ``helpers.attention_np`` has it.

Each runs the learner's function on seeded cases, compares it with the helper
and names the likely mistake with a :class:`Mistake` (symptom, why, fix).
"""

import math
import tracemalloc
from functools import partial

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck

__all__ = [
    "check_causal_linear_attention",
    "check_delta_step",
    "check_linear_attention",
]

TOL = (1e-9, 1e-12)

# --------------------------------------------------------------------------
# check_delta_step (exercise 12.1): S_new = S + beta k (v - S^T k)^T, y = S_new^T q
# --------------------------------------------------------------------------

_WRITE_THEN_READ = ck.Mistake(
    symptom="your new state is off even though S, k and v are right: the "
    "prediction you subtract was read from a state that already holds k v^T",
    why="the delta rule corrects what the memory recalls before this step: the "
    "error v - S^T k must be computed from the old S, then written",
    fix="prediction = S^T k from the state you were given; then "
    "S_new = S + beta * k (v - prediction)^T",
)
_NO_CORRECTION = ck.Mistake(
    symptom="your new state adds beta k v^T and ignores what S already recalls for "
    "k: that is linear attention's write, not the delta rule's",
    why="the delta rule writes only the error between the value and the current "
    "recall, so a key written twice is overwritten, not summed",
    fix="S_new = S + beta * outer(k, v - S^T k)",
)
_SIGN_FLIPPED = ck.Mistake(
    symptom="your new state moves away from v: the error term has the wrong sign",
    why="after the write, S^T k should be closer to v than before (equal at beta = 1 "
    "with a unit-norm k); subtracting v - S^T k pushes it the other way",
    fix="the error is v - S^T k, not S^T k - v",
)
_NO_BETA = ck.Mistake(
    symptom="your new state ignores the write strength: this case has "
    "beta = {case_beta}, and your S_new is the one for beta = 1",
    why="beta scales how much of the error is written; DeltaNet learns it per step",
    fix="S_new = S + beta * outer(k, v - S^T k)",
)
_Y_OLD_STATE = ck.Mistake(
    symptom="your S_new is right but y is read from the old state",
    why="the step reads its output after the write: y_t = S_t^T q_t, so a query "
    "sees the pair written at its own step",
    fix="y = S_new^T q",
)
_Y_PREDICTION = ck.Mistake(
    symptom="your y is the prediction S^T k, not the read-out with the query q",
    why="the prediction uses the key (to find the error to write); the output uses "
    "the query, after the write",
    fix="y = S_new^T q",
)


def _delta_step(
    S,
    q,
    k,
    v,
    beta,
    *,
    write_then_read=False,
    correction=True,
    sign=1.0,
    use_beta=True,
    y_from="new",
):
    """The reference step, or one with a common mistake switched on."""
    b = beta if use_beta else 1.0
    if write_then_read:
        S = S + b * k[..., :, None] * v[..., None, :]
        prediction = np.einsum("...kv,...k->...v", S, k)
        S_new = S - b * k[..., :, None] * prediction[..., None, :]
    else:
        prediction = np.einsum("...kv,...k->...v", S, k)  # (..., d_v): read first
        error = sign * (v - prediction) if correction else v  # (..., d_v)
        S_new = S + b * k[..., :, None] * error[..., None, :]  # (..., d_k, d_v)
    reads = {"new": (S_new, q), "old": (S, q), "prediction": (S, k)}
    state, vector = reads[y_from]
    return S_new, np.einsum("...kv,...k->...v", state, vector)


def _delta_step_cases(rng):
    cases = []
    for batch, d_k, d_v, beta, unit in (
        ((), 4, 3, 1.0, True),
        ((), 5, 2, 0.5, False),
        ((2,), 4, 6, 0.3, True),
        ((3,), 3, 4, 1.0, False),
    ):
        S = rng.standard_normal((*batch, d_k, d_v))  # a state that already recalls
        q, k = rng.standard_normal((2, *batch, d_k))
        if unit:
            k = k / np.linalg.norm(k, axis=-1, keepdims=True)
        v = rng.standard_normal((*batch, d_v))
        cases.append(
            ck.make_case(
                ("S", "q", "k", "v", "beta"),
                S,
                q,
                k,
                v,
                beta,
                sizes={"d_k": d_k, "d_v": d_v},
                facts={"case_beta": beta},
                note="unit-norm k" if unit else "",
            )
        )
    return cases


def check_delta_step(fn, *, seed=0):
    """Check ``fn(S, q, k, v, beta) -> (S_new, y)``, one step of the delta rule.

    S (..., d_k, d_v); q, k (..., d_k); v (..., d_v); beta a float. Read the
    prediction S^T k first, write S_new = S + beta k (v - S^T k)^T, then read
    y = S_new^T q (..., d_v). Cases: a non-zero state, d_k != d_v, batch axes,
    beta 1 and below, unit-norm keys and others.
    """
    v = partial(partial, _delta_step)
    variants = [
        (_WRITE_THEN_READ, v(write_then_read=True)),
        (_NO_CORRECTION, v(correction=False)),
        (_SIGN_FLIPPED, v(sign=-1.0)),
        (_NO_BETA, v(use_beta=False)),
        (_Y_OLD_STATE, v(y_from="old")),
        (_Y_PREDICTION, v(y_from="prediction")),
    ]
    return ck.run(
        "check_delta_step",
        fn,
        _delta_step_cases(np.random.default_rng(seed)),
        _delta_step,
        (
            ck.Out(
                "S_new",
                "(..., d_k, d_v)",
                "The write is an outer product with the key first: "
                "k[..., :, None] * error[..., None, :].",
            ),
            ck.Out("y", "(..., d_v)", "Read with the query: S_new^T q."),
        ),
        variants,
        signature="delta_step(S, q, k, v, beta)",
        hint=ck.Mistake(
            symptom="S and the write are (..., d_k, d_v), an outer product with the "
            "key first, and every step must keep the batch axes in front",
            fix="S^T k is np.einsum('...kv,...k->...v', S, k); np.outer flattens "
            "batch axes",
        ),
        tol=TOL,
        mutable=("S",),
    )


# --------------------------------------------------------------------------
# check_causal_linear_attention (exercise 12.2): a running state, lower-right
# --------------------------------------------------------------------------

_NO_Z = ck.Mistake(
    symptom="your output is phi(q_i) S without dividing by the normaliser "
    "Z_i = phi(q_i) . z: the rows are weighted sums, not weighted averages",
    why="softmax attention divides by Z = sum_j exp(score_j); linear attention "
    "divides by Z_i = sum_j phi(q_i) . phi(k_j), kept as the running sum z",
    fix="keep z = sum of phi(k_j) beside S, and return phi(q_i) S / (phi(q_i) . z)",
)
_READ_BEFORE_WRITE = ck.Mistake(
    symptom="each query misses its own key: query i sees keys j < i + (m - n), "
    "one fewer than causal attention allows",
    why="the causal mask lets a query attend to its own position, so the state "
    "must hold key j's write before the query at position j reads it",
    fix="at each position, first add phi(k_j) v_j^T to S and phi(k_j) to z, then "
    "read the query there",
)
_UPPER_LEFT = ck.Mistake(
    symptom="with n={n} queries and m={m} keys your query i sees keys j <= i: "
    "aligned upper-left",
    why="the n queries are the last n positions (the m - n keys before them are a "
    "cache), so query i sits at position i + (m - n) and sees every key up to it",
    fix="run the state over all m keys and let query i read it after key "
    "i + (m - n) was written",
)
_Z_NOT_ACCUMULATED = ck.Mistake(
    symptom="your normaliser uses only the newest key: z holds phi(k_j), not the "
    "sum over the keys so far",
    why="Z_i sums the similarities of every key query i may see, like S sums their "
    "weighted values",
    fix="z = z + phi(k_j), a running sum like S",
)
_S_NOT_ACCUMULATED = ck.Mistake(
    symptom="your state holds only the newest key's phi(k_j) v_j^T: each output "
    "is (nearly) that key's value",
    why="the state is a running sum: S_j = S_(j-1) + phi(k_j) v_j^T",
    fix="S = S + outer(phi(k_j), v_j)",
)
_NOT_CAUSAL = ck.Mistake(
    symptom="every query sees every key, including later ones: the output is not "
    "causal",
    why="query i may only see keys j <= i + (m - n); in a running state that means "
    "reading it at position i + (m - n), before later keys are written",
    fix="loop over the key positions and read each query's output inside the loop",
)


def _causal_variant(
    phi_Q,
    phi_K,
    V,
    *,
    normalise=True,
    offset=0,
    aligned=True,
    z_sum=True,
    s_sum=True,
    causal=True,
):
    """The reference, or a common mistake: via masks on phi(Q) phi(K)^T."""
    n, m = phi_Q.shape[0], phi_K.shape[0]
    A = phi_Q @ phi_K.T  # (n, m)
    shift = (m - n) if aligned else 0
    keep = np.arange(m)[None, :] <= np.arange(n)[:, None] + shift - offset
    if not causal:
        keep = np.ones((n, m), dtype=bool)
    last = np.where(keep.any(axis=1), keep.sum(axis=1) - 1, 0)  # newest key seen
    only_last = np.arange(m)[None, :] == last[:, None]
    num = (A * (keep if s_sum else only_last & keep)) @ V  # (n, d_v)
    Z = (A * (keep if z_sum else only_last & keep)).sum(axis=1, keepdims=True)
    if not normalise:
        return num
    return np.where(Z > 0, num / np.where(Z > 0, Z, 1.0), 0.0)


def _causal_cases(rng):
    cases = []
    for n, m, r, d_v in ((5, 5, 3, 2), (3, 6, 4, 5), (1, 4, 3, 2), (4, 7, 2, 3)):
        phi_Q = np.exp(rng.standard_normal((n, r)))  # positive features
        phi_K = np.exp(rng.standard_normal((m, r)))
        V = rng.standard_normal((m, d_v))
        note = "n == m" if n == m else f"the last n={n} of m={m} positions"
        cases.append(
            ck.make_case(
                ("phi_Q", "phi_K", "V"),
                phi_Q,
                phi_K,
                V,
                sizes={"n": n, "m": m, "r": r, "d_v": d_v} if n != m else {"r": r},
                facts={"n": n, "m": m},
                note=note,
            )
        )
    return cases


def check_causal_linear_attention(fn, *, seed=0):
    """Check ``fn(phi_Q, phi_K, V) -> (n, d_v)``: causal linear attention.

    phi_Q (n, r) and phi_K (m, r) are positive features, V (m, d_v). Query i
    sees keys j <= i + (m - n) (lower-right, n <= m): y_i = phi(q_i) S / phi(q_i)
    . z with S and z the running sums of phi(k_j) v_j^T and phi(k_j) up to that
    key. Cases: n == m, n < m (a cache of earlier keys), one query.
    """
    v = partial(partial, _causal_variant)
    variants = [
        (_NO_Z, v(normalise=False)),
        (_READ_BEFORE_WRITE, v(offset=1)),
        (_UPPER_LEFT, v(aligned=False)),
        (_NOT_CAUSAL, v(causal=False)),
        (_Z_NOT_ACCUMULATED, v(z_sum=False)),
        (_S_NOT_ACCUMULATED, v(s_sum=False)),
    ]
    return ck.run(
        "check_causal_linear_attention",
        fn,
        _causal_cases(np.random.default_rng(seed)),
        _causal_variant,
        (ck.Out("output", "(n, d_v)", "One row per query."),),
        variants,
        signature="causal_linear_attention(phi_Q, phi_K, V)",
        hint=ck.Mistake(
            symptom="S is (r, d_v) and z is (r,); one query's read of S is (d_v,)",
            fix="phi_Q[i] @ S is (d_v,)",
        ),
        tol=TOL,
    )


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
    line=r"@\s*(np\.)?(swapaxes|transpose|moveaxis)|\.mT\b|causal_mask|tril",
)
BIG = 2048  # n = m of the memory probe: an (n, m) float64 array is 32 MB
BIG_LIMIT = 8 * 2**20  # bytes a running-state answer stays far below


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
            note=f"a long sequence, n = m = {BIG}",
        )
        tracemalloc.start()
        try:
            got = ck.call(name, fn, case, "linear_attention(Q, K, V, ...)", "")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        where = f"inputs: {case.label}"
        if peak > BIG_LIMIT:
            facts = {"big": BIG, "big_causal": causal, "peak_mb": peak / 2**20}
            raise ck.CheckFailed(
                name, _L_QUADRATIC.filled(facts), where, ck.look_at(fn, _L_QUADRATIC)
            )
        want = anp.linear_attention(Q, K, V, causal=causal)
        if not ck.same(np.asarray(got), want, TOL):
            raise ck.CheckFailed(
                name,
                "your output on a long sequence differs from the reference, though "
                "the small cases matched: look for a step that depends on the length",
                where,
                ck.defined_at(fn),
            )


def check_linear_attention(fn, *, seed=0):
    """Check ``fn(Q, K, V, feature_map=None, causal=False) -> (..., n, d_v)``.

    Against ``attention_np.linear_attention``: the default feature map elu(x) + 1,
    given ones (np.exp, x^2 + 0.1, and exp(±x) with r = 2 d_k), batch axes,
    n != m, d_v != d_k, and causal lower-right (query i sees keys j <= i + (m - n)).
    Then a long sequence (n = m = 2048), causal and not, on which an answer that
    builds the (n, m) similarities is refused by its peak memory.
    """
    name = "check_linear_attention"
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
        case = next((c for c in cases if err.case == f"inputs: {c.label}"), None)
        if crashed and case is not None and "r = 2 d_k" in case.label:
            if _sized_by_d_k(fn, case):
                raise ck.CheckFailed(
                    name, _L_STATE_D_K, err.case, ck.look_at(fn, _L_STATE_D_K)
                ) from err.__cause__
        raise
    _memory_probe(name, fn)
    print(f"✓ {name}: {len(cases)} cases passed; a long sequence too, in small memory")
    return True
