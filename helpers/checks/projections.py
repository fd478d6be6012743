"""Checkers for lesson 06's exercises: predicted shapes, seed 003's input
shrunk, and a whole self-attention layer built from a blank cell.

The predictions are compared with real arrays and with seed 003's example run
here, so no expected value sits in a check cell; what was measured is printed
only once the answer is right. (``check_self_attention`` lives in
``helpers.checks.self_attention``.) See ``helpers.checks``.
"""

import math

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.i18n import N_, _

_SHRINK_PASSED = N_(
    "✓ {name}: 3 values of c passed. X / 10 divides the scores by 100: largest "
    "weight {largest:.8f} for X, {small:.2f} for X / 10, and {winner}. The pattern "
    "depends on the size of X, not only on its direction: one reason transformers "
    "normalise X before attention"
)

__all__ = [
    "check_predict_shapes",
    "check_shrink_prediction",
    "check_self_attention_layer",
]

# --------------------------------------------------------------------------
# check_predict_shapes (lesson 06, exercise 6.1)
# --------------------------------------------------------------------------

_NAMES = ("Q", "K", "V", "scores", "output")

_SHAPE_MISTAKES = {
    ("scores", "d_k"): ck.Mistake(
        symptom="your `scores` has one column per feature of a key; it needs "
        "one column per key",
        why="score[t, s] = q_t . k_s: the dot product uses up the d_k axis",
        fix="scores: (n, m), with m = n in self-attention",
    ),
    ("output", "d_k"): ck.Mistake(
        symptom="your `output` rows have the size of a query or key, d_k",
        why="each output row is a weighted sum of value vectors, so it has their size",
        fix="output: (n, d_v)",
    ),
    ("V", "d_k"): ck.Mistake(
        symptom="your `V` has d_k columns; W_V is (d_model, d_v)",
        why="only queries and keys must share a size (their dot product); values "
        "may have their own size d_v",
        fix="V: (m, d_v) = (n, d_v)",
    ),
    ("transposed", ""): ck.Mistake(
        symptom="your `{name}` has its axes the other way round",
        why="every tensor here has one row per token (or per query)",
        fix="rows first: (n, ...)",
    ),
    ("unprojected", ""): ck.Mistake(
        symptom="your `{name}` still has d_model columns, the size of a token",
        why="Q = X @ W_Q: the projection maps each token from d_model to d_k "
        "(or d_v for V)",
        fix="Q and K: (n, d_k); V: (n, d_v)",
    ),
}


def _true_shapes(n, d_model, d_k, d_v, rng):
    X = rng.normal(size=(n, d_model))  # (n, d_model)
    Q, K = X @ rng.normal(size=(d_model, d_k)), X @ rng.normal(size=(d_model, d_k))
    V = X @ rng.normal(size=(d_model, d_v))  # (m, d_v)
    output, weights = anp.scaled_dot_product_attention(Q, K, V)
    arrays = {"Q": Q, "K": K, "V": V, "scores": weights, "output": output}
    return {k: a.shape for k, a in arrays.items()}


def _shape_mistake(name, got, want, sizes):
    n, d_model, d_k, d_v = sizes
    if got == want[::-1] and got != want:
        return _SHAPE_MISTAKES["transposed", ""].filled({"name": name})
    if name in ("Q", "K", "V") and got == (n, d_model) and d_model not in (d_k, d_v):
        return _SHAPE_MISTAKES["unprojected", ""].filled({"name": name})
    if got[-1:] == (d_k,) and d_k != want[-1]:
        return _SHAPE_MISTAKES.get((name, "d_k"))
    return None


def check_predict_shapes(fn, *, seed=5):
    """Check ``fn(n, d_model, d_k, d_v) -> dict`` of the shapes of Q, K, V, scores,
    output for self-attention of one sequence X (n, d_model); the checker builds
    the real arrays for four sets of sizes and compares.
    """
    name = "check_predict_shapes"
    ck.require_function(name, fn)
    rng = np.random.default_rng(seed)
    for sizes in ((5, 8, 4, 6), (7, 16, 8, 12), (3, 6, 2, 5), (1, 4, 3, 2)):
        case = ck.make_case(("n", "d_model", "d_k", "d_v"), *sizes)
        result = ck.call(name, fn, case, "predict_shapes(n, d_model, d_k, d_v)", "")
        actual = _true_shapes(*sizes, rng)
        message = None
        if not isinstance(result, dict):
            message = _("return a dict with the keys {keys}; got a {kind}").format(
                keys=list(_NAMES), kind=type(result).__name__
            )
        elif missing := [k for k in _NAMES if k not in result]:
            message = _(
                "your dict has no key {missing}; it needs all of {keys}"
            ).format(missing=missing, keys=list(_NAMES))
        else:
            for key in _NAMES:
                if isinstance(result[key], list):
                    message = _(
                        "your `{key}` is a list, {value}; a shape is a tuple, as "
                        "`.shape` gives it, so that it compares equal to an array's "
                        "shape"
                    ).format(key=key, value=repr(result[key]))
                    break
                try:
                    got = tuple(int(x) for x in result[key])
                except (TypeError, ValueError):
                    message = _("`{key}` must be a tuple of ints, got {value}").format(
                        key=key, value=repr(result[key])
                    )
                    break
                if got != actual[key]:
                    message = _shape_mistake(key, got, actual[key], sizes) or _(
                        "your `{key}` shape {got} is wrong for these sizes: "
                        "count one axis per token and one per feature"
                    ).format(key=key, got=got)
                    break
        if message is not None:
            raise ck.CheckFailed(
                name,
                message,
                _("sizes {sizes}").format(sizes=case.label),
                ck.defined_at(fn),
            )
    print(_("✓ {name}: 4 sets of sizes passed").format(name=name))
    return True


# --------------------------------------------------------------------------
# check_shrink_prediction (lesson 06, exercise 6.3)
# --------------------------------------------------------------------------

X_SEED = np.array([[1, 2, 3], [4, 5, 6]])  # seed 003's input, (n, d_model)
W_SEED = np.array([[1, 0], [0, 1], [0, 0]])  # its W_Q = W_K = W_V, (d_model, d_k)

_SHRINK_LINEAR = ck.Mistake(
    symptom="at c = {c:g} your factor is off: X / {c:g} changes the scores by "
    "more than a factor c",
    why="a score is q . k, and both q = x W_Q and k = x W_K carry a factor 1/c",
    fix="the factor is c ** 2",
    line=r"return",
)
_SHRINK_SQRT = ck.Mistake(
    symptom="at c = {c:g} your factor is off: you took the square root somewhere, "
    "but nothing divides X's contribution by a square root",
    why="the sqrt(d_k) scale does not change with X; q and k each carry 1/c",
    fix="the factor is c ** 2",
    line=r"sqrt|\*\*",
)
_SHRINK_INVERSE = ck.Mistake(
    symptom="at c = {c:g} you gave the number the scores are multiplied by; the "
    "factor asked for is the one they are divided by",
    why="X / c makes every score smaller when c > 1: divided by a factor above 1, "
    "which is the same as multiplied by its inverse",
    fix="the factor is c ** 2 (the scores become scores / c ** 2)",
    line=r"return",
)
_SHRINK_DIRECTION = ck.Mistake(
    symptom="your word for the weights at c = {c:g} is the wrong way round: "
    "measure how the spread of the scores changes",
    why="smaller scores mean smaller gaps between them, so the weights, which go "
    "as e^gap, move towards uniform; larger scores sharpen them",
    fix='"flatter" when c > 1, "sharper" when c < 1',
    line=r"flatter|sharper",
)


def _seed_weights(X):
    Q = K = V = X @ W_SEED  # (n, d_k)
    return anp.scaled_dot_product_attention(Q, K, V)[1]  # (n, m)


def _entropy(weights):
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(weights > 0, weights * np.log(weights), 0.0)
    return float(-terms.sum(axis=-1).mean())


def check_shrink_prediction(fn):
    """Check ``fn(c) -> (factor, word)`` on seed 003's single head with X / c.

    ``factor``: the number every score is divided by; ``word``: ``"flatter"``
    (closer to uniform) or ``"sharper"`` (closer to one-hot) for the weights
    compared with X's. Measured here for c = 10, 3 and 0.5.
    """
    name = "check_shrink_prediction"
    ck.require_function(name, fn)
    Q = X_SEED @ W_SEED  # (n, d_k)
    scores = Q @ Q.T / math.sqrt(2)  # (n, m)
    base = _entropy(_seed_weights(X_SEED))
    for c in (10, 3, 0.5):
        case = ck.make_case(("c",), c, facts={"c": c})
        result = ck.call(name, fn, case, "shrink_prediction(c)", "")
        Qc = (X_SEED / c) @ W_SEED  # (n, d_k)
        factor = float((scores / (Qc @ Qc.T / math.sqrt(2))).flat[0])
        word = "flatter" if _entropy(_seed_weights(X_SEED / c)) > base else "sharper"
        message = None
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            message = 'return two things: (factor, "flatter" or "sharper")'
        elif not isinstance(result[0], (int, float, np.number)):
            message = f"the factor must be a number, got {result[0]!r}"
        elif not math.isclose(float(result[0]), factor, rel_tol=1e-9):
            got = float(result[0])
            message = (
                _SHRINK_LINEAR.filled(case.facts)
                if math.isclose(got, c)
                else _SHRINK_SQRT.filled(case.facts)
                if math.isclose(got, math.sqrt(c)) or math.isclose(got, c**0.25)
                else _SHRINK_INVERSE.filled(case.facts)
                if math.isclose(got * factor, 1.0, rel_tol=1e-9)
                else f"at c = {c:g} your factor {got:.4g} is not what the scores do"
            )
        elif result[1] not in ("flatter", "sharper"):
            message = (
                f'the second value must be "flatter" or "sharper", not {result[1]!r}'
            )
        elif result[1] != word:
            message = _SHRINK_DIRECTION.filled(case.facts)
        if message is not None:
            raise ck.CheckFailed(name, message, case.label, ck.look_at(fn, message))
    small = _seed_weights(X_SEED / 10)  # (n, m)
    same = (small.argmax(axis=-1) == 1).all()
    winner = (
        _("token 1 still wins both rows, just") if same else _("the winners change")
    )
    largest = _seed_weights(X_SEED).max()
    print(
        _(_SHRINK_PASSED).format(
            name=name, largest=largest, small=small.max(), winner=winner
        )
    )
    return True


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
