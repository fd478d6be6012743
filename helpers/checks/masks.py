"""Checkers for the mask exercises of lesson 05.

Each ``check_*`` runs the learner's function, compares it with
``helpers.attention_np`` and names the likely mistake; see ``helpers.checks``.
"""

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.checks._refuse import refusing
from helpers.i18n import _

__all__ = ["check_causal_mask", "check_zero_weights"]

# --------------------------------------------------------------------------
# check_causal_mask (lesson 05, exercise 1)
# --------------------------------------------------------------------------

_CAUSAL_FLIPPED = ck.Mistake(
    symptom="your mask polarity is flipped: yours is True on the blocked (future) keys",
    why="in this course True means 'may attend': query i sees key j exactly when "
    "j <= i + (m - n)",
    fix="negate it with ~",
    line=r"tril|triu|<|>",
)
_CAUSAL_TRIU = ck.Mistake(
    symptom="you kept the upper triangle (np.triu): your queries see the future keys",
    why="a query may attend to the keys at or before its own position: the lower "
    "triangle, diagonal included",
    fix="np.tril instead of np.triu",
    line=r"triu",
)
_CAUSAL_UPPER_LEFT = ck.Mistake(
    symptom="with n={n} queries and m={m} keys your mask is aligned upper-left, but "
    "it must be aligned lower-right: your last query does not see the last key",
    why="the n new queries follow m - n earlier keys (as with a KV cache), so the "
    "last query sits at the last position and sees every key",
    fix="np.tril(..., k=m - n), here k={k}",
    line=r"tril|<=|>=",
)
_CAUSAL_K_SIGN = ck.Mistake(
    symptom="you shifted the diagonal the wrong way (k = n - m)",
    why="query i sees key j when j <= i + (m - n): with more keys than queries "
    "the diagonal moves right",
    fix="k = m - n = {k}, not n - m",
    line=r"\bk\s*=|n\s*-\s*m",
)
_CAUSAL_NO_DIAGONAL = ck.Mistake(
    symptom="your mask leaves out the diagonal: a query does not see its own position",
    why="a query may attend to its own position too",
    fix="query i sees key j when j <= i + (m - n), not j < i + (m - n)",
    line=r"<|k\s*=",
)
_CAUSAL_SQUARE = ck.Mistake(
    symptom="your mask is (n, n) = ({n}, {n}) but it needs one column per key",
    why="the mask says, for each of the n queries, which of the m keys it sees",
    fix="shape (n, m) = ({n}, {m})",
    line=r"ones|zeros|arange",
)


def _causal_cases():
    cases = [
        ck.make_case(
            ("n", "m"),
            n,
            m,
            sizes={"n": n, "m": m} if n != m else {},  # n == m names no axis
            facts={"n": n, "m": m, "k": m - n},
        )
        for n, m in [(4, 4), (3, 5), (1, 4), (2, 6), (5, 3)]
    ]
    # m left out: the default m=None means m = n
    cases.append(
        ck.make_case(("n",), 3, facts={"n": 3, "m": 3, "k": 0}, note="m left out")
    )
    return cases


def check_causal_mask(fn):
    """Check ``fn(n, m) -> mask``, boolean (n, m), True = may attend, lower-right.

    Cases: n == m, n < m (queries after cached keys), one query, and n > m.
    """

    def ones(n, m):
        return np.ones((n, m), dtype=bool)

    variants = [
        (_CAUSAL_FLIPPED, lambda n, m: ~anp.causal_mask(n, m)),
        (_CAUSAL_TRIU, lambda n, m: np.triu(ones(n, m))),
        (_CAUSAL_TRIU, lambda n, m: np.triu(ones(n, m), k=m - n)),
        (_CAUSAL_UPPER_LEFT, lambda n, m: np.tril(ones(n, m))),
        (_CAUSAL_K_SIGN, lambda n, m: np.tril(ones(n, m), k=n - m)),
        (_CAUSAL_SQUARE, lambda n, m: np.tril(ones(n, n))),
        (_CAUSAL_NO_DIAGONAL, lambda n, m: np.tril(ones(n, m), k=m - n - 1)),
    ]
    learner = refusing(
        fn,
        anp,
        ("causal_mask",),
        _("the exercise is to build the lower-right mask yourself"),
    )
    return ck.run(
        "check_causal_mask",
        learner,
        _causal_cases(),
        anp.causal_mask,
        (ck.Out("mask", "(n, m)", "One row per query, one column per key.", True),),
        variants,
        signature="causal_mask(n, m=None)",
    )


# --------------------------------------------------------------------------
# check_zero_weights (lesson 05, exercise 3): predict where the weights are 0
# --------------------------------------------------------------------------

_ZERO_FULLY_MASKED = ck.Mistake(
    symptom="sequence {b} has length 0, so its queries may attend to no key, and a "
    "fully masked row gets all-zero weights: your prediction misses some of them",
    why="with no allowed key there is nothing to share the weight: not uniform, "
    "not NaN, but zeros, as torch's SDPA returns",
    fix="mark all of sequence {b}'s (query, key) pairs True",
)
_ZERO_FLIPPED = ck.Mistake(
    symptom="your prediction is flipped: it is True where the weights are not zero",
    why="the question is where the weights are exactly zero",
    fix="True must mark the weights that are exactly zero (the blocked keys), False "
    "the keys a query may attend to",
)
_ZERO_TRANSPOSED = ck.Mistake(
    symptom="your prediction is transposed",
    why="rows are queries, columns are keys",
    fix="[b, i, j] says whether query i's weight on key j is zero",
)
_ZERO_NO_PADDING = ck.Mistake(
    symptom="you predicted the causal zeros only",
    why="keys at positions >= the sequence's length are padding and get weight "
    "zero too",
    fix="the mask is padding & causal: a weight is zero where either blocks it",
)
_ZERO_NO_CAUSAL = ck.Mistake(
    symptom="you predicted the padding zeros only",
    why="with the causal mask query i also gets zero weight on every later key j > i",
    fix="the mask is padding & causal: a weight is zero where either blocks it",
)


_ZERO_PADDED_QUERIES = ck.Mistake(
    symptom="sequence {b} (length {length}): you predicted all-zero weights for its "
    "padded queries (rows {rows}), but those rows are not all zero",
    why="the padding mask blocks keys (columns), not queries: a padded query still "
    "sees the real keys at or before it, so its row is an ordinary softmax over "
    "them (section 7); only a row with no allowed key is all zero",
    fix="in rows {rows} of sequence {b}, True only at the padded keys j >= {length}",
)
_ZERO_SEQ_NO_PADDING = ck.Mistake(
    symptom="sequence {b} (length {length}): you predicted the causal zeros only; "
    "its padded keys are missing",
    why="keys at positions >= the sequence's length are padding: every query gives "
    "them weight zero, whatever the causal mask allows",
    fix="in sequence {b}, also True at every key j >= {length}, in every row",
)
_ZERO_SEQ_NO_CAUSAL = ck.Mistake(
    symptom="sequence {b} (length {length}): you predicted the padding zeros only; "
    "the future keys are missing",
    why="with the causal mask query i also gets zero weight on every later key j > i",
    fix="in sequence {b}, also True at every key j > i",
)


def _sequence_problem(b, length, predicted, actual, causal_zero, padding_zero):
    """The mistake in sequence ``b`` alone, or None if none is recognised."""
    facts = {"b": b, "length": length, "rows": list(range(length, len(actual)))}
    queries_zero = actual.copy()
    queries_zero[length:] = True
    checks = [
        (_ZERO_PADDED_QUERIES, queries_zero),
        (_ZERO_SEQ_NO_PADDING, causal_zero),
        (_ZERO_SEQ_NO_CAUSAL, padding_zero),
    ]
    for message, wrong in checks:
        if not np.array_equal(wrong, actual) and np.array_equal(predicted, wrong):
            return message.filled(facts)
    return None


def _zero_weights_problem(predicted, actual, causal_zero, padding_zero, lengths):
    if predicted.shape != actual.shape:
        return _("expected shape {shape} (batch, n, m), got {got}").format(
            shape=actual.shape, got=predicted.shape
        )
    if (predicted == actual).all():
        return None
    checks = [
        (_ZERO_FLIPPED, ~actual),
        (_ZERO_TRANSPOSED, actual.transpose(0, 2, 1)),
        (_ZERO_NO_PADDING, np.broadcast_to(causal_zero, actual.shape)),
        (_ZERO_NO_CAUSAL, padding_zero),
    ]
    for message, wrong in checks:
        if (predicted == wrong).all():
            return message
    for b, length in enumerate(lengths):
        if length == 0 and not predicted[b].all():
            return _ZERO_FULLY_MASKED.format(b=b)
    for b, length in enumerate(lengths):
        message = _sequence_problem(
            b, length, predicted[b], actual[b], causal_zero, padding_zero[b]
        )
        if message is not None:
            return message
    for b, length in enumerate(lengths):
        cells = np.argwhere(predicted[b] != actual[b]).tolist()
        if cells:
            return _(
                "sequence {b} (length {length}): your prediction is wrong at "
                "(query, key) {cells}"
            ).format(b=b, length=length, cells=cells)
    return None


def check_zero_weights(fn, *, lengths=(4, 2, 0)):
    """Check ``fn() -> bool (batch, n, n)``: where the weights are exactly zero.

    The weights are those of self-attention with ``padding_mask(lengths, n) &
    causal_mask(n)``, n = max(lengths) (the exercise: lengths 4, 2 and 0).
    """
    name = "check_zero_weights"
    ck.require_function(name, fn)
    n = max(lengths)
    X = np.random.default_rng(8).standard_normal((len(lengths), 1, n, 4))
    mask = anp.padding_mask(np.array(lengths), n) & anp.causal_mask(n)
    _output, w = anp.scaled_dot_product_attention(X, X, X, mask=mask)
    actual = w[:, 0] == 0  # (batch, n, n)
    causal_zero = ~anp.causal_mask(n)  # (n, n)
    padding_zero = np.broadcast_to(
        ~anp.padding_mask(np.array(lengths), n)[:, 0], actual.shape
    )
    note = _("padding lengths {lengths} and a causal mask").format(
        lengths=tuple(lengths)
    )
    case = ck.make_case((), note=note)
    out = ck.Out("prediction", f"(batch, n, n) = {(len(lengths), n, n)}")
    got = ck.to_arrays(
        ck.call(name, fn, case, "predicted_zero_weights()", ""), (out,), fn
    )
    if isinstance(got, str):
        message = got
    elif got[0].dtype != np.bool_ and not np.isin(got[0], (0, 1)).all():
        message = "return booleans (or 0/1): True where the weight is exactly zero"
    else:
        message = ck.quietly(
            _zero_weights_problem,
            got[0].astype(bool),
            actual,
            causal_zero,
            padding_zero,
            lengths,
        )
    if message is not None:
        raise ck.CheckFailed(name, message, case.label, ck.defined_at(fn))
    print(
        _(
            "✓ {name}: every zero weight predicted, including the fully masked rows"
        ).format(name=name)
    )
    return True
