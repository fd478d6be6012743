"""Checker for lesson 13's sliding-window mask, and the refusal of a reference.

``check_sliding_window_mask`` (exercise 13.1, the windowed causal mask with
StreamingLLM's sink keys) runs the learner's function on fresh seeded cases,
compares it with ``helpers.attention_np`` and names the likely mistake as a
:class:`~helpers.checks._engine.Mistake`; see ``helpers.checks``. An answer that
is, wraps or calls the course's own ``causal_mask`` is refused: it would pass
by construction. ``refuse_reference``, which refuses it, is shared with
``helpers.checks.ring_buffer`` (exercise 13.4, the ring-buffer step) and
``helpers.checks.sink_mla``.
"""

import functools

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.i18n import _

__all__ = ["check_sliding_window_mask"]


def refuse_reference(name, fn, references, mistake):
    """Fail with ``mistake`` when ``fn`` is, wraps or calls one of ``references``.

    ``references`` are the names of the course's own functions that would pass
    by construction (``causal_mask``, ``sink_attention``, ...); a learner's
    function, lambda or ``functools.partial`` that is one of them, or whose code
    calls one of them by name, is refused.
    """
    inner = fn
    while isinstance(inner, functools.partial) or hasattr(inner, "__wrapped__"):
        partial = isinstance(inner, functools.partial)
        inner = inner.func if partial else inner.__wrapped__
    called = set(getattr(getattr(inner, "__code__", None), "co_names", ()))
    module = getattr(inner, "__module__", "") or ""
    own = module.startswith("helpers.") and getattr(inner, "__name__", "") in references
    if own or called & set(references):
        raise ck.CheckFailed(name, mistake, "", ck.defined_at(fn))


# --------------------------------------------------------------------------
# check_sliding_window_mask (exercise 13.1)
# --------------------------------------------------------------------------

_RULE = "query i sees key j when 0 <= (i + m - n) - j < window"
_SINKS = "and also when j < num_sinks and j <= i + m - n"

_WINDOW_PLUS_ONE = ck.Mistake(
    symptom="with window={window} your window lets a query see {plus} recent keys, "
    "one more than the window",
    why="a window of w counts the query's own position: itself and the w - 1 keys "
    "before it",
    fix=f"keep offset < window, not offset <= window: {_RULE}",
)
_WINDOW_MINUS_ONE = ck.Mistake(
    symptom="with window={window} your window lets a query see {minus} recent keys, "
    "one fewer than the window",
    why="the window includes the query's own key: offset 0 (itself) up to "
    "offset window - 1",
    fix=f"keep offset < window, not offset < window - 1: {_RULE}",
)
_WINDOW_UPPER_LEFT = ck.Mistake(
    symptom="with n={n} queries and m={m} keys your window is aligned upper-left: "
    "your last query does not see the last key",
    why="the queries are the last n positions (a KV cache holds the m - n earlier "
    "keys), so query i sits at position i + (m - n)",
    fix=f"measure the offset from i + (m - n): {_RULE}",
)
_WINDOW_BOTH_SIDES = ck.Mistake(
    symptom="your mask lets a query see keys after its own position (a band on "
    "both sides of the diagonal)",
    why="sliding-window attention is still causal: the window only looks back",
    fix=f"require offset >= 0 as well as offset < window: {_RULE}",
)
_WINDOW_FLIPPED = ck.Mistake(
    symptom="your mask is True exactly where the reference is False",
    why="the course's masks mean True = may attend",
    fix="negate it with ~, or build the allowed pairs directly: " + _RULE,
)
_WINDOW_IGNORED = ck.Mistake(
    symptom="your mask is the plain causal mask: window={window} changes nothing",
    why="with a window a query forgets the keys more than window - 1 positions back",
    fix=f"add the condition offset < window: {_RULE}",
)
_WINDOW_FIRST_KEYS = ck.Mistake(
    symptom="your mask keeps the first {window} keys of the sequence, not the last "
    "{window} before each query",
    why="the window slides with the query: it is measured back from the query's "
    "own position",
    fix=f"compare the offset (i + m - n) - j with the window: {_RULE}",
)
_SINKS_DROPPED = ck.Mistake(
    symptom="with num_sinks={num_sinks} your mask is the plain sliding window: no "
    "query keeps the first {num_sinks} keys once they leave its window",
    why="StreamingLLM keeps the first tokens of the sequence beside the window, "
    "for every query, because trained models park their spare weight there",
    fix=f"{_RULE}, {_SINKS}",
)
_SINKS_FUTURE = ck.Mistake(
    symptom="with num_sinks={num_sinks} your mask lets query {future_query} "
    "({future_where}) see key {future_key}, a sink in its future",
    why="keeping the first tokens does not lift causality: a sink is a key like "
    "any other, and no query sees a key from its future",
    fix=f"{_RULE}, {_SINKS} (the sink is not in the query's future)",
)
_SINKS_PLUS_ONE = ck.Mistake(
    symptom="with num_sinks={num_sinks} your mask keeps the first {plus_sinks} keys "
    "as sinks, one more than num_sinks",
    why="keys are numbered from 0: the first num_sinks keys are 0 .. num_sinks - 1",
    fix=f"keep j < num_sinks, not j <= num_sinks: {_RULE}, {_SINKS}",
)
_SINKS_AND = ck.Mistake(
    symptom="with num_sinks={num_sinks} your mask keeps only the keys that are both "
    "in the window and among the first {num_sinks}: the sinks filter the window "
    "instead of joining it",
    why="a query sees its window and, beside it, the sinks: the two sets of keys "
    "are joined (or), not intersected (and)",
    fix=f"combine the two conditions with |, not &: {_RULE}, {_SINKS}",
)


_WINDOW_REFERENCE = ck.Mistake(
    symptom="your function is, or calls, the course's own causal_mask: it would "
    "pass the window part by construction, and the exercise is to build the "
    "window yourself",
    why="the window's rule, 0 <= offset < window, is half of what the check "
    "tests; handing causal_mask back proves nothing about it",
    fix="compute each pair's offset (i + m - n) - j with np.arange and compare it "
    "with 0 and with the window; no call to causal_mask",
)


def _offset(n, m):
    return np.arange(n)[:, None] + (m - n) - np.arange(m)[None, :]  # (n, m)


def _band(n, m, w, shift=0):
    """0 <= offset - shift < w: the window, measured ``shift`` positions off."""
    offset = _offset(n, m) - shift  # (n, m)
    return (offset >= 0) & (offset < w)


def _sinks(n, m, s, shift=0, causal=True, last=None):
    """The first ``s`` keys (``last``: up to key ``last``), never a future one."""
    key = np.arange(m)[None, :]  # (1, m)
    kept = key <= last if last is not None else key < s
    if not causal:
        return np.broadcast_to(kept, (n, m))
    return kept & (_offset(n, m) - shift >= 0)


def _streaming_mask(n, m, window, num_sinks):
    """The window of causal_mask(n, m, window) plus the first num_sinks keys.

    Boolean (n, m), True = may attend; a sink key is kept for every query
    that may see it causally. The checker's reference for exercise 13.1.
    """
    first = np.arange(m) < num_sinks  # (m,)
    return anp.causal_mask(n, m, window=window) | (anp.causal_mask(n, m) & first)


def _future_sink(n, m, s):
    """The first query that a sink kept for every query would show its future."""
    seen = (np.arange(m)[None, :] < s) & (_offset(n, m) < 0)  # (n, m)
    if not seen.any():
        return {"future_query": "?", "future_key": "?", "future_where": "?"}
    i, j = (int(x[0]) for x in np.nonzero(seen))
    if i + m - n < 0:
        where = _(
            "at position {position}, before the first key: there are {more} more "
            "queries than keys"
        ).format(position=i + m - n, more=n - m)
    else:
        where = _("at position {position}").format(position=i + m - n)
    return {"future_query": i, "future_key": j, "future_where": where}


def check_sliding_window_mask(fn, *, seed=0):
    """Check ``fn(n, m, window, num_sinks) -> mask``, boolean (n, m), True = may attend.

    The sliding window of ``causal_mask(n, m, window=window)`` plus the first
    ``num_sinks`` keys (StreamingLLM's sinks), still causal. Cases: n == m,
    n < m (a KV cache), n > m, window 1, a window longer than the keys, no
    sinks, one sink, more sinks than the window. ``seed`` picks their order.
    """
    sizes = [
        (6, 6, 2, 1),
        (3, 8, 3, 0),
        (4, 9, 1, 2),
        (7, 4, 2, 1),
        (4, 6, 10, 0),
        (10, 10, 2, 3),
        (5, 9, 2, 3),
    ]
    order = np.random.default_rng(seed).permutation(len(sizes))
    cases = []
    for index in order:
        n, m, window, num_sinks = sizes[index]
        facts = {"n": n, "m": m, "window": window, "plus": window + 1}
        facts |= {"minus": window - 1, "num_sinks": num_sinks}
        facts |= {"plus_sinks": num_sinks + 1} | _future_sink(n, m, num_sinks)
        cases.append(
            ck.make_case(
                ("n", "m", "window", "num_sinks"),
                n,
                m,
                window,
                num_sinks,
                sizes={"n": n, "m": m} if n != m else {},
                facts=facts,
            )
        )

    refuse_reference(
        "check_sliding_window_mask",
        fn,
        ("causal_mask",),
        _WINDOW_REFERENCE,
    )

    def windowed(window_part, shift=0):  # a wrong window, the right sinks
        return lambda n, m, w, s: window_part(n, m, w) | _sinks(n, m, s, shift)

    variants = [
        (_WINDOW_FLIPPED, lambda n, m, w, s: ~_streaming_mask(n, m, w, s)),
        (_WINDOW_IGNORED, lambda n, m, w, s: anp.causal_mask(n, m)),
        (_WINDOW_PLUS_ONE, windowed(lambda n, m, w: _band(n, m, w + 1))),
        (_WINDOW_MINUS_ONE, windowed(lambda n, m, w: _band(n, m, w - 1))),
        (
            _WINDOW_UPPER_LEFT,
            lambda n, m, w, s: _band(n, m, w, m - n) | _sinks(n, m, s, m - n),
        ),
        (_WINDOW_UPPER_LEFT, windowed(lambda n, m, w: _band(n, m, w, shift=m - n))),
        (_WINDOW_BOTH_SIDES, windowed(lambda n, m, w: np.abs(_offset(n, m)) < w)),
        (
            _WINDOW_FIRST_KEYS,
            windowed(lambda n, m, w: _band(n, m, m) & (np.arange(m) < w)),
        ),
        (_SINKS_DROPPED, lambda n, m, w, s: _band(n, m, w)),
        (
            _SINKS_FUTURE,
            lambda n, m, w, s: _band(n, m, w) | _sinks(n, m, s, causal=False),
        ),
        (_SINKS_PLUS_ONE, lambda n, m, w, s: _band(n, m, w) | _sinks(n, m, s, last=s)),
        (_SINKS_AND, lambda n, m, w, s: _band(n, m, w) & _sinks(n, m, s)),
    ]
    return ck.run(
        "check_sliding_window_mask",
        fn,
        cases,
        _streaming_mask,
        (ck.Out("mask", "(n, m)", "One row per query, one column per key.", True),),
        variants,
        signature="my_sliding_window_mask(n, m, window, num_sinks)",
    )
