"""Checkers for lesson 06's predictions: shapes, and seed 003's input shrunk.

The predictions are compared with real arrays and with seed 003's example run
here, so no expected value sits in a check cell; what was measured is printed
only once the answer is right. (``check_self_attention`` lives in
``helpers.checks.self_attention``, and ``check_self_attention_layer``, the
build exercise, in ``helpers.checks.layer``, which takes ``X_SEED`` from here.)
See ``helpers.checks``.
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

__all__ = ["check_predict_shapes", "check_shrink_prediction"]

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
