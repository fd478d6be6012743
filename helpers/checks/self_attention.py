"""Checker for self-attention with projections: lesson 06.

``check_self_attention`` runs the learner's function on seeded cases
(d_k != d_model, d_v != d_k, large inputs), compares it with
``helpers.attention_np`` on the projections and names the likely mistake; see
``helpers.checks``.
"""

import dataclasses
import math
from functools import partial

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.checks import _mistakes as mk
from helpers.i18n import _

__all__ = ["check_self_attention"]

# --------------------------------------------------------------------------
# check_self_attention (lesson 06, exercise 2)
# --------------------------------------------------------------------------

_SELF_D_MODEL = ck.Mistake(
    symptom="you scaled by sqrt(d_model) = sqrt({d_model})",
    why="the scores are dot products of queries of size d_k = W_Q.shape[1] = "
    "{d_k}, not of the inputs",
    fix="divide by math.sqrt(d_k)",
    line=r"sqrt",
)
_SELF_PROJECTIONS = ck.Mistake(
    symptom="your Q, K or V comes from the wrong matrix",
    why="each of the three roles has its own projection of X",
    fix="Q = X @ W_Q, K = X @ W_K, V = X @ W_V",
    line=r"W_[QKV]",
)
_SELF_WEIGHTS_T = ck.Mistake(
    symptom="your output is weights.T @ V",
    why="each query's output is its own row of weights times V",
    fix="output = weights @ V",
    line=r"\.T\b|transpose",
)


# the exercise forbids the course helpers: the fix is the learner's own sum
_SELF_COLUMNS = dataclasses.replace(
    mk.COLUMNS_SUM_TO_1,
    fix="normalise along the keys: e / e.sum(axis=-1, keepdims=True), with the max "
    "also taken along axis=-1",
)


def _self_variant(
    X,
    W_Q,
    W_K,
    W_V,
    *,
    divide_by="d_k",
    axis=-1,
    softmax=None,
    transpose=False,
    projections="QKV",
):
    """Self-attention with one of the common mistakes switched on."""
    W = {"Q": W_Q, "K": W_K, "V": W_V}
    Q, K, V = (X @ W[p] for p in projections)  # (n, d_k), (n, d_k), (n, d_v)
    divisor = {
        "d_k": math.sqrt(Q.shape[-1]),
        "d_model": math.sqrt(X.shape[-1]),
        "d_v": math.sqrt(V.shape[-1]),
        "d_k_no_sqrt": Q.shape[-1],
        "n": math.sqrt(X.shape[0]),
        "one": 1.0,
        "times_sqrt": 1 / math.sqrt(Q.shape[-1]),
    }[divide_by]
    scores = Q @ K.T / divisor  # (n, n)
    weights = (softmax or anp.softmax)(scores, axis)
    return (weights.T if transpose else weights) @ V, weights


def _self_reference(X, W_Q, W_K, W_V):
    return anp.scaled_dot_product_attention(X @ W_Q, X @ W_K, X @ W_V)


def check_self_attention(fn, *, seed=0):
    """Check ``fn(X, W_Q, W_K, W_V) -> (output (n, d_v), weights (n, n))``.

    X (n, d_model); W_Q, W_K (d_model, d_k); W_V (d_model, d_v). Cases:
    d_k != d_model, d_v != d_k, and X large enough to overflow a naive exp.
    """
    return ck.run(
        "check_self_attention",
        fn,
        _self_cases(np.random.default_rng(seed)),
        _self_reference,
        (
            ck.Out("output", "(n, d_v)", "output = weights @ V, (n, n) @ (n, d_v)."),
            ck.Out("weights", "(n, n)", "One row per query, one column per key."),
        ),
        _self_variants(),
        mk.diagnose_weights,
        signature="self_attention(X, W_Q, W_K, W_V)",
        hint=ck.Mistake(
            symptom="Q and K are (n, d_k) and V (n, d_v), all three from X; the "
            "scores compare every query with every key, (n, n)",
            fix="Q = X @ W_Q, K = X @ W_K, V = X @ W_V; scores = Q @ K.T is (n, n)",
        ),
    )


def _self_cases(rng):
    cases = []
    for n, d_model, d_k, d_v, size in [
        (5, 8, 4, 4, 1.0),
        (4, 6, 3, 5, 1.0),
        (6, 4, 8, 2, 1.0),
        (5, 8, 4, 6, 30.0),
    ]:
        X = size * rng.normal(size=(n, d_model))
        sigma = 1 / math.sqrt(d_model)
        W = [rng.normal(scale=sigma, size=(d_model, d)) for d in (d_k, d_k, d_v)]
        scores = (X @ W[0]) @ (X @ W[1]).T / math.sqrt(d_k)
        facts = {"max_score": float(np.abs(scores).max()), "sqrt_d_k": math.sqrt(d_k)}
        sizes = {"n": n, "d_model": d_model, "d_k": d_k, "d_v": d_v}
        note = (
            _("X scaled by {size}, scores up to {top}").format(
                size=f"{size:g}", top=f"{facts['max_score']:.0f}"
            )
            if size > 1
            else ""
        )
        cases.append(
            ck.make_case(
                ("X", "W_Q", "W_K", "W_V"),
                X,
                *W,
                sizes=sizes,
                facts=facts,
                large=size > 1,
                note=note,
            )
        )
    return cases


def _self_variants():
    v = partial(partial, _self_variant)
    return [
        (_SELF_D_MODEL, v(divide_by="d_model")),
        (mk.SCALE_D_V, v(divide_by="d_v")),
        (mk.NO_SCALE, v(divide_by="one")),
        (mk.SCALE_D_K, v(divide_by="d_k_no_sqrt")),
        (_SELF_COLUMNS, v(axis=0)),
        (_SELF_WEIGHTS_T, v(transpose=True)),
        (mk.NO_MAX, v(softmax=mk.naive_softmax)),
        (mk.GLOBAL_MAX, v(softmax=mk.global_max_softmax)),
        (mk.SCALE_N, v(divide_by="n")),
        (mk.SCALE_TIMES_SQRT, v(divide_by="times_sqrt")),
        *[(_SELF_PROJECTIONS, v(projections=p)) for p in ("KKV", "QQV", "QVV", "KQV")],
        (mk.MAX_AXIS, v(softmax=partial(mk.shifted_softmax, max_axis=0))),
        (mk.EXP_SIGN, v(softmax=partial(mk.shifted_softmax, sign=-1))),
        (mk.NO_EXP, v(softmax=partial(mk.shifted_softmax, use_exp=False))),
        (mk.NO_EXP, v(softmax=mk.no_exp_softmax)),
    ]
