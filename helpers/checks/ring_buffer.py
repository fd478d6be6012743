"""Checker for lesson 13's ring-buffer cache: one step of a sliding window.

``check_ring_buffer_step`` (exercise 13.4, one decoding step of a sliding-window
cache kept in a ring buffer) decodes whole sequences with the learner's step,
compares every output with ``helpers.attention_np`` and names the likely
mistake as a :class:`~helpers.checks._engine.Mistake`; see ``helpers.checks``.
A step that is, wraps or calls the course's own ``ring_buffer_decode`` is
refused (``refuse_reference``, from ``helpers.checks.sliding_window``): it would
pass by construction. The window's mask, exercise 13.1, is checked in
``helpers.checks.sliding_window``.
"""

import math
import warnings

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.checks.sliding_window import refuse_reference
from helpers.i18n import _

__all__ = ["check_ring_buffer_step"]


# --------------------------------------------------------------------------
# check_ring_buffer_step (exercise 13.4)
# --------------------------------------------------------------------------

_RING_EMPTY_SLOTS = ck.Mistake(
    symptom="at token t={t} (window {window}) your output also attends over buffer "
    "rows that no token has filled yet (they hold zeros)",
    why="until the buffer is full only rows 0 .. t hold tokens",
    fix="attend over K_buf[:min(t + 1, window)] and V_buf[:min(t + 1, window)]",
)
_RING_BEFORE_WRITE = ck.Mistake(
    symptom="at token t={t} (window {window}) your output leaves out token t "
    "itself: your query attends over the buffer as it was before token t's k "
    "and v went in (once the buffer is full it still sees token t - {window}, "
    "the one token t overwrites)",
    why="a query attends to its own key too (offset 0 is inside the window), so "
    "the new token has to be in the buffer when its query attends",
    fix="write k and v into row t % window first, then attend",
)
_RING_SLICE_SHORT = ck.Mistake(
    symptom="at token t={t} (window {window}) your step writes token t's k and v "
    "into the buffer, but the rows you attend over stop before the row it "
    "went into: the query does not see itself{crash}",
    why="until the buffer has wrapped around, tokens 0 .. t sit in rows 0 .. t, "
    "which is t + 1 rows with the new token's own; once it is full, every row "
    "holds a token of the window",
    fix="attend over K_buf[:min(t + 1, window)] and V_buf[:min(t + 1, window)]",
    line=r"[KV]_buf\[\s*:",
)
_RING_MISSES_ITSELF = ck.Mistake(
    symptom="at token t={t} (window {window}) your output leaves out token t "
    "itself: it attends over the tokens before it only",
    why="a query attends to its own key too (offset 0 is inside the window)",
    fix="write k and v into row t % window first, then attend over the "
    "min(t + 1, window) rows that hold tokens",
)
_RING_RANGE = ck.Mistake(
    symptom="at token t={t} (window {window}) your output is attention over keys "
    "{first}..{last} ({count} keys); sliding-window attention sees keys "
    "{want_first}..{t} ({want_count} keys)",
    why="token t sees itself and the window - 1 tokens before it, as "
    "causal_mask(n, window=window) says",
    fix="write k and v into row t % window first, then attend over the "
    "min(t + 1, window) filled rows",
)
_RING_NO_WRAP = ck.Mistake(
    symptom="at token t={t} your step writes to row {t} of buffers that have "
    "{window} rows, one past the last: the buffer never goes round to reuse a row",
    why="the buffers hold only the window: once tokens 0 .. window - 1 have filled "
    "them, each new token takes the row of the token that has just left the "
    "window, token t - window",
    fix="K_buf[t % window] = k and V_buf[t % window] = v",
    line=r"[KV]_buf\[\s*t\s*\]",
)
_RING_NOT_IN_PLACE = ck.Mistake(
    symptom="after token t={t} the caller's K_buf and V_buf are exactly as they were "
    "before your step: nothing was written into the buffers the caller passed",
    why="np.roll, np.concatenate or any K_buf = ... builds a new array and rebinds "
    "your local name only; the caller keeps the old buffers and hands them to "
    "the next step, so what your step wrote is lost",
    fix="write into the buffers themselves, by index: K_buf[t % window] = k and "
    "V_buf[t % window] = v",
    line=r"\b[KV]_buf\s*=[^=]",
)
_RING_SLOT = ck.Mistake(
    symptom="after token t={t} row {slot} of your K_buf (or V_buf) does not hold "
    "that token's k (or v)",
    why="a ring buffer of the window overwrites the oldest token: token t goes to "
    "row t % window, the row of token t - window",
    fix="K_buf[t % window] = k and V_buf[t % window] = v, in place",
)
_RING_UNSCALED = ck.Mistake(
    symptom="at token t={t} (window {window}) your output attends over the right "
    "keys, but its weights are those of unscaled scores q · k",
    why="the window changes which keys a query sees, not how they are scored: the "
    "scores keep their 1/sqrt(d_k), as in attention under causal_mask(n, "
    "window=window)",
    fix="divide the scores by math.sqrt(d_k): softmax(K_buf[:f] @ q / "
    "math.sqrt(d_k)) @ V_buf[:f], f = min(t + 1, window)",
    line=r"@|\bdot\(|einsum",
)
_RING_NOT_SWA = ck.Mistake(
    symptom="at token t={t} (window {window}) your output is not attention over "
    "any run of the keys so far",
    why="with the buffer written first, the query attends over exactly the "
    "filled rows, scaled by 1/sqrt(d_k)",
    fix="y = softmax(K_buf[:f] @ q / sqrt(d_k)) @ V_buf[:f], f = min(t + 1, window)",
)


_RING_REFERENCE = ck.Mistake(
    symptom="your step is, or calls, the course's own ring_buffer_decode: it "
    "would pass by construction, and the exercise is to write the step yourself",
    why="the check compares your step with the reference decoder, so handing it "
    "back proves nothing about your buffer writes or what you attend over",
    fix="write k and v into the buffers yourself, then attend with "
    "anp.scaled_dot_product_attention over the rows that hold tokens",
)


def _attention(q, K, V, scale=True):
    """One query over the keys K: (d_v,), scaled by 1/sqrt(d_k) unless not."""
    q = q if scale else q * math.sqrt(q.shape[-1])  # unscaled: q . k itself
    return anp.scaled_dot_product_attention(q[None], K, V)[0][0]


def _which_range(y, q, K, V, t):
    """The run of keys first..last whose attention gives y, or None."""
    if t == 0 and ck.same(y, np.zeros_like(y)):
        return {"first": 0, "last": -1, "count": 0}  # nothing seen, not even itself
    for last in (t, t - 1):
        for first in range(last + 1):
            if ck.same(y, _attention(q, K[first : last + 1], V[first : last + 1])):
                return {"first": first, "last": last, "count": last - first + 1}
    return None


def _left_out_how(fn, window, d_k, d_v):
    """Why a step leaves token t out: it attends before writing, or slices short.

    Decodes window + 1 fresh tokens with ``fn`` (a crash at one step does not
    stop the next) and reads the last output, when the buffer is full: a step
    that writes first and slices short is right there, one that attends before
    writing still sees token 0. None when it is neither.
    """
    rng = np.random.default_rng(1313)
    Q, K = rng.standard_normal((2, window + 1, d_k))  # (window + 1, d_k) each
    V = rng.standard_normal((window + 1, d_v))  # (window + 1, d_v)
    K_buf, V_buf = np.zeros((window, d_k)), np.zeros((window, d_v))
    y = None
    for t in range(window + 1):
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                y = np.asarray(fn(Q[t], K[t], V[t], K_buf, V_buf, t), dtype=float)
        except Exception:  # e.g. attention over no rows at t = 0
            y = None
    if y is None or y.shape != (d_v,):
        return None
    t = window
    if ck.same(y, _attention(Q[t], K[1 : t + 1], V[1 : t + 1])):
        return _RING_SLICE_SHORT
    if ck.same(y, _attention(Q[t], K[:t], V[:t])):
        return _RING_BEFORE_WRITE
    return None


class _Step:
    """The learner's step with the buffers bound; named and located as it."""

    def __init__(self, fn, K_buf, V_buf):
        self.fn, self.K_buf, self.V_buf = fn, K_buf, V_buf
        self.__name__ = getattr(fn, "__name__", "your function")
        self.__code__ = getattr(fn, "__code__", None)

    def __call__(self, q, k, v, t):
        return self.fn(q, k, v, self.K_buf, self.V_buf, t)


def _crashed(failed, fn, t, window, d_k, d_v):
    """A known mistake behind the learner's step raising at token t, or None."""
    err = failed.__cause__
    if err is None:  # a stub, or a message the engine wrote without a crash
        return None
    if isinstance(err, IndexError) and t >= window and f"index {t} " in str(err):
        return _RING_NO_WRAP, {}, ck.raised_at(err)
    if t < window:  # e.g. attention over an empty slice of the buffer at t = 0
        mistake = _left_out_how(fn, window, d_k, d_v)
        if mistake is _RING_SLICE_SHORT:
            crash = _(
                " (at t={t} that leaves no row at all, and attention raised)"
            ).format(t=t)
            return mistake, {"crash": crash}, ck.raised_at(err)
        if mistake is not None:
            return mistake, {}, ck.raised_at(err)
    return None


def _ring_problem(fn, Q, K, V, window):
    """Run fn over one sequence: (message, facts, where), or None when right."""
    (n, d_k), d_v = Q.shape, V.shape[1]
    K_buf, V_buf = np.zeros((window, d_k)), np.zeros((window, d_v))
    step, out = _Step(fn, K_buf, V_buf), (ck.Out("y", f"(d_v,) = ({d_v},)"),)
    signature = "my_ring_buffer_step(q, k, v, K_buf, V_buf, t)"
    hint = "K_buf and V_buf hold `window` rows each; q and k are (d_k,), v (d_v,)"
    for t in range(n):
        first = max(0, t - window + 1)
        facts = {"t": t, "window": window, "slot": t % window, "want_first": first}
        facts |= {"want_count": t - first + 1, "crash": ""}
        before = K_buf.copy(), V_buf.copy()
        case = ck.make_case(("q", "k", "v", "t"), Q[t], K[t], V[t], t)
        try:
            result = ck.call(NAME, step, case, signature, hint)
        except ck.CheckFailed as failed:
            known = _crashed(failed, fn, t, window, d_k, d_v)
            if known is None:
                raise
            mistake, more, where = known
            return mistake, facts | more, where
        got = ck.to_arrays(result, out, fn)
        if isinstance(got, str):
            return got, {}, None
        y = got[0]
        if y.shape != (d_v,):
            return f"`y` has shape {y.shape}; it should be (d_v,) = ({d_v},)", {}, None
        slot = t % window
        if not (
            np.array_equal(K_buf[slot], K[t]) and np.array_equal(V_buf[slot], V[t])
        ):
            untouched = np.array_equal(K_buf, before[0])
            if untouched and np.array_equal(V_buf, before[1]):
                return _RING_NOT_IN_PLACE, facts, None
            return _RING_SLOT, facts, None
        if ck.same(y, _attention(Q[t], K[first : t + 1], V[first : t + 1])):
            continue
        y = y.astype(float)
        if t + 1 < window and ck.same(y, _attention(Q[t], K_buf, V_buf)):
            return _RING_EMPTY_SLOTS, facts, None
        unscaled = _attention(Q[t], K[first : t + 1], V[first : t + 1], scale=False)
        if ck.same(y, unscaled):
            return _RING_UNSCALED, facts, None
        found = _which_range(y, Q[t], K, V, t)
        if found is None:
            return _RING_NOT_SWA, facts, None
        if found["last"] == t - 1:
            how = _left_out_how(fn, window, d_k, d_v) or _RING_MISSES_ITSELF
            return how, facts, None
        return _RING_RANGE, facts | found, None
    return None


NAME = "check_ring_buffer_step"


def check_ring_buffer_step(fn, *, seed=0):
    """Check ``fn(q, k, v, K_buf, V_buf, t) -> y``: one step of a ring-buffer cache.

    Whole sequences are decoded from buffers of ``window`` rows of zeros;
    every output is compared with attention under ``causal_mask(n,
    window=window)``, and token t's k and v must sit in row t % window of the
    caller's buffers.
    """
    ck.require_function(NAME, fn)
    refuse_reference(NAME, fn, ("ring_buffer_decode",), _RING_REFERENCE)
    rng = np.random.default_rng(seed)
    plan = [(7, 3, 4, 2), (5, 1, 3, 3), (9, 4, 2, 5), (4, 6, 4, 3)]
    for number, (n, window, d_k, d_v) in enumerate(plan, 1):
        Q, K = rng.standard_normal((2, n, d_k))  # (n, d_k) each
        V = rng.standard_normal((n, d_v))  # (n, d_v)
        problem = _ring_problem(fn, Q, K, V, window)
        if problem is not None:
            message, facts, where = problem
            tokens = _("{n} tokens, window={window}").format(n=n, window=window)
            label = _("case {number} of {count}: {label}").format(
                number=number, count=len(plan), label=tokens
            )
            label += f", d_k={d_k}, d_v={d_v}"
            message = ck.fill(message, facts)
            where = where or ck.look_at(fn, message)
            raise ck.CheckFailed(NAME, message, label, where)
    print(
        _("✓ {name}: {count} sequences decoded token for token").format(
            name=NAME, count=len(plan)
        )
    )
    return True
