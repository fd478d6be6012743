"""Checker for lesson 12's exercise 12.1: one step of the delta rule.

``check_delta_step`` runs the learner's ``delta_step(S, q, k, v, beta)`` on
seeded cases (a non-zero state, batch axes, beta below 1) and names the likely
mistake with a :class:`Mistake` (symptom, why, fix).
"""

from functools import partial

import numpy as np

from helpers.checks import _engine as ck
from helpers.i18n import N_

__all__ = ["check_delta_step"]

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
    line=r"\bS(_new)?\s*[-+]?=[^=]",
)
_NO_CORRECTION = ck.Mistake(
    symptom="your new state adds beta k v^T and ignores what S already recalls for "
    "k: that is linear attention's write, not the delta rule's",
    why="the delta rule writes only the error between the value and the current "
    "recall, so a key written twice is overwritten, not summed",
    fix="S_new = S + beta * outer(k, v - S^T k)",
    line=r"\bS(_new)?\s*[-+]?=[^=]",
)
_SIGN_FLIPPED = ck.Mistake(
    symptom="your new state moves away from v: the error term has the wrong sign",
    why="after the write, S^T k should be closer to v than before (equal at beta = 1 "
    "with a unit-norm k); subtracting v - S^T k pushes it the other way",
    fix="the error is v - S^T k, not S^T k - v",
    line=r"(prediction|error|\bS(_new)?)\s*[-+]?=[^=].*-",
)
_NO_BETA = ck.Mistake(
    symptom="your new state ignores the write strength: this case has "
    "beta = {case_beta}, and your S_new is the one for beta = 1",
    why="beta scales how much of the error is written; DeltaNet learns it per step",
    fix="S_new = S + beta * outer(k, v - S^T k)",
    line=r"\bS(_new)?\s*[-+]?=[^=]",
)
_Y_OLD_STATE = ck.Mistake(
    symptom="your S_new is right but y is read from the old state",
    why="the step reads its output after the write: y_t = S_t^T q_t, so a query "
    "sees the pair written at its own step",
    fix="y = S_new^T q",
    line=r"^\s*y\s*=[^=]|return\b.*,",
)
_Y_PREDICTION = ck.Mistake(
    symptom="your y is the prediction S^T k, not the read-out with the query q",
    why="the prediction uses the key (to find the error to write); the output uses "
    "the query, after the write",
    fix="y = S_new^T q",
    line=r"^\s*y\s*=[^=]|return\b.*,",
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
                note=N_("unit-norm k") if unit else "",
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
            symptom="S is (..., d_k, d_v), q and k (..., d_k), v (..., d_v): the "
            "line that raised combines two of them whose axes do not line up",
            fix="write the shape of each operand on that line next to it; a read "
            "of S with a (..., d_k) vector sums over S's d_k axis (S^T x), and the "
            "write is (..., d_k, d_v), key axis first, batch axes kept in front",
        ),
        tol=TOL,
        mutable=("S",),
    )
