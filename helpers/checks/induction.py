"""Checkers for lesson 11's exercises: the scores that find induction heads.

Each checker runs the learner's function on fresh random attention weights
(causal, rows summing to 1) and compares it with ``helpers.induction``. On a
mismatch it tries the usual mistakes, each written out below as a function,
and names the one that matches.
"""

import numpy as np

from helpers import induction
from helpers.checks import _engine as ck
from helpers.checks._engine import CheckFailed
from helpers.checks._refuse import refusing
from helpers.i18n import N_, _


def _causal_weights(rng, batch, num_heads, n):
    """Random causal attention weights (batch, num_heads, n, n), rows sum to 1."""
    scores = rng.normal(scale=2.0, size=(batch, num_heads, n, n))
    scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return weights / weights.sum(-1, keepdims=True)


def _cases(rng):
    """(weights, lengths) pairs: one and several heads, batch 1 and more."""
    cases = []
    for batch, num_heads, n, low, high in [
        (1, 1, 8, 3, 4),
        (4, 2, 32, 8, 16),
        (3, 3, 20, 2, 10),
    ]:
        lengths = rng.integers(low, high + 1, size=batch)
        cases.append((_causal_weights(rng, batch, num_heads, n), lengths))
    return cases


def _call(fn, args, name):
    """The learner's result as a float array, or a CheckFailed that says why not."""
    try:
        got = fn(*args)
    except NotImplementedError:
        raise CheckFailed(
            name,
            _(
                "is not implemented yet: replace the `raise NotImplementedError(...)` "
                "line with your code"
            ),
        ) from None
    except Exception as error:  # the learner's code raised: report it, do not crash
        if isinstance(getattr(error, "mistake", None), ck.Mistake):  # refused
            raise CheckFailed(
                "check_" + name.removeprefix("my_"),
                error.mistake,
                where=ck.raised_at(error) or ck.defined_at(fn),
            ) from None
        raise CheckFailed(
            name,
            _(
                "raised {kind}: {error}. Run it on a small example first; "
                "the hint above shows the indexing."
            ).format(kind=type(error).__name__, error=error),
        ) from None
    if got is None:
        raise CheckFailed(name, _("returned None: did you forget `return`?"))
    if isinstance(got, str | bytes):
        raise CheckFailed(
            name,
            _("returned the text {got!r}, not an array of numbers").format(got=got),
        )
    if hasattr(got, "detach"):  # a torch tensor, perhaps one that requires grad
        got = got.detach().cpu().numpy()
    try:
        got = np.asarray(got)
        if got.dtype.kind not in "biuf":
            raise TypeError(got.dtype)
        got = got.astype(np.float64)
    except Exception:  # ragged lists, objects, complex numbers, ...
        raise CheckFailed(
            name,
            _("returned {kind}, not an array of real numbers").format(
                kind=type(got).__name__
            ),
        ) from None
    return got


def _compare(got, expected, variants, name):
    """None if ``got`` is right, else the diagnosis of the closest mistake."""
    if got.ndim == 2 and got.shape[1:] == expected.shape:
        return _(
            "{name} returned shape {shape}; expected {expected}, one score "
            "per head. You kept an axis of size {size} (the "
            "batch): average over it too, as over the positions."
        ).format(name=name, shape=got.shape, expected=expected.shape, size=got.shape[0])
    if got.shape != expected.shape:
        return _(
            "{name} returned shape {shape}; expected {expected}, one score "
            "per head. Average over the batch and the positions, not "
            "over the heads."
        ).format(name=name, shape=got.shape, expected=expected.shape)
    if not np.isfinite(got).all():
        return _("{name} returned NaN or inf: {got}").format(name=name, got=got)
    if np.allclose(got, expected, rtol=1e-6, atol=1e-9):
        return None
    for wrong, message in variants:
        if wrong.shape == got.shape and np.allclose(got, wrong, rtol=1e-6, atol=1e-9):
            return message
    return ck.Mistake(
        symptom="{name} returned {got}, which is not the right "
        "score per head, nor any of the usual mistakes",
        why="each head's score is one mean over the (sequence, position) pairs the "
        "exercise names",
        fix="the right answer is {right} on this case",
        key=f"{name}: an unrecognised answer",
    ).format(name=name, got=np.round(got, 4), right=np.round(expected, 4))


def _prefix_variants(weights, lengths):
    """The usual mistakes in the prefix-matching score, with their diagnoses."""

    def picked(shift, first=0, last=0):
        parts = []
        for b, p in enumerate(lengths.tolist()):
            i = np.arange(p + first, 2 * p + last)
            parts.append(weights[b][:, i, i - p + shift])
        return parts

    def pooled(parts):
        return np.concatenate(parts, axis=-1).mean(-1)

    return [
        (
            pooled(picked(0)),
            ck.Mistake(
                symptom="you measured attention to position i - P, the earlier copy "
                "of the same token",
                why="an induction head looks one further: at the token that came "
                "next after the earlier copy, which it is about to predict",
                fix="read the weight on key i - P + 1",
                line=r"- *p|- *P",
            ),
        ),
        (
            np.mean([part.mean(-1) for part in picked(1)], axis=0),
            ck.Mistake(
                symptom="you averaged each sequence first, then the sequences",
                why="sequences of different lengths P give different numbers of "
                "positions: every (sequence, position) pair should count once",
                fix="pool the (sequence, position) pairs, then take one mean",
                line=r"mean",
            ),
        ),
        (
            pooled(picked(1, last=-1)),
            ck.Mistake(
                symptom="you left out the last position of the second copy, i = 2P - 1",
                why="the second copy runs over P <= i <= 2P - 1, both ends included",
                fix="np.arange(p, 2 * p)",
                line=r"arange|range",
            ),
        ),
        (
            pooled(picked(1, first=1)),
            ck.Mistake(
                symptom="you left out the first position of the second copy, i = P",
                why="the second copy starts at i = P, whose earlier copy is at 0",
                fix="start the range at p: np.arange(p, 2 * p)",
                line=r"arange|range",
            ),
        ),
    ]


def check_prefix_matching_score(fn, *, seed=0):
    """Check a learner's prefix_matching_score(weights, lengths) -> (num_heads,)."""
    rng = np.random.default_rng(seed)
    for weights, lengths in _cases(rng):
        expected = induction.prefix_matching_score(weights, lengths)
        got = _call(fn, (weights.copy(), lengths.copy()), "my_prefix_matching_score")
        problem = _compare(
            got,
            expected,
            _prefix_variants(weights, lengths),
            "my_prefix_matching_score",
        )
        if problem:
            raise CheckFailed(
                "check_prefix_matching_score",
                problem,
                f"weights {weights.shape}, lengths {lengths.tolist()}",
                ck.look_at(fn, problem),
            )
    print("✓ my_prefix_matching_score matches helpers.induction on 3 random cases")
    return True


def _previous_variants(weights):
    """The usual mistakes in the previous-token score, with their diagnoses."""
    n = weights.shape[-1]
    diagonal = np.diagonal(weights, axis1=-2, axis2=-1)  # (batch, H, n)
    below = np.diagonal(weights, offset=-1, axis1=-2, axis2=-1)  # (batch, H, n - 1)
    return [
        (
            diagonal.mean(axis=(0, 2)),
            ck.Mistake(
                symptom="you measured the diagonal, a_{i,i}: attention to the token "
                "itself",
                why="the previous token of query i is key i - 1, one below the "
                "diagonal",
                fix="np.diagonal(weights, offset=-1, axis1=-2, axis2=-1)",
                line=r"diagonal|diag",
            ),
        ),
        (
            np.zeros(weights.shape[1]),
            ck.Mistake(
                symptom="you read the entries above the diagonal (offset=+1): they "
                "are all 0",
                why="a causal head never attends to a later key",
                fix="use offset=-1, the entries below the diagonal",
                line=r"offset|diag",
            ),
        ),
        (
            below.sum(-1).mean(0) / n,
            ck.Mistake(
                symptom="you divided by n, but there are only n - 1 previous-token "
                "pairs per sequence",
                why="position 0 has no previous token (and index i - 1 = -1 wraps "
                "around to the last column, which a causal head never attends)",
                fix="average over the n - 1 entries of the offset=-1 diagonal",
                line=r"/|mean",
            ),
        ),
    ]


def check_previous_token_score(fn, *, seed=0):
    """Check a learner's previous_token_score(weights) -> (num_heads,).

    Steps: build weights of batch 1, one head, n = 4 by hand (np.eye(4, k=-1)
    with row 0 set to [1, 0, 0, 0] is a head that always looks one back), print
    the entries your function averages and the mean: it should be 1.0. While
    ``fn`` runs, ``induction.previous_token_score`` refuses to be called.
    """
    rng = np.random.default_rng(seed)
    reason = N_(
        "exercise 11.1 asks you to read the entries a[i, i - 1] from the weights "
        "yourself; the lesson's helper would pass without writing it"
    )
    fn = refusing(fn, induction, ("previous_token_score",), reason)
    for weights, _lengths in _cases(rng):
        expected = induction.previous_token_score(weights)
        got = _call(fn, (weights.copy(),), "my_previous_token_score")
        problem = _compare(
            got, expected, _previous_variants(weights), "my_previous_token_score"
        )
        if problem:
            raise CheckFailed(
                "check_previous_token_score",
                problem,
                f"weights {weights.shape}",
                ck.look_at(fn, problem),
            )
    print(
        "✓ check_previous_token_score: 3 cases passed; your previous-token score "
        "per head is right"
    )
    return True


def check_prediction(fn):
    """Call a learner's ``predict() -> bool`` and return its answer, checked."""
    name = "check_prediction"
    try:
        answer = fn()
    except NotImplementedError:
        raise CheckFailed(
            name,
            _(
                "your prediction is not implemented yet: replace the `raise "
                "NotImplementedError(...)` line with `return True` or `return False`"
            ),
        ) from None
    except Exception as error:
        kind = type(error).__name__
        raise CheckFailed(
            name,
            _("your function raised {kind}: {error}").format(kind=kind, error=error),
        ) from None
    if not isinstance(answer, bool | np.bool_):
        raise CheckFailed(
            name,
            _("return True or False (a bool); got {answer!r} ({kind})").format(
                answer=answer, kind=type(answer).__name__
            ),
        )
    return bool(answer)
