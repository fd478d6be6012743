"""Checkers for lesson 11's build and predict exercises: finding induction heads.

``check_induction_scores`` checks the ★★★ build: the induction score of every
head of every layer, from raw attention weights (batch, layers, heads, n, n) on
repeated sequences, against a reference written here. While the learner's
function runs, ``helpers.induction.prefix_matching_score`` (the one-layer
helper the lesson uses) refuses to be called, so the exercise cannot be passed
by calling it layer by layer. ``check_fixed_repeat_prediction`` trains the
model of exercise 11.3 and compares the learner's prediction with what it
grows; it imports torch (through ``helpers.induction``), so ``helpers.checks``
loads this module on first use.
"""

import dataclasses

import numpy as np

from helpers.checks import _engine as ck
from helpers.checks._refuse import refused
from helpers.i18n import N_, _

__all__ = ["check_induction_scores", "check_fixed_repeat_prediction"]

# --------------------------------------------------------------------------
# check_induction_scores
# --------------------------------------------------------------------------

_DUPLICATE = ck.Mistake(
    symptom="your scores read attention to position i - P, the earlier copy of "
    "the same token: that is the duplicate-token score",
    why="an induction head attends to the token that came right after the earlier "
    "copy, the one it will copy as its prediction: one position further",
    fix="the key of query i is i - P + 1",
    line=r"-\s*p\b(?!\s*\+)|-\s*P\b(?!\s*\+)|\[.*\bi\s*,\s*i\s*-",
)
_TOO_FAR = ck.Mistake(
    symptom="your scores read attention to position i - P + 2, one position past "
    "the token an induction head attends to",
    why="the earlier copy of token i sits at i - P; what followed it, and so what "
    "comes next now, sits at i - P + 1",
    fix="the key of query i is i - P + 1",
    line=r"\+\s*2\b|-\s*[pP]\s*\+",
)
_PREVIOUS = ck.Mistake(
    symptom="your scores read attention to position i - 1: that is the "
    "previous-token score, measured on the second copy",
    why="the induction head looks back to the earlier copy, P positions back, and "
    "one forward",
    fix="the key of query i is i - P + 1",
    line=r"i\s*-\s*1\b|-\s*1\s*\]",
)
_BOTH_COPIES = ck.Mistake(
    symptom="your average includes queries of the first copy (i < P), where there "
    "is no earlier occurrence to look back to",
    why="only a token of the second copy has an earlier copy; for i < P the key "
    "i - P + 1 is not the next token of anything (and a negative index wraps to "
    "the end of the row)",
    fix="the queries are i = P, ..., 2P - 1 of each sequence",
    line=r"arange|range",
)
_LAST_LEFT_OUT = ck.Mistake(
    symptom="your average leaves out the last query of the second copy, i = 2P - 1",
    why="the second copy runs from position P to 2P - 1 inclusive: P queries",
    fix="np.arange(P, 2 * P)",
    line=r"arange|range",
)
_FIRST_LEFT_OUT = ck.Mistake(
    symptom="your average leaves out the first query of the second copy, i = P",
    why="the second copy runs from position P to 2P - 1 inclusive: P queries",
    fix="np.arange(P, 2 * P)",
    line=r"arange|range",
)
_PER_SEQUENCE = ck.Mistake(
    symptom="you averaged each sequence first and then the sequences: here the "
    "sequences have different repeat lengths {lengths}",
    why="every (sequence, query) pair should count once, so a longer repeat counts "
    "more; a mean of means weights a short repeat like a long one",
    fix="collect the picked weights of every sequence together, then take one mean",
    line=r"mean",
)
_SWAPPED = ck.Mistake(
    symptom="your scores read weights[..., i - P + 1, i] (key, then query): above "
    "the diagonal, where a causal head puts no weight",
    why="the second-to-last axis is the query, the last the key: a row of a head's "
    "weights is one query's attention over the keys",
    fix="weights[b, layer, head, i, i - P + 1]",
    line=r"\[[^\]]*,\s*i\s*\]|\bj\s*,\s*i\b|\+\s*1\s*,\s*\S",
)


def _scores(weights, lengths, shift=1, first=0, last=0, swap=False, pooled=True):
    """(layers, heads) induction scores, the mistakes switched on by the keywords."""
    picked = []
    for b, p in enumerate(np.asarray(lengths).tolist()):
        i = np.arange(p + first, 2 * p + last)  # queries of the second copy
        j = i - p + shift  # their keys
        w = weights[b]  # (layers, heads, n, n)
        picked.append(w[:, :, j, i] if swap else w[:, :, i, j])  # (L, H, count)
    if pooled:
        return np.concatenate(picked, axis=-1).mean(axis=-1)
    return np.mean([part.mean(axis=-1) for part in picked], axis=0)


def _previous_in_copy(weights, lengths):
    picked = []
    for b, p in enumerate(np.asarray(lengths).tolist()):
        i = np.arange(p, 2 * p)
        picked.append(weights[b][:, :, i, i - 1])
    return np.concatenate(picked, axis=-1).mean(axis=-1)


def _causal_weights(rng, shape):
    """Random causal attention weights of ``shape`` (..., n, n), rows sum to 1."""
    n = shape[-1]
    scores = rng.normal(scale=2.0, size=shape)
    scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return weights / weights.sum(-1, keepdims=True)


def _induction_cases(rng):
    cases = []
    for batch, layers, heads, n, low, high in [
        (3, 2, 4, 24, 5, 11),
        (1, 1, 3, 10, 4, 4),
        (5, 3, 2, 32, 8, 16),
    ]:
        lengths = rng.choice(np.arange(low, high + 1), size=batch, replace=low == high)
        weights = _causal_weights(rng, (batch, layers, heads, n, n))
        sizes = {"batch": batch, "layers": layers, "num_heads": heads, "n": n}
        cases.append(
            ck.make_case(
                ("weights", "lengths"),
                weights,
                lengths,
                sizes=sizes,
                facts={"lengths": lengths.tolist()},
                note=_("repeat lengths P = {lengths}").format(lengths=lengths.tolist()),
            )
        )
    return cases


def check_induction_scores(fn, *, seed=0):
    """Check ``fn(weights, lengths) -> scores (layers, num_heads)``.

    ``weights`` (batch, layers, num_heads, n, n) are causal attention weights of
    every layer on sequences whose first P tokens repeat once (P = lengths[b]);
    the score of a head is the mean over every (sequence, query of the second
    copy) pair of the weight from query i to key i - P + 1.

    Steps: take one sequence with P = 4 and n = 8, write out the (query, key)
    pairs you read, and check each key against the token layout of the repeat;
    then print the shape of what you average before the mean: (layers,
    num_heads, count), one count per (sequence, query) pair.
    """
    from helpers import induction

    reason = N_(
        "exercise 11.2 builds the score of every layer from the weights; the "
        "lesson's one-layer helper would do it layer by layer for you"
    )
    variants = [
        (_SWAPPED, lambda w, lengths: _scores(w, lengths, swap=True)),
        (_DUPLICATE, lambda w, lengths: _scores(w, lengths, shift=0)),
        (_TOO_FAR, lambda w, lengths: _scores(w, lengths, shift=2)),
        (_PREVIOUS, _previous_in_copy),
        (_BOTH_COPIES, _both_copies_wrapped),
        (_BOTH_COPIES, lambda w, lengths: _scores(w, lengths, first=-1)),
        (_LAST_LEFT_OUT, lambda w, lengths: _scores(w, lengths, last=-1)),
        (_FIRST_LEFT_OUT, lambda w, lengths: _scores(w, lengths, first=1)),
        (_PER_SEQUENCE, lambda w, lengths: _scores(w, lengths, pooled=False)),
    ]
    output = ck.Out(
        "scores",
        "(layers, num_heads)",
        "One score per head of every layer: average over the sequences and the "
        "queries, keep the layer and head axes.",
    )
    scope = getattr(fn, "__globals__", None)
    with refused(induction, ("prefix_matching_score",), reason, scope=scope):
        return ck.run(
            "check_induction_scores",
            fn,
            _induction_cases(np.random.default_rng(seed)),
            _scores,
            (output,),
            variants,
            signature="induction_scores(weights, lengths)",
        )


def _both_copies_wrapped(weights, lengths):
    """Every query of both copies, i = 0 .. 2P - 1; negative keys wrap around."""
    picked = []
    for b, p in enumerate(np.asarray(lengths).tolist()):
        i = np.arange(0, 2 * p)
        picked.append(weights[b][:, :, i, i - p + 1])  # negative keys wrap
    return np.concatenate(picked, axis=-1).mean(axis=-1)


# --------------------------------------------------------------------------
# check_fixed_repeat_prediction
# --------------------------------------------------------------------------

_RUNS = {}


def fixed_repeat_run(config):
    """Exercise 11.3's training run (repeats of length 16, 400 steps), cached.

    ``config`` is copied, never changed; the run is keyed by its items, so the
    check and the cells after it train once.
    """
    from helpers import induction

    config = {**dict(config), "min_repeat": 16, "max_repeat": 16, "steps": 400}
    key = repr(sorted(config.items()))
    if key not in _RUNS:
        _RUNS[key] = induction.train(config, progress=None)
    return _RUNS[key]


_WRONG_PREDICTION = ck.Mistake(
    symptom="you predicted that layer 1 would grow a previous-token head; "
    "after 400 steps its heads' previous-token scores are {scores} (a head "
    "counts above 0.3)",
    why="with the repeat always at position 16, the token to copy at position i "
    "always sits at i - 15: a head can find it from the position embeddings "
    "alone, so nothing rewards layer 1 for writing the previous token",
    fix="return False",
    key="you predicted that layer 1 {predicted} grow a previous-token head; "
    "after 400 steps its heads' previous-token scores are {scores} (a head "
    "counts above 0.3)",
)
_WRONG_PREDICTION_NOT = dataclasses.replace(
    _WRONG_PREDICTION,
    symptom="you predicted that layer 1 would not grow a previous-token head; "
    "after 400 steps its heads' previous-token scores are {scores} (a head "
    "counts above 0.3)",
)


def check_fixed_repeat_prediction(fn, config):
    """Check a prediction ``fn() -> bool``: does layer 1 grow a previous-token head?

    The checker trains exercise 11.3's run (``config`` with every repeat of
    length 16, 400 steps) and compares the prediction with what the model grew;
    the scores are shown only after the prediction is in.

    Steps: list what each head can read (token and position embeddings, and in
    layer 2 what layer 1 wrote), then ask, for each way of finding the token to
    copy, whether it still works when every repeat has the same length, and
    whether it needs a previous-token head.
    """
    name = "check_fixed_repeat_prediction"
    ck.require_function(name, fn)
    case = ck.make_case((), note="my_fixed_repeat_prediction()")
    answer = ck.call(name, fn, case, "my_fixed_repeat_prediction()", "")
    if not isinstance(answer, (bool, np.bool_)):
        raise ck.CheckFailed(
            name,
            _("return True or False (a bool); got {answer!r} ({kind})").format(
                answer=answer, kind=type(answer).__name__
            ),
            where=ck.defined_at(fn),
        )
    run = fixed_repeat_run(config)
    previous = run["previous_token"][-1, 0]  # (num_heads,) layer-1 heads
    grown = bool(previous.max() > 0.3)
    if bool(answer) != grown:
        mistake = _WRONG_PREDICTION if answer else _WRONG_PREDICTION_NOT
        raise ck.CheckFailed(
            name,
            mistake.filled({"scores": np.round(previous, 2).tolist()}),
            _("repeats of length 16, 400 steps"),
            ck.defined_at(fn),
        )
    print(
        _(
            "✓ {name}: right. Layer 1's previous-token scores after 400 steps: {scores}"
        ).format(name=name, scores=np.round(previous, 2).tolist())
    )
    return True
