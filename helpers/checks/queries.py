"""Checker for lesson 01's build exercise: attention for every query, one at a time.

``fn(Q, K, V, scale=None) -> (Y, weights, Z)`` runs lesson 01's one-query
computation for each row of ``Q`` and stacks the answers: ``Y`` (n, d_v),
``weights`` (n, m), ``Z`` (n,), one normaliser per query. It is compared with
``anp.attention_one_query`` called once per query. Every known mistake is a
:class:`~helpers.checks._engine.Mistake`; see ``helpers.checks``.
"""

import math
from functools import partial

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.checks import _mistakes as mk
from helpers.checks.attention import without_helpers

__all__ = ["check_attention_each_query"]

_SCORE = "score_s = <q_t, k_s> * scale, with scale = 1 / sqrt(d_k) by default"

_Z_SHIFTED = ck.Mistake(
    symptom="your Z[t] is exp(max score) times too small for each query t: it is "
    "the sum of exp(score - max), the normaliser after the shift",
    why="subtracting the max is a safe way to get the weights, but Z is defined on "
    "the scores themselves",
    fix="Z[t] = sum_j exp(score_tj), without the shift",
)
_Z_ONE = ck.Mistake(
    symptom="every Z[t] you return is 1: that is the sum of the weights, after "
    "normalising",
    why="Z is what you divide by, so it is taken before the division",
    fix="Z[t] = sum_j exp(score_tj), the sum of the exponentials",
)
_Z_SHARED = ck.Mistake(
    symptom="all your Z[t] are the same number, the sum over every query and key",
    why="each query has its own normaliser: Z_t sums over the keys only, for that "
    "one query",
    fix="compute Z inside the loop over queries, from that query's scores",
)
_Z_UNSCALED = ck.Mistake(
    symptom="your Z comes from unscaled dot products, but your weights from scaled "
    "ones",
    why="Z normalises the weights, so it sums the exponentials of the same scores: "
    + _SCORE,
    fix="use one scores array for both the weights and Z",
)
_OVER_QUERIES = ck.Mistake(
    symptom="your weights' columns sum to 1, not their rows: you normalised each key "
    "over the queries",
    why="each query spreads its own attention over the keys; one query's weights "
    "must not depend on the other queries",
    fix="normalise each query's row of exponentials by that query's Z",
)
_NO_SCALE = ck.Mistake(
    symptom="with scale=None your scores are the raw dot products, sqrt(d_k) = "
    "{sqrt_d_k:.4g} times too large",
    why="the default scale is 1 / sqrt(d_k), a temperature of sqrt(d_k)",
    fix=_SCORE,
)
_SCALE_D_K = ck.Mistake(
    symptom="your scores are divided by d_k = {d_k}, not by sqrt(d_k)",
    why="the spread of <q, k> grows like sqrt(d_k) (lesson 04), so that is what "
    "the default divides by",
    fix=_SCORE,
)
_SCALE_IGNORED = ck.Mistake(
    symptom="with scale={scale} given, your scores still use 1 / sqrt(d_k)",
    why="scale, when given, replaces the default",
    fix="use 1 / math.sqrt(d_k) only when scale is None",
)
_Y_NO_1_OVER_Z = ck.Mistake(
    symptom="your weights are right but each Y[t] is Z[t] times too large",
    why="y_t = (1 / Z_t) sum_s exp(score_ts) v_s: the 1/Z is part of every term",
    fix="divide the weighted sum by Z[t], or sum the weights times the values",
)
_Y_FROM_K = ck.Mistake(
    symptom="your Y is a weighted sum of the keys' rows, not of the values'",
    why="keys say what a document is about, values what it says: the answer "
    "blends the values",
    fix="y_t = sum_s weights[t, s] * V[s]",
)
_ONE_QUERY_ONLY = ck.Mistake(
    symptom="every row of your answer is query 0's: the loop uses the same query "
    "each time",
    why="row t of Y, weights and Z belongs to query t, row t of Q",
    fix="inside the loop, take the t-th row of Q",
)


_STOPS_EARLY = ck.Mistake(
    symptom="your outputs have n - 1 = {n_minus_1} rows, one query short: your "
    "loop stops before the last query",
    why="range(n) already runs t = 0 .. n - 1; range(n - 1) leaves the last query out",
    fix="for t in range(Q.shape[0]): one step per row of Q",
    line=r"range|for\b",
)


def _each(Q, K, V, scale=None, *, rule="right", z="true", norm="rows", y="right"):
    """The exercise with one of the common mistakes switched on."""
    d_k = Q.shape[-1]
    chosen = {
        "right": 1 / math.sqrt(d_k) if scale is None else scale,
        "none": 1.0 if scale is None else scale,
        "d_k": 1 / d_k if scale is None else scale,
        "ignored": 1 / math.sqrt(d_k),
        "d_v": 1 / math.sqrt(V.shape[-1]) if scale is None else scale,
    }[rule]
    Q = np.broadcast_to(Q[:1], Q.shape) if y == "first" else Q
    scores = Q @ K.T * chosen  # (n, m)
    e = np.exp(scores)  # (n, m)
    if norm == "rows":
        weights = e / e.sum(axis=1, keepdims=True)
    else:
        weights = e / e.sum(axis=0, keepdims=True)
    Z = {
        "true": e.sum(axis=1),
        "shifted": np.exp(scores - scores.max(axis=1, keepdims=True)).sum(axis=1),
        "one": np.ones(len(Q)),
        "shared": np.full(len(Q), e.sum()),
        "unscaled": np.exp(Q @ K.T).sum(axis=1),
    }[z]
    values = K if y == "from_K" else V
    Y = (e if y == "no_1_over_Z" else weights) @ values  # (n, d_v)
    if y == "stops_early":  # for t in range(n - 1)
        return Y[:-1], weights[:-1], Z[:-1]
    return Y, weights, Z


def _reference(Q, K, V, scale=None):
    rows = [anp.attention_one_query(q, K, V, scale=scale) for q in Q]
    Y = np.stack([r[0] for r in rows])  # (n, d_v)
    weights = np.stack([r[1] for r in rows])  # (n, m)
    Z = np.array([r[2] for r in rows])  # (n,)
    return Y, weights, Z


def _cases(rng):
    cases = []
    for n, m, d_k, d_v, scale in [
        # n, n - 1, m, d_k and d_v all differ, so a shape names its axes rightly
        (4, 6, 5, 2, None),
        (5, 2, 3, 7, None),
        (3, 7, 5, 4, 0.7),
        (1, 4, 2, 5, None),
        (4, 1, 5, 2, None),
    ]:
        cases.append(
            ck.make_case(
                ("Q", "K", "V"),
                rng.normal(size=(n, d_k)),
                rng.normal(size=(m, d_k)),
                rng.normal(size=(m, d_v)),
                scale=scale,
                sizes={"n": n, "m": m, "d_k": d_k, "d_v": d_v},
                facts={"sqrt_d_k": math.sqrt(d_k), "scale": scale, "n_minus_1": n - 1},
                note="one key" if m == 1 else ("one query" if n == 1 else ""),
            )
        )
    return cases


def check_attention_each_query(fn, *, seed=0):
    """Check ``fn(Q, K, V, scale=None) -> (Y, weights, Z)``, one query at a time.

    Cases: n != m and d_v != d_k, an explicit ``scale``, one query, one key.
    """
    fn = without_helpers(
        fn,
        ("softmax", "attention_one_query", "scaled_dot_product_attention"),
        "this exercise",
    )
    v = partial(partial, _each)
    variants = [
        (_NO_SCALE, v(rule="none")),
        (_SCALE_D_K, v(rule="d_k")),
        (_SCALE_IGNORED, v(rule="ignored")),
        (mk.SCALE_D_V, v(rule="d_v")),
        (_STOPS_EARLY, v(y="stops_early")),
        (_ONE_QUERY_ONLY, v(y="first")),
        (_OVER_QUERIES, v(norm="columns")),
        (_Z_SHIFTED, v(z="shifted")),
        (_Z_ONE, v(z="one")),
        (_Z_SHARED, v(z="shared")),
        (_Z_UNSCALED, v(z="unscaled")),
        (_Y_NO_1_OVER_Z, v(y="no_1_over_Z")),
        (_Y_FROM_K, v(y="from_K")),
    ]
    outputs = (
        ck.Out("Y", "(n, d_v)", "Row t is query t's answer, the width of a value."),
        ck.Out("weights", "(n, m)", "Row t holds query t's weight for each key."),
        ck.Out("Z", "(n,)", "One normaliser per query."),
    )
    return ck.run(
        "check_attention_each_query",
        fn,
        _cases(np.random.default_rng(seed)),
        _reference,
        outputs,
        variants,
        signature="attention_each_query(Q, K, V, scale=None)",
        hint="the shapes are Q (n, d_k), K (m, d_k), V (m, d_v): one query q_t is "
        "a row of Q, of shape (d_k,)",
    )
