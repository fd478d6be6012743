"""Checker for lesson 06's build exercise: a whole self-attention layer.

``check_self_attention_layer`` checks a layer built from a blank cell:
projections, scale, causal mask, softmax and the output projection W_O, on one
sequence and on batches, with seed 003's example (``X_SEED``, from
``helpers.checks.projections``) among the cases. The lesson's predictions,
``check_predict_shapes`` and ``check_shrink_prediction``, are checked in
``helpers.checks.projections``. See ``helpers.checks``.
"""

import math

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.checks.projections import X_SEED
from helpers.i18n import _

__all__ = ["check_self_attention_layer"]


# --------------------------------------------------------------------------
# check_self_attention_layer (lesson 06, exercise 6.4, the build exercise)
# --------------------------------------------------------------------------

_LAYER_NO_W_O = ck.Mistake(
    symptom="your output has d_v = {d_v} columns, one per feature of a value: the "
    "last step of the layer is missing",
    why="the layer ends with the output projection W_O (d_v, d_out), which maps "
    "every token's attended value back to the model's size",
    fix="output = (weights @ V) @ W_O",
    line=r"return",
)
_LAYER_NO_MASK = ck.Mistake(
    symptom="with causal=True your weights put weight on later tokens (above the "
    "diagonal): the mask is not applied",
    why="causal means query i may attend key j only when j <= i; the blocked "
    "scores must become -inf before the softmax",
    fix="scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)",
    line=r"causal|return",
)
_LAYER_MASK_FLIPPED = ck.Mistake(
    symptom="with causal=True your weights sit on the future: each query attends "
    "the keys after it and ignores the ones before (the last query, with no key "
    "after it, gets zeros, NaN or uniform weights): the mask's polarity is flipped",
    why="True = may attend: the allowed keys are the lower triangle, the diagonal "
    "included",
    fix="keep np.tril(...) (j <= i), not np.triu or ~np.tril",
    line=r"triu|~|tril",
)
_LAYER_MASK_AFTER = ck.Mistake(
    symptom="with causal=True your rows of weights do not sum to 1: the future "
    "was zeroed after the softmax",
    why="the softmax's Z still counted the blocked keys; mask the scores (-inf), "
    "then take the softmax",
    fix="scores = np.where(mask, scores, -np.inf) before the softmax",
    line=r"causal|\*",
)
_LAYER_NO_DIAGONAL = ck.Mistake(
    symptom="with causal=True your weights' diagonal is 0: no token attends itself, "
    "and token 0 attends nothing (its row is zeros, NaN or uniform)",
    why="causal blocks the future only: key j = i is the token itself, allowed",
    fix="np.tril(..., k=0), diagonal included",
    line=r"tril|triu|k\s*=|<",
)
_LAYER_SCALE = {
    "d_model": ck.Mistake(
        symptom="your scores are divided by sqrt(d_model) = sqrt({d_model}), the size "
        "of a token, not of a query",
        why="the dot products q . k run over d_k = W_Q.shape[-1] = {d_k} "
        "coordinates, and their spread grows like sqrt(d_k) (lesson 04)",
        fix="scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(d_k)",
        line=r"sqrt|/",
    ),
    "d_v": ck.Mistake(
        symptom="your scores are divided by sqrt(d_v) = sqrt({d_v}), the size of a "
        "value",
        why="the scale belongs to the dot product q . k, whose length is d_k = {d_k}",
        fix="scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(d_k)",
        line=r"sqrt|/",
    ),
    "one": ck.Mistake(
        symptom="your scores are not scaled",
        why="q . k over d_k coordinates spreads like sqrt(d_k): lesson 04",
        fix="divide the scores by math.sqrt(d_k), d_k = W_Q.shape[-1]",
        line=r"sqrt|/",
    ),
    "d_k": ck.Mistake(
        symptom="your scores are divided by d_k = {d_k}, not by its square root",
        why="Var(q . k) = d_k, so the standard deviation is sqrt(d_k)",
        fix="divide by math.sqrt(d_k)",
        line=r"sqrt|/",
    ),
}
_LAYER_K_T = ck.Mistake(
    symptom="on a batch of sequences (X (2, 4, 6)) your scores' matrix product "
    "fails: `.T` reverses every axis of K, the batch axis too",
    why="with X (batch, n, d_model), K is (batch, n, d_k) and the scores are "
    "(batch, n, n): each sequence's queries meet that sequence's keys, so only the "
    "last two axes of K may trade places",
    fix="scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(d_k)",
    line=r"\.T\b|transpose\(",
)
_LAYER_AXIS = ck.Mistake(
    symptom="your weights' columns sum to 1, not their rows: the softmax runs "
    "over the queries",
    why="each query's weights over the keys must sum to 1; the keys are the last "
    "axis of the scores",
    fix="softmax along axis=-1",
    line=r"axis",
)
_LAYER_NO_MAX = ck.Mistake(
    symptom="on the case with large scores (up to {max_score:.0f}) your weights "
    "are NaN: e^score overflowed",
    why="exp overflows above about 709 in float64; the softmax is unchanged by "
    "a shift shared by a row (lesson 03)",
    fix="e = np.exp(scores - scores.max(axis=-1, keepdims=True))",
    line=r"exp",
)


def _layer(
    X,
    W_Q,
    W_K,
    W_V,
    W_O,
    causal=False,
    *,
    divide_by="d_k",
    axis=-1,
    mask_mode="before",
    tril_k=0,
    naive=False,
    project=True,
    empty="zero",
):
    """The layer, with one of the common mistakes switched on."""
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # (..., n, d_k), (..., n, d_k), (..., n, d_v)
    d = {
        "d_k": math.sqrt(Q.shape[-1]),
        "d_model": math.sqrt(X.shape[-1]),
        "d_v": math.sqrt(V.shape[-1]),
        "one": 1.0,
        "d_k_plain": Q.shape[-1],
    }
    scores = Q @ np.swapaxes(K, -1, -2) / d[divide_by]  # (..., n, n)
    n = X.shape[-2]
    allowed = np.tril(np.ones((n, n), dtype=bool), k=tril_k)  # (n, n)
    if mask_mode == "flipped":
        allowed = ~np.tril(np.ones((n, n), dtype=bool))
    if causal and mask_mode in ("before", "flipped"):
        scores = np.where(allowed, scores, -np.inf)
    if naive:
        e = np.exp(scores)
    else:
        top = scores.max(axis=axis, keepdims=True)
        e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=axis, keepdims=True)
    weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    if causal and mask_mode == "after":
        weights = weights * allowed
    if causal and mask_mode != "after" and empty != "zero":
        blocked = ~allowed.any(axis=-1)[:, None]  # (n, 1): rows with no key
        fill = np.nan if empty == "nan" else 1.0 / n  # naive max, or -1e9
        weights = np.where(blocked, fill, weights)
    out = weights @ V  # (..., n, d_v)
    return (out @ W_O if project else out), weights


def _layer_reference(X, W_Q, W_K, W_V, W_O, causal=False):
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[-2]
    mask = anp.causal_mask(n) if causal else None
    out, weights = anp.scaled_dot_product_attention(
        X @ W_Q, X @ W_K, X @ W_V, mask=mask
    )  # (..., n, d_v), (..., n, n)
    return out @ W_O, weights


def _layer_cases(rng):
    cases = []
    for shape, d_k, d_v, d_out, causal, size in [
        ((5, 8), 4, 6, 8, False, 1.0),
        ((2, 4, 6), 3, 5, 6, True, 1.0),
        ((3, 6, 10), 4, 2, 7, True, 1.0),
        ((6, 8), 4, 3, 8, True, 30.0),
    ]:
        d_model = shape[-1]
        X = size * rng.standard_normal(shape)  # (..., n, d_model)
        sigma = 1 / math.sqrt(d_model)
        W_Q, W_K = (rng.normal(scale=sigma, size=(d_model, d_k)) for _letter in "QK")
        W_V = rng.normal(scale=sigma, size=(d_model, d_v))  # (d_model, d_v)
        W_O = rng.normal(scale=1 / math.sqrt(d_v), size=(d_v, d_out))  # (d_v, d_out)
        scores = (X @ W_Q) @ np.swapaxes(X @ W_K, -1, -2) / math.sqrt(d_k)
        sizes = {
            "n": shape[-2],
            "d_model": d_model,
            "d_k": d_k,
            "d_v": d_v,
            "d_out": d_out,
        }
        facts = {"max_score": float(np.abs(scores).max())}
        cases.append(
            ck.make_case(
                ("X", "W_Q", "W_K", "W_V", "W_O"),
                X,
                W_Q,
                W_K,
                W_V,
                W_O,
                causal=causal,
                sizes=sizes,
                facts=facts,
                large=size > 1,
                note=_("scores up to {top}").format(top=f"{facts['max_score']:.0f}")
                if size > 1
                else "",
            )
        )
    W = np.array([[1, 0], [0, 1], [0, 0]])  # seed 003's W_Q = W_K = W_V
    cases.append(
        ck.make_case(
            ("X", "W_Q", "W_K", "W_V", "W_O"),
            X_SEED,
            W,
            W,
            W,
            np.eye(2),
            causal=False,
            sizes={"n": 2, "d_model": 3, "d_k": 2, "d_v": 2},
            facts={"max_score": 29.0},
            note="seed 003's example, W_O = I, integers",
        )
    )
    return cases


EMPTY = ("zero", "nan", "uniform")  # what a row with no allowed key becomes


def _layer_variants():
    def v(**options):
        return lambda *args, **kw: _layer(*args, **kw, **options)

    return [
        (_LAYER_NO_W_O, v(project=False)),
        (_LAYER_NO_MASK, lambda *args, **kw: _layer(*args[:5])),
        *[(_LAYER_MASK_FLIPPED, v(mask_mode="flipped", empty=e)) for e in EMPTY],
        (_LAYER_MASK_AFTER, v(mask_mode="after")),
        *[(_LAYER_NO_DIAGONAL, v(tril_k=-1, empty=e)) for e in EMPTY],
        (_LAYER_SCALE["d_model"], v(divide_by="d_model")),
        (_LAYER_SCALE["d_v"], v(divide_by="d_v")),
        (_LAYER_SCALE["one"], v(divide_by="one")),
        (_LAYER_SCALE["d_k"], v(divide_by="d_k_plain")),
        (_LAYER_AXIS, v(axis=-2)),
        (_LAYER_NO_MAX, v(naive=True)),
    ]


def check_self_attention_layer(fn, *, seed=0):
    """Check ``fn(X, W_Q, W_K, W_V, W_O, causal=False) -> (output, weights)``.

    X (..., n, d_model); W_Q, W_K (d_model, d_k); W_V (d_model, d_v); W_O
    (d_v, d_out); output (..., n, d_out), weights (..., n, n). Cases: one
    sequence and batches, causal or not, d_k, d_v, d_out and d_model all
    different, scores large enough to overflow a naive exp, seed 003's example.
    """
    name = "check_self_attention_layer"
    try:
        return ck.run(
            name,
            fn,
            _layer_cases(np.random.default_rng(seed)),
            _layer_reference,
            (
                ck.Out("output", "(..., n, d_out)", "The last step maps d_v to d_out."),
                ck.Out(
                    "weights", "(..., n, n)", "One row per query, one column per key."
                ),
            ),
            _layer_variants(),
            signature="self_attention_layer(X, W_Q, W_K, W_V, W_O, causal=False)",
            hint="with batch axes, the scores need every key of the same sequence "
            "against every query: only the last two axes of K trade places",
        )
    except ck.CheckFailed as err:
        cause = err.__cause__
        transposed = ck.line_of(fn, _LAYER_K_T.line) != ck.defined_at(fn)
        if not (
            isinstance(cause, ValueError) and transposed and "(2, 4, 6)" in err.case
        ):
            raise
        where = ck.line_of(fn, _LAYER_K_T.line)
        raise ck.CheckFailed(name, _LAYER_K_T, err.case, where) from cause
