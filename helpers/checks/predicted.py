"""Checkers for predict-then-observe exercises: lessons 01 and 02.

The learner predicts; the checker computes the real answer itself, so the check
cell holds no expected value. A wrong prediction is named (which one, and where
to look), never corrected: the fix says how to find the answer, not what it is.
"""

import numpy as np

from helpers import attention_np as anp
from helpers._validate import fmt
from helpers.checks import _engine as ck
from helpers.checks._where import defined_at
from helpers.i18n import N_, _

__all__ = ["check_key_winners", "check_predicted_shapes"]

# --------------------------------------------------------------------------
# check_key_winners (lesson 01)
# --------------------------------------------------------------------------

# (label, the key the query is built from, how the query is built from K)
_QUERIES = (
    ("(a) q = 2 k_2", 2, lambda K: 2 * K[2]),
    ("(b) q = 2 k_0", 0, lambda K: 2 * K[0]),
    ("(c) q = -2 k_2", 2, lambda K: -2 * K[2]),
)
_TAKEAWAY = N_(
    "a key that matches the query's direction exactly need not win: the score "
    "<q, k_s> grows with the key's length too, and a negated query picks the key "
    "that points most against the original one"
)

_OWN_KEY = ck.Mistake(
    symptom="{label}: you said k_{said}, the key the query is built from, but that "
    "key does not get the largest weight",
    why="the score is a dot product, not a cosine: <q, k_s> = |q| |k_s| cos(angle), "
    "so a longer key pointing partly the same way can score higher",
    fix="compute <k, k_s> for every key s (one matrix-vector product, K @ query) "
    "and take the largest",
)
_NEGATED = ck.Mistake(
    symptom="{label}: you said k_{said}; with the query negated, every score "
    "changes sign",
    why="softmax gives the largest weight to the largest score, so after the sign "
    "flip the winner is the key whose dot product with k_2 was the most negative",
    fix="compute K @ K[2] and look for its smallest entry",
)
_WRONG_WINNER = ck.Mistake(
    symptom="{label}: k_{said} does not get the largest weight",
    why="the largest weight goes to the largest score <q, k_s> / sqrt(d_k)",
    fix="compute K @ query for that query and take the index of the largest entry",
)


_FROM_ONE = ck.Mistake(
    symptom="each of your answers is one more than the winning key's number: did "
    "you count the keys from 1?",
    why="the keys are the rows of K, numbered as Python indexes them: the first "
    "row is k_0, so K[s] is k_s",
    fix="number the keys from 0: the first row of K is k_0",
)


def _winner(query, K):
    _, weights, _ = anp.attention_one_query(query, K, np.zeros((K.shape[0], 1)))
    return int(np.argmax(weights))


def _as_key_numbers(predictions, m):
    """The predictions as ints, or a message saying what is wrong with them."""
    count = len(_QUERIES)
    if not isinstance(predictions, (tuple, list)) or len(predictions) != count:
        return _(
            "my_predictions() must return {count} key numbers, one per "
            "query, e.g. (0, 3, 1); got {predictions!r}"
        ).format(count=count, predictions=predictions)
    numbers = []
    for (label, _query, _keys), said in zip(_QUERIES, predictions, strict=True):
        if isinstance(said, bool) or not isinstance(said, (int, np.integer)):
            return _(
                "{label}: answer with a key number 0 .. {last}; got {said!r}"
            ).format(label=label, last=m - 1, said=said)
        if not 0 <= said < m:
            return _(
                "{label}: there are m = {m} keys, numbered from 0: k_0 .. "
                "k_{last}; got {said}"
            ).format(label=label, m=m, last=m - 1, said=said)
        numbers.append(int(said))
    return numbers


_LESSON_01_K = (
    (1.0, 0.0, 0.0, 0.0),
    (0.0, 1.0, 1.0, 0.0),
    (2.0, 0.0, 0.0, 1.0),
    (0.0, 0.0, 1.0, -1.0),
    (0.0, -1.0, 0.0, 0.0),
)


def check_key_winners(fn, K=None):
    """Check ``fn() -> (a, b, c)``: which key of ``K`` wins for each query.

    The queries are 2 k_2, 2 k_0 and -2 k_2; the winner is the largest weight of
    ``anp.attention_one_query``, computed here. ``K`` defaults to lesson 01's keys.
    """
    name = "check_key_winners"
    ck.require_function(name, fn)
    K = np.asarray(_LESSON_01_K if K is None else K, dtype=np.float64)  # (m, d_k)
    case = ck.make_case(())
    numbers = _as_key_numbers(ck.call(name, fn, case, "my_predictions()", ""), len(K))
    if isinstance(numbers, str):
        raise ck.CheckFailed(name, numbers, "", defined_at(fn))
    winners = [_winner(build(K), K) for _label, _key, build in _QUERIES]
    if numbers != winners and all(
        s == w + 1 for s, w in zip(numbers, winners, strict=True)
    ):
        raise ck.CheckFailed(name, _FROM_ONE, "", defined_at(fn))
    for (label, own, build), said in zip(_QUERIES, numbers, strict=True):
        if said == _winner(build(K), K):
            continue
        if label.startswith("(c)"):
            mistake = _NEGATED
        else:
            mistake = _OWN_KEY if said == own else _WRONG_WINNER
        facts = {"label": label, "said": said}
        raise ck.CheckFailed(name, mistake.filled(facts), "", defined_at(fn))
    print(
        _("✓ {name}: all {count} predictions right. Takeaway: {takeaway}.").format(
            name=name, count=len(_QUERIES), takeaway=_(_TAKEAWAY)
        )
    )
    return True


# --------------------------------------------------------------------------
# check_predicted_shapes (lesson 02)
# --------------------------------------------------------------------------

_NAMES = ("scores", "weights", "output")
_ROWS_COLUMNS = "one row per query, one column per key"
_SHAPE_MISTAKES = {
    ("scores", "(n, d_k)"): ck.Mistake(
        symptom="your scores have the shape of Q, (n, d_k)",
        why="each score compares one query with one key, so d_k is summed away by "
        "the dot product",
        fix=_ROWS_COLUMNS,
    ),
    ("scores", "(m, n)"): ck.Mistake(
        symptom="your scores are transposed: one row per key, one column per query",
        why="Q K^T multiplies (n, d_k) by (d_k, m)",
        fix=_ROWS_COLUMNS,
    ),
    ("weights", "(m, n)"): ck.Mistake(
        symptom="your weights are transposed: one row per key, one column per query",
        why="the weights are the softmax of the scores along each row, so they keep "
        "the scores' shape",
        fix="the same shape as the scores",
    ),
    ("output", "(n, d_k)"): ck.Mistake(
        symptom="your output has the width of a key, d_k",
        why="the output is a weighted sum of values, so it has their width; d_k is "
        "gone after the scores",
        fix="one row per query, the width of a value",
    ),
    ("output", "(m, d_v)"): ck.Mistake(
        symptom="your output has one row per key, the shape of V",
        why="weights @ V is (n, m) @ (m, d_v): the keys are summed over, one row per "
        "query is left",
        fix="one row per query, the width of a value",
    ),
}


def _actual_shapes(rng, n, m, d_k, d_v):
    Q = rng.normal(size=(n, d_k))  # (n, d_k)
    K = rng.normal(size=(m, d_k))  # (m, d_k)
    V = rng.normal(size=(m, d_v))  # (m, d_v)
    output, weights = anp.scaled_dot_product_attention(Q, K, V)
    return {"scores": (Q @ K.T).shape, "weights": weights.shape, "output": output.shape}


def _in_letters(shape, sizes):
    """``(3, 7)`` as ``(n, m)`` when each size names one axis, else None."""
    names = []
    for size in shape:
        match = [k for k, v in sizes.items() if v == size]
        if len(match) != 1:
            return None
        names.append(match[0])
    return "(" + ", ".join(names) + ")"


def _shape_problem(predicted, actual, sizes):
    if not isinstance(predicted, dict) or set(predicted) != set(_NAMES):
        return _("return a dict with the keys {names}; got {predicted!r}").format(
            names=sorted(_NAMES), predicted=predicted
        )
    for key in _NAMES:
        value = predicted[key]
        try:
            shape = tuple(int(x) for x in value)
        except (TypeError, ValueError):
            return _("{key}: give a shape as a tuple of sizes; got {value!r}").format(
                key=key, value=value
            )
        if shape == actual[key]:
            continue
        mistake = _SHAPE_MISTAKES.get((key, _in_letters(shape, sizes)))
        if mistake is not None:
            return mistake
        return ck.Mistake(
            symptom="your {key} shape {shape} is not the shape attention gives",
            why="scores and weights pair every query with every key; the output has "
            "one row per query",
            fix="read the shapes off the glossary of section 10",
            key=f"your {key} shape {fmt(shape)} is not the shape attention gives",
        ).format(key=key, shape=fmt(shape))
    return None


def check_predicted_shapes(fn, *, seed=0):
    """Check ``fn(n, m, d_k, d_v) -> {"scores", "weights", "output": shape}``.

    The shapes are those ``anp.scaled_dot_product_attention`` gives on random
    inputs of the sizes, all different, so every axis is told apart.
    """
    name = "check_predicted_shapes"
    ck.require_function(name, fn)
    rng = np.random.default_rng(seed)
    all_sizes = [(3, 7, 5, 2), (6, 4, 2, 9), (1, 12, 3, 8)]
    for number, (n, m, d_k, d_v) in enumerate(all_sizes, 1):
        sizes = {"n": n, "m": m, "d_k": d_k, "d_v": d_v}
        case = ck.make_case(("n", "m", "d_k", "d_v"), n, m, d_k, d_v)
        predicted = ck.call(name, fn, case, "predict_shapes(n, m, d_k, d_v)", "")
        actual = _actual_shapes(rng, n, m, d_k, d_v)
        message = _shape_problem(predicted, actual, sizes)
        if message is not None:
            where = _("case {number} of {count}: {label}").format(
                number=number, count=len(all_sizes), label=case.label
            )
            raise ck.CheckFailed(name, message, where, defined_at(fn))
    print(
        _("✓ {name}: {count} sets of sizes predicted right").format(
            name=name, count=len(all_sizes)
        )
    )
    return True
