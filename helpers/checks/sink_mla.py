"""Checkers for lesson 13's sink logit and multi-head latent attention.

``check_sink_attention`` (exercise 13.2, a sink logit as one more term in Z,
under a mask that may leave a row no key) and
``check_mla_absorption`` (exercise 13.3, folding MLA's up-projections into the
query and the output). Each runs the learner's function on fresh seeded cases,
compares it with ``helpers.kv_cache`` and names the likely mistake as a
:class:`~helpers.checks._engine.Mistake`; see ``helpers.checks``. An answer that
is, wraps or calls ``kv_cache.sink_attention`` or ``kv_cache.absorb`` is refused:
it would pass by construction.
"""

import math
import warnings

import numpy as np

from helpers import attention_np as anp
from helpers import kv_cache
from helpers.checks import _engine as ck
from helpers.checks.sliding_window import refuse_reference
from helpers.i18n import N_, _

__all__ = ["check_mla_absorption", "check_sink_attention"]


# --------------------------------------------------------------------------
# check_sink_attention (exercise 13.2)
# --------------------------------------------------------------------------

_SINK_IGNORED = ck.Mistake(
    symptom="your weights sum to exactly 1 in every row: the sink took no share",
    why="the sink is one more term in Z, exp(sink), with no value behind it, so "
    "the keys share only 1 - exp(sink) / Z",
    fix="Z = exp(scores - top).sum(axis=-1, keepdims=True) + exp(sink - top), "
    "with top the larger of the row max and the sink",
)
_SINK_NOT_EXPONENTIATED = ck.Mistake(
    symptom="your Z adds the sink logit itself",
    why="the sink is a logit like the scores: it enters Z as exp(sink), as every "
    "score enters as exp(score)",
    fix="add np.exp(sink - top) to Z, not sink",
)
_SINK_UNSHIFTED = ck.Mistake(
    symptom="your Z adds the sink's exponential unshifted: the scores were shifted "
    "by the row's max before the exponential, the sink was not",
    why="subtracting top from every logit of a row leaves the weights unchanged "
    "only if the sink, one of the row's logits, loses top too; otherwise the "
    "sink weighs exp(top) times too much next to the scores",
    fix="add np.exp(sink - top) to Z, with the same top as the scores",
    line=r"exp\(\s*sink\s*\)",
)
_SINK_SIGN = ck.Mistake(
    symptom="your weights are those of a sink logit of the opposite sign: the "
    "larger the sink, the less of the row it takes",
    why="the sink is a logit like the scores, exp(sink - top) in Z: a head says "
    "'nothing here' by giving it the largest logit, so a larger sink must take "
    "more of the row",
    fix="add np.exp(sink - top) to Z, not np.exp(-sink - top) or np.exp(top - sink)",
    line=r"-\s*sink|top\s*-\s*sink",
)
_SINK_UNSCALED = ck.Mistake(
    symptom="your weights are those of unscaled scores Q K^T",
    why="the sink changes Z only; the scores keep their 1/sqrt(d_k)",
    fix="scores = Q @ K.swapaxes(-1, -2) / math.sqrt(d_k)",
)
_SINK_NO_MAX = ck.Mistake(
    symptom="with scores in the hundreds your weights are nan or inf",
    why="np.exp overflows above about 709; subtracting one number from every "
    "logit of a row, sink included, leaves the weights unchanged",
    fix="top = np.maximum(scores.max(axis=-1, keepdims=True), sink); exponentiate "
    "scores - top and sink - top",
)
_SINK_MASK_IGNORED = ck.Mistake(
    symptom="your weights are not zero where the mask is False: the mask was not "
    "applied",
    why="the course's masks mean True = may attend: a False pair gets no weight",
    fix="scores = np.where(mask, scores, -np.inf) before the max and the exponentials",
)
_SINK_MASK_AFTER = ck.Mistake(
    symptom="your weights are zero where the mask is False, but the rest of each "
    "row was not renormalised: the masked keys still count in Z",
    why="a masked key must leave Z as well as the weighted sum, so the mask goes "
    "on the scores, before the exponentials",
    fix="scores = np.where(mask, scores, -np.inf) before the max and the exponentials",
)
_SINK_MASKED_ROW_NAN = ck.Mistake(
    symptom="in a row whose keys are all masked your weights are nan; with a sink "
    "such a row is well defined: its weights are 0, its output 0, and the sink "
    "takes the whole row",
    why="the max of a row of -inf scores is -inf, and -inf - (-inf) is nan; the "
    "sink is one of the row's logits and it is finite, so a max that counts it "
    "is finite too",
    fix="top = np.maximum(scores.max(axis=-1, keepdims=True), sink)",
)
_SINK_BROADCAST = ck.Mistake(
    symptom="with one sink per head, sink (num_heads,), your function raised "
    "ValueError ({numpy}): your sink does not line up with the heads axis of the "
    "scores (batch, num_heads, n, m)",
    why="NumPy lines shapes up from their last axis: a (num_heads,) sink meets the "
    "m axis and a (num_heads, 1) sink the n axis, so neither reaches the heads",
    fix="sink = np.asarray(sink, dtype=float)[..., None, None]: (num_heads, 1, 1) "
    "meets (batch, num_heads, n, m) on the heads axis, and a number stays a number",
)


_SINK_REFERENCE = ck.Mistake(
    symptom="your function is, or calls, kv_cache.sink_attention, the checker's "
    "reference: it would pass by construction",
    why="the check compares with kv_cache.sink_attention, so handing it back "
    "proves nothing about how the sink enters Z",
    fix="compute the scaled scores, add exp(sink - top) to the row sums of "
    "exp(scores - top) yourself; no call to kv_cache.sink_attention",
)


def _sink_variant(
    Q,
    K,
    V,
    sink,
    mask=None,
    *,
    ignored=False,
    raw=False,
    scale=True,
    stable=True,
    unshifted=False,
    sign=1.0,
    flipped_shift=False,
    masking="before",
    top_of_scores=False,
):
    """kv_cache.sink_attention with one mistake switched on."""
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2)  # (..., n, m)
    if scale:
        scores = scores / math.sqrt(d_k)
    if mask is not None and masking == "before":
        scores = np.where(mask, scores, -np.inf)
    sink = sign * np.asarray(sink, dtype=float)[..., None, None]  # (..., 1, 1)
    row_max = scores.max(axis=-1, keepdims=True)  # (..., n, 1)
    top = row_max if top_of_scores else np.maximum(row_max, sink)
    top = top if stable else 0.0
    top = row_max if raw else top  # Z + sink, unshifted
    e = np.exp(scores - top)  # (..., n, m)
    if ignored:
        extra = 0.0
    elif raw:
        extra = sink
    elif unshifted:
        extra = np.exp(sink)
    elif flipped_shift:
        extra = np.exp(top - sink)
    else:
        extra = np.exp(sink - top)
    weights = e / (e.sum(axis=-1, keepdims=True) + extra)
    if mask is not None and masking == "after":
        weights = weights * mask
    return weights @ V, weights


def _sink_case(Q, K, V, sink, note, mask=None, large=False, heads=False):
    sizes = {"n": Q.shape[-2], "m": K.shape[-2], "d_k": Q.shape[-1]}
    sizes["d_v"] = V.shape[-1]
    if heads:
        sizes |= {"batch": Q.shape[0], "num_heads": Q.shape[1]}
    return ck.make_case(
        ("Q", "K", "V", "sink"),
        Q,
        K,
        V,
        sink,
        sizes=sizes,
        large=large,
        note=note,
        mask=mask,
    )


def _per_head(rng, n, m, d_k=6, d_v=2, batch=2, heads=3):
    Q = rng.standard_normal((batch, heads, n, d_k))
    K = rng.standard_normal((batch, heads, m, d_k))
    V = rng.standard_normal((batch, heads, m, d_v))
    return Q, K, V


def _sink_cases(rng):
    cases = []
    plan = [
        ((4, 6, 3, 5), 0.5, False, ""),
        ((1, 3, 4, 2), -1.0, False, N_("one query")),
        ((5, 5, 8, 3), 2.0, True, N_("scores in the hundreds")),
    ]
    for (n, m, d_k, d_v), sink, large, note in plan:
        scale = 40.0 if large else 1.0
        Q = rng.standard_normal((n, d_k)) * scale
        K = rng.standard_normal((m, d_k)) * scale
        V = rng.standard_normal((m, d_v))
        cases.append(_sink_case(Q, K, V, float(sink), note, large=large))
    n, m, d_k, d_v = 4, 5, 3, 2
    Q, K = rng.standard_normal((n, d_k)), rng.standard_normal((m, d_k))
    V = rng.standard_normal((m, d_v))
    mask = rng.random((n, m)) < 0.6  # (n, m)
    mask[2] = False  # a query that may see no key at all
    note = N_("a mask whose row 2 is all False")
    cases.append(_sink_case(Q, K, V, 1.0, note, mask=mask))
    sinks = np.array([-2.0, 0.5, 1.5])  # (num_heads,)
    Q, K, V = _per_head(rng, 4, 4)
    cases.append(_sink_case(Q, K, V, sinks, N_("one sink per head"), heads=True))
    Q, K, V = _per_head(rng, 6, 4)
    window = anp.causal_mask(6, 4, window=2)  # (n, m): rows 0, 1 all False
    note = N_("one sink per head, causal_mask(6, 4, window=2)")
    cases.append(_sink_case(Q, K, V, sinks, note, mask=window, heads=True))
    return cases


def _broadcast_crash(fn, cases, failed):
    """_SINK_BROADCAST (filled) when fn cannot broadcast one sink per head, else None.

    ``failed`` is the engine's CheckFailed for a crash; the per-head case without
    a mask is run again to see whether the sink alone makes fn raise.
    """
    if not isinstance(failed.__cause__, ValueError):
        return None
    per_head = next(c for c in cases if c.label.endswith(_("one sink per head")))
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(*[ck.copy(a) for a in per_head.args])
    except ValueError as err:
        if "broadcast" not in str(err):
            return None
        numpy = str(err).splitlines()[0].strip()
        mistake = _SINK_BROADCAST.filled({"numpy": numpy})
        return mistake, per_head.label, ck.raised_at(err)
    except Exception:
        return None
    return None


def check_sink_attention(fn, *, seed=0):
    """Check ``fn(Q, K, V, sink, mask=None) -> (output, weights)``.

    Compared with kv_cache.sink_attention. Cases: n != m, d_v != d_k, one
    query, large scores, a mask with a row that sees no key (the sink takes
    it whole), batch and heads with one sink per head, with and without a
    sliding-window mask.
    """
    refuse_reference("check_sink_attention", fn, ("sink_attention",), _SINK_REFERENCE)

    def v(**options):
        return lambda *a, **k: _sink_variant(*a, **k, **options)

    variants = [
        (_SINK_IGNORED, v(ignored=True)),
        (_SINK_NOT_EXPONENTIATED, v(raw=True)),
        (_SINK_UNSHIFTED, v(unshifted=True)),
        (_SINK_UNSHIFTED, v(unshifted=True, top_of_scores=True)),
        (_SINK_SIGN, v(sign=-1.0)),
        (_SINK_SIGN, v(flipped_shift=True)),
        (_SINK_UNSCALED, v(scale=False)),
        (_SINK_NO_MAX, v(stable=False)),
        (_SINK_MASK_IGNORED, v(masking="ignored")),
        (_SINK_MASK_AFTER, v(masking="after")),
        (_SINK_MASKED_ROW_NAN, v(top_of_scores=True)),
    ]
    cases = _sink_cases(np.random.default_rng(seed))
    try:
        return ck.run(
            "check_sink_attention",
            fn,
            cases,
            kv_cache.sink_attention,
            (
                ck.Out("output", "(..., n, d_v)"),
                ck.Out(
                    "weights",
                    "(..., n, m)",
                    "The sink gets no column of its own: drop it after the softmax.",
                ),
            ),
            variants,
            signature="my_sink_attention(Q, K, V, sink, mask=None)",
            hint="the scores are (..., n, m), and the mask and a per-head sink "
            "must broadcast against them",
        )
    except ck.CheckFailed as failed:
        named = _broadcast_crash(fn, cases, failed)
        if named is None:
            raise
        mistake, label, where = named
        raise ck.CheckFailed(
            "check_sink_attention",
            mistake,
            _("inputs: {label}").format(label=label),
            where,
        ) from None


# --------------------------------------------------------------------------
# check_mla_absorption (exercise 13.3)
# --------------------------------------------------------------------------

_MLA_SWAPPED = ck.Mistake(
    symptom="your W_QK is built from W_UV and your W_VO from W_UK: each "
    "up-projection is folded on the wrong side",
    why="W_UK rebuilds the keys, which only meet the query (q . k = q W_UK_h^T . c); "
    "W_UV rebuilds the values, which only meet the output projection",
    fix="W_QK[h] = W_Q_h @ W_UK_h.T and W_VO[h] = W_UV_h @ W_O_h",
)
_MLA_QK_TRANSPOSED = ck.Mistake(
    symptom="your W_QK[h] is transposed: it maps the latent to d_model",
    why="W_QK[h] takes a token x (d_model) to a query over the latent c (d_c)",
    fix="W_QK[h] = W_Q_h @ W_UK_h.T, shape (d_model, d_c)",
)
_MLA_HEADS_MIXED = ck.Mistake(
    symptom="your W_QK is the same for every head: W_Q @ W_UK.T sums over the heads",
    why="head h's query meets only head h's key, so the fold is per head",
    fix="split W_Q and W_UK into heads first, (d_model, H, d_k) and (d_c, H, d_k), "
    "then W_QK[h] = W_Q_h @ W_UK_h.T",
)
_MLA_HEADS_INTERLEAVED = ck.Mistake(
    symptom="your {output} takes head h's columns as every H-th column",
    why="the course's heads are contiguous blocks: head h owns columns "
    "h d_k .. (h + 1) d_k - 1, as in split_heads",
    fix="reshape(d, H, d_k), not reshape(d, d_k, H)",
)
_MLA_VO_ROWS = ck.Mistake(
    symptom="your W_VO uses the wrong rows of W_O for head h",
    why="the heads' outputs are concatenated before W_O, so head h meets the rows "
    "h d_v .. (h + 1) d_v - 1 of W_O",
    fix="W_O.reshape(H, d_v, d_model)[h]",
)


_MLA_VO_COLUMNS = ck.Mistake(
    symptom="your W_VO takes head h's block of W_O from its columns, turned on its "
    "side to fit: head h's output meets a block of W_O's rows, not of its columns",
    why="W_O is (H·d_v, d_model): its rows are the concatenated heads' outputs, so "
    "head h owns the rows h d_v .. (h + 1) d_v - 1; its columns are the model's "
    "output features, which every head writes to",
    fix="W_O_h = W_O.reshape(H, d_v, d_model), no transpose; W_VO[h] = W_UV_h @ "
    "W_O_h[h]",
    line=r"W_O\[\s*:|W_O\.reshape\([^)]*\)\.transpose|W_O\.T",
)
_MLA_NO_TRANSPOSE = ck.Mistake(
    symptom="your {output} takes head h's weights from a block of rows, not from "
    "head h's columns: a (rows, H·d) matrix reshaped straight to (H, rows, d) "
    "cuts it in memory order",
    why="head h owns the columns h d .. (h + 1) d - 1 of every row (as in "
    "split_heads); a reshape keeps memory order, so the H axis must come from "
    "the columns and then move to the front",
    fix="W.reshape(rows, H, d).transpose(1, 0, 2), not W.reshape(H, rows, d)",
)
_MLA_REFERENCE = ck.Mistake(
    symptom="your function is, or calls, kv_cache.absorb, the checker's "
    "reference: it would pass by construction",
    why="the check compares with kv_cache.absorb, so handing it back proves "
    "nothing about which up-projection meets the query and which the output",
    fix="split W_Q, W_UK, W_UV and W_O into heads yourself and multiply per "
    "head; no call to kv_cache.absorb",
)


def _mla_variant(
    W_Q,
    W_UK,
    W_UV,
    W_O,
    H,
    *,
    swap=False,
    mix=False,
    interleave=False,
    vo_rows=False,
    vo_columns=False,
    transpose=False,
    no_transpose=False,
):
    d_model, d_c = W_Q.shape[0], W_UK.shape[0]

    def split(W):  # (rows, H * d) -> (H, rows, d)
        if no_transpose:  # memory order: blocks of rows, not head h's columns
            return W.reshape(H, W.shape[0], -1)
        if interleave:
            return W.reshape(W.shape[0], -1, H).transpose(2, 0, 1)
        return W.reshape(W.shape[0], H, -1).transpose(1, 0, 2)

    up_k, up_v = (W_UV, W_UK) if swap else (W_UK, W_UV)
    if mix:
        W_QK = np.broadcast_to(W_Q @ up_k.T, (H, d_model, d_c))
    else:
        W_QK = split(W_Q) @ np.swapaxes(split(up_k), -1, -2)
    if vo_columns:  # head h's block of columns, transposed: (H, d_model / H, H d_v)
        W_O_h = W_O.reshape(W_O.shape[0], H, -1).transpose(1, 2, 0)
    elif vo_rows or interleave:
        W_O_h = W_O.reshape(-1, H, W_O.shape[1]).transpose(1, 0, 2)
    else:
        W_O_h = W_O.reshape(H, -1, W_O.shape[1])
    W_VO = split(up_v) @ W_O_h
    if transpose:
        W_QK = np.swapaxes(W_QK, -1, -2)
    return W_QK, W_VO


def _mla_cases(rng):
    cases = []
    for d_model, H, d_k, d_v, d_c in [
        (6, 2, 3, 3, 6),
        (8, 2, 4, 3, 5),
        (10, 1, 4, 6, 3),
        (8, 4, 2, 2, 8),
    ]:
        W = kv_cache.mla_weights(
            d_model, H, d_k, d_v, d_c, seed=int(rng.integers(1000))
        )
        sizes = {"d_model": d_model, "num_heads": H, "d_c": d_c}
        cases.append(
            ck.make_case(
                ("W_Q", "W_UK", "W_UV", "W_O", "num_heads"),
                W["W_Q"],
                W["W_UK"],
                W["W_UV"],
                W["W_O"],
                H,
                sizes=sizes,
                facts={"output": "W_QK"},
            )
        )
    return cases


def check_mla_absorption(fn, *, seed=0):
    """Check ``fn(W_Q, W_UK, W_UV, W_O, num_heads) -> (W_QK, W_VO)``.

    W_QK (num_heads, d_model, d_c) and W_VO (num_heads, d_c, d_model), compared
    with ``kv_cache.absorb``; cases with d_k != d_v, one head, d_c == d_model.
    """

    def v(**options):
        return lambda *args: _mla_variant(*args, **options)

    refuse_reference("check_mla_absorption", fn, ("absorb",), _MLA_REFERENCE)
    variants = [
        (_MLA_SWAPPED, v(swap=True)),
        (_MLA_QK_TRANSPOSED, v(transpose=True)),
        (_MLA_HEADS_MIXED, v(mix=True)),
        (_MLA_HEADS_INTERLEAVED, v(interleave=True)),
        (_MLA_VO_ROWS, v(vo_rows=True)),
        (_MLA_VO_COLUMNS, v(vo_columns=True)),
        (_MLA_NO_TRANSPOSE, v(no_transpose=True)),
    ]
    return ck.run(
        "check_mla_absorption",
        fn,
        _mla_cases(np.random.default_rng(seed)),
        kv_cache.absorb,
        (
            ck.Out(
                "W_QK",
                "(num_heads, d_model, d_c)",
                "W_QK[h] maps a token to a query over the latent.",
            ),
            ck.Out(
                "W_VO",
                "(num_heads, d_c, d_model)",
                "W_VO[h] maps a weighted latent to the model's output.",
            ),
        ),
        variants,
        signature="absorb_mla(W_Q, W_UK, W_UV, W_O, num_heads)",
        hint="split each matrix into heads with reshape, as split_heads does",
    )
