"""Checker for lesson 03's build exercise: one query over a stream of key blocks.

``fn(q, blocks) -> (y, log_Z)`` reads ``blocks``, an iterable of ``(K_blk, V_blk)``
pairs of varying sizes, once, front to back (it has no length and no indexing,
and refuses a second pass and a reader that keeps its blocks, as a stream
would), keeping a running max, a running sum and an accumulator. It is compared
with ``anp.attention_one_query`` on all the keys at once, and log Z with
the logsumexp of the scores. Every known mistake is a
:class:`~helpers.checks._engine.Mistake`; see ``helpers.checks``.
"""

import dataclasses
import math
import tracemalloc
import weakref
from functools import partial

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.checks._refuse import Refused
from helpers.checks.attention import without_helpers

__all__ = ["check_streaming_attention", "Blocks"]


_TWICE = ck.Mistake(
    symptom="you read the stream of blocks a second time",
    why="a stream (blocks from disk or from another device) goes by once: what "
    "the second pass needs must be kept from the first, as a running max, sum "
    "and accumulator",
    fix="one loop, `for K_blk, V_blk in blocks:`, that updates the running max, "
    "sum and accumulator; nothing else reads `blocks`",
    key="you read the stream twice",
)
_KEPT = ck.Mistake(
    symptom="you kept {held} blocks at once while reading the stream: the keys and "
    "values pile up in memory instead of going by one block at a time",
    why="streaming exists for keys and values that do not fit in memory at once; "
    "once a block is folded into the running max, sum and accumulator it is no "
    "longer needed",
    fix="fold each block in as it comes, then let it go: keep only run_max, "
    "run_sum and acc between blocks (no list of blocks, no concatenate)",
    key="you kept the blocks",
)
_KEPT_COPIES = dataclasses.replace(
    _KEPT,
    symptom="you kept copies of the blocks while reading the stream: the keys and "
    "values pile up in memory instead of going by one block at a time",
)
_HELD = 2  # blocks an honest loop may still hold when it asks for the next one
_DATA = weakref.WeakKeyDictionary()  # Blocks -> (K, V, edges), out of the learner's way


class Blocks:
    """Blocks of keys and values, read once, front to back: no ``len``, no indexing.

    Each block is a fresh copy, made when it is asked for. A second pass is
    refused, and so is a reader that keeps the blocks: more than two of them
    alive at once, or (with ``watch``) more than a quarter of all the keys' and
    values' bytes held while reading.
    """

    def __init__(self, K, V, sizes, *, watch=False):
        edges = np.cumsum([0, *sizes])
        _DATA[self] = (K, V, list(zip(edges, edges[1:], strict=False)))
        self.sizes = tuple(sizes)
        self._watch = watch
        self._read = False

    def __iter__(self):
        if self._read:
            raise Refused(_TWICE)
        self._read = True
        return self._stream()

    def replay(self):
        """The blocks again, for the checker: copies, without the stream's rules."""
        K, V, edges = _DATA[self]
        return [(K[a:b].copy(), V[a:b].copy()) for a, b in edges]

    def keys(self):
        """All the keys and values at once, for the checker: (K, V)."""
        K, V, _ = _DATA[self]
        return K.copy(), V.copy()

    def _block(self, a, b, alive):
        K, V, _ = _DATA[self]
        K_blk, V_blk = K[a:b].copy(), V[a:b].copy()
        alive.append((weakref.ref(K_blk), weakref.ref(V_blk)))
        return K_blk, V_blk

    def _stream(self):
        K, V, edges = _DATA[self]
        limit = (K.nbytes + V.nbytes) / 4
        started = self._watch and not tracemalloc.is_tracing()
        if started:
            tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0] if self._watch else 0
        alive = []
        try:
            for a, b in edges:
                _refuse_kept(alive, self._watch, base, limit)
                yield self._block(a, b, alive)
            _refuse_kept(alive, self._watch, base, limit)
        finally:
            if started:
                tracemalloc.stop()

    def __repr__(self):
        return f"Blocks(sizes={list(self.sizes)})"


def _refuse_kept(alive, watch, base, limit):
    """Raise if the reader still holds the earlier blocks (or as many bytes)."""
    held = sum(k() is not None or v() is not None for k, v in alive)
    if held > _HELD:
        raise Refused(_KEPT.filled({"held": held}))
    if watch and tracemalloc.get_traced_memory()[0] - base > limit:
        raise Refused(_KEPT_COPIES.filled({}))


def _reference(q, blocks):
    K, V = blocks.keys()
    y, _, _ = anp.attention_one_query(q, K, V)  # (d_v,)
    scores = K @ q / math.sqrt(q.shape[0])  # (m,)
    return y, float(np.logaddexp.reduce(scores))


def _stream(
    q,
    blocks,
    *,
    rescale_sum=True,
    rescale_acc=True,
    flipped=False,
    log_z="right",
    divide=True,
    scale=True,
):
    """The streaming loop with one of the common mistakes switched on."""
    run_max, run_sum, acc = -math.inf, 0.0, 0.0
    for K_blk, V_blk in blocks.replay():
        x = K_blk @ q / (math.sqrt(q.shape[0]) if scale else 1.0)  # (b,)
        new_max = max(run_max, float(x.max()))
        p = np.exp(x - new_max)  # (b,)
        factor = math.exp(run_max - new_max)
        if flipped:
            factor = math.exp(new_max - run_max) if run_max > -math.inf else 0.0
        run_sum = (run_sum * factor if rescale_sum else run_sum) + p.sum()
        acc = (acc * factor if rescale_acc else acc) + p @ V_blk  # (d_v,)
        run_max = new_max
    y = acc / run_sum if divide else acc
    log_Z = {
        "right": run_max + math.log(run_sum),
        "no_max": math.log(run_sum),
        "naive": math.log(math.exp(run_max) * run_sum) if run_max < 709 else math.inf,
    }[log_z]
    return y, log_Z


_RULE = (
    "for each block: M_new = max(M, max x_blk); factor = exp(M - M_new); "
    "l = l * factor + sum exp(x_blk - M_new); acc = acc * factor + "
    "exp(x_blk - M_new) @ V_blk; at the end y = acc / l and log Z = M + log l"
)

_ACC_NOT_RESCALED = ck.Mistake(
    symptom="your log Z is right but y is not when a later block raises the max: "
    "your accumulator keeps sums taken relative to an older max",
    why="acc and l hold the same kind of sum (one with v_s in each term), so when "
    "the max grows both must be brought to the new max by the same factor",
    fix=_RULE,
)
_NOT_RESCALED = ck.Mistake(
    symptom="your y and log Z go wrong when a later block raises the max: neither "
    "your running sum nor your accumulator is rescaled",
    why="terms taken relative to different maxima cannot be added; exp(M_old - "
    "M_new) turns the old ones into terms relative to the new max",
    fix=_RULE,
)
_SUM_NOT_RESCALED = ck.Mistake(
    symptom="your accumulator is rescaled when the max grows, but your running sum "
    "l is not",
    why="y = acc / l only cancels the exp(M) factors if both are relative to the "
    "same max",
    fix=_RULE,
)
_FACTOR_FLIPPED = ck.Mistake(
    symptom="your rescaling factor grows the old sums when the max rises, instead "
    "of shrinking them",
    why="a sum relative to M_old becomes relative to the larger M_new through "
    "exp(M_old - M_new) <= 1",
    fix=_RULE,
)
_LOG_Z_NO_MAX = ck.Mistake(
    symptom="your y is right but your log Z is log l, the log of the shifted sum",
    why="l = sum exp(x_s - M) = Z exp(-M), so log Z = M + log l",
    fix="return run_max + log(run_sum)",
)
_LOG_Z_NAIVE = ck.Mistake(
    symptom="your log Z is inf on the case with scores above 709, where exp(M) "
    "overflows float64",
    why="Z itself does not fit in a float there, but its log does: it never needs "
    "exp(M)",
    fix="log Z = M + log l, added in log space",
)
_NOT_DIVIDED = ck.Mistake(
    symptom="your y is the accumulator itself, l times too large",
    why="acc holds sum exp(x_s - M) v_s; the weights are those terms divided by "
    "l = sum exp(x_s - M)",
    fix="divide once, at the end: y = acc / l",
)
_NO_SCALE = ck.Mistake(
    symptom="your scores are the raw dot products, sqrt(d_k) = {sqrt_d_k:.4g} times "
    "too large",
    why="attention's scores are <q, k_s> / sqrt(d_k), as in lesson 01",
    fix="x_blk = K_blk @ q / math.sqrt(d_k)",
)


def _drift_case(rng, d_k, d_v, sizes, size=1.0, rising=True, note="", watch=False):
    m = sum(sizes)
    q = rng.normal(size=d_k) * size
    K = rng.normal(size=(m, d_k))
    V = rng.normal(size=(m, d_v))
    scores = K @ q
    order = np.argsort(scores) if rising else np.argsort(-scores)  # max moves
    K, V = K[order], V[order]
    return ck.make_case(
        ("q", "blocks"),
        q,
        Blocks(K, V, sizes, watch=watch),
        sizes={"m": m, "d_k": d_k, "d_v": d_v},
        facts={"sqrt_d_k": math.sqrt(d_k)},
        note=note,
    )


def _cases(rng):
    return [
        _drift_case(rng, 4, 3, [3, 2, 4], note="the max rises block after block"),
        _drift_case(rng, 3, 5, [1, 1, 1, 1, 1], rising=False),
        _drift_case(rng, 5, 2, [6]),
        _drift_case(rng, 8, 4, [4, 4, 3], size=1000.0, note="scores above 709"),
        _drift_case(rng, 2, 6, [2, 5, 1], note="blocks of 2, 5 and 1 keys"),
        _drift_case(rng, 16, 48, [128] * 32, note="32 blocks of 128 keys", watch=True),
    ]


_HELPERS = (
    "softmax",
    "attention_one_query",
    "scaled_dot_product_attention",
    "online_attention",
)


def check_streaming_attention(fn, *, seed=0):
    """Check ``fn(q, blocks) -> (y, log_Z)`` over a stream of (K_blk, V_blk) blocks.

    Cases: blocks of unequal sizes, a max that rises from block to block (and one
    that falls), a single block, scores above 709, where exp overflows float64,
    and 32 blocks, which must go by one at a time. A second pass over the stream,
    a reader that keeps the blocks and the course's attention helpers are refused.
    """
    fn = without_helpers(fn, _HELPERS, "this exercise")
    v = partial(partial, _stream)
    variants = [
        (_NO_SCALE, v(scale=False)),
        (_NOT_RESCALED, v(rescale_sum=False, rescale_acc=False)),
        (_ACC_NOT_RESCALED, v(rescale_acc=False)),
        (_SUM_NOT_RESCALED, v(rescale_sum=False)),
        (_FACTOR_FLIPPED, v(flipped=True)),
        (_NOT_DIVIDED, v(divide=False)),
        (_LOG_Z_NO_MAX, v(log_z="no_max")),
        (_LOG_Z_NAIVE, v(log_z="naive")),
    ]
    outputs = (
        ck.Out("y", "(d_v,)", "y is one query's answer, the width of a value."),
        ck.Out("log_Z", "()", "log Z is one number."),
    )
    return ck.run(
        "check_streaming_attention",
        fn,
        _cases(np.random.default_rng(seed)),
        _reference,
        outputs,
        variants,
        signature="streaming_attention(q, blocks)",
        hint="each block is a pair (K_blk, V_blk) of shapes (b, d_k) and (b, d_v); "
        "the scores of a block are (b,)",
        tol=(1e-9, 1e-10),
    )
