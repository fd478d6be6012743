"""Checkers for multi-head attention: lesson 07.

Each ``check_*`` runs the learner's function on seeded cases, compares it with
``helpers.attention_np`` and names the likely mistake; see ``helpers.checks``.
"""

import dataclasses
import math
from functools import partial

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.checks import _mistakes as mk
from helpers.checks._refuse import refusing
from helpers.i18n import N_

__all__ = ["check_split_heads", "check_multi_head_attention"]

# --------------------------------------------------------------------------
# check_split_heads
# --------------------------------------------------------------------------

_SPLIT_NO_TRANSPOSE = ck.Mistake(
    symptom="you reshaped straight to (batch, num_heads, n, d_k) without the "
    "transpose: the shape is right, but each head now holds pieces of several "
    "tokens",
    why="a reshape keeps the memory order, in which a token's d_model features "
    "come one after another; the head axis has to be split off the features and "
    "then moved in front of n",
    fix="reshape to (batch, n, num_heads, d_k) first, then swap axes 1 and 2: "
    "x.reshape(batch, n, num_heads, d_k).transpose(0, 2, 1, 3)",
    line=r"reshape",
)
_SPLIT_INTERLEAVED = ck.Mistake(
    symptom="your heads are interleaved: head h got features h, h + num_heads, "
    "h + 2 * num_heads, ... of each token",
    why="each head takes a contiguous block of d_k = d_model / num_heads features",
    fix="reshape to (batch, n, num_heads, d_k), not (batch, n, d_k, num_heads)",
    line=r"reshape",
)


def _split_cases(rng):
    cases = []
    for batch, n, d_model, num_heads in [
        (2, 5, 12, 3),
        (1, 4, 6, 2),
        (3, 2, 8, 4),
        (2, 3, 5, 1),
    ]:
        d_k = d_model // num_heads
        sizes = {
            "batch": batch,
            "n": n,
            "d_model": d_model,
            "num_heads": num_heads,
            "d_k": d_k,
        }
        x = rng.normal(size=(batch, n, d_model))
        cases.append(ck.make_case(("x", "num_heads"), x, num_heads, sizes=sizes))
    return cases


def check_split_heads(fn, *, seed=0):
    """Check ``fn(x, num_heads)``: (batch, n, d_model) -> (batch, H, n, d_k).

    Steps: try it on x = np.arange(24).reshape(1, 2, 12) with 3 heads and print
    result[0, h] for each head h: head h must hold columns h*d_k:(h+1)*d_k of
    every token, token 0 in row 0.

    Cases: three or more distinct sizes, one sequence, and a single head. While
    ``fn`` runs, ``anp.split_heads`` refuses to be called.
    """
    reason = N_(
        "exercise 7.2 builds the split from a reshape and a transpose; calling "
        "the lesson's helper would pass without writing it"
    )
    reference = anp.split_heads
    fn = refusing(fn, anp, ("split_heads",), reason)

    def no_transpose(x, num_heads):
        batch, n, d_model = x.shape
        return x.reshape(batch, num_heads, n, d_model // num_heads)

    def interleaved(x, num_heads):
        batch, n, d_model = x.shape
        return x.reshape(batch, n, d_model // num_heads, num_heads).transpose(
            0, 3, 1, 2
        )

    return ck.run(
        "check_split_heads",
        fn,
        _split_cases(np.random.default_rng(seed)),
        reference,
        (
            ck.Out(
                "result",
                "(batch, num_heads, n, d_k)",
                "split_heads cuts d_model into num_heads blocks of d_k features "
                "and moves the head axis in front of n.",
            ),
        ),
        [(_SPLIT_NO_TRANSPOSE, no_transpose), (_SPLIT_INTERLEAVED, interleaved)],
        signature="split_heads(x, num_heads)",
        hint="x is (batch, n, d_model) and the result (batch, num_heads, n, d_k), "
        "with d_k = d_model // num_heads: print the shape after each step",
    )


# --------------------------------------------------------------------------
# check_multi_head_attention
# --------------------------------------------------------------------------

_MHA_SCALE_D_MODEL = ck.Mistake(
    symptom="you scaled the scores by sqrt(d_model) = sqrt({d_model})",
    why="each head attends with its own key size, the per-head d_k = d_model / "
    "num_heads = {d_k}",
    fix="divide by math.sqrt(d_k)",
    line=r"sqrt",
)
_MHA_SCALE_D_MODEL_NO_SQRT = ck.Mistake(
    symptom="you divided the scores by d_model = {d_model}",
    why="the scale is the square root of the per-head key size, d_k = d_model / "
    "num_heads = {d_k}",
    fix="divide by math.sqrt(d_k)",
    line=r"/",
)
_MHA_SCALE_D_K = ck.Mistake(
    symptom="you divided the scores by the per-head d_k = {d_k}, not its square root",
    why="a dot product of d_k unit-variance features has standard deviation sqrt(d_k)",
    fix="divide by its square root, math.sqrt(d_k)",
    line=r"/",
)
_MHA_SPLIT = ck.Mistake(
    symptom="your heads are split without the transpose: reshaping (batch, n, "
    "d_model) straight to (batch, num_heads, n, d_k) mixes tokens inside each head",
    why="a reshape keeps the memory order, in which a token's features come one "
    "after another",
    fix="reshape to (batch, n, num_heads, d_k), then swap axes 1 and 2",
    line=r"reshape",
)
_MHA_MERGE = ck.Mistake(
    symptom="your heads are merged without the transpose",
    why="(batch, num_heads, n, d_k) keeps each head's n rows together; reshaping "
    "it to (batch, n, d_model) mixes tokens",
    fix="swap axes 1 and 2 back, (batch, num_heads, n, d_k) -> (batch, n, "
    "num_heads, d_k), before reshaping to (batch, n, d_model)",
    line=r"reshape",
)
_MHA_NO_W_O = ck.Mistake(
    symptom="your output skips the output projection W_O",
    why="W_O mixes what the heads found into one d_model vector per token",
    fix="output = merge_heads(heads) @ W_O",
    line=r"return",
)
_MHA_W_TRANSPOSED = ck.Mistake(
    symptom="you applied the projection matrices transposed (X @ W.T)",
    why="this course's weights map d_model in to d_model out as rows @ W",
    fix="X @ W_Q, kv @ W_K, kv @ W_V and merged @ W_O",
    line=r"\.T\b|transpose",
)
_MHA_AVERAGED = ck.Mistake(
    symptom="you returned the weights averaged over the heads, (batch, n, m)",
    why="each head has its own pattern; the caller asks for all of them",
    fix="return every head's weights, shape (batch, num_heads, n, m)",
    line=r"mean",
)
_MHA_KV_IGNORED = ck.Mistake(
    symptom="kv was given (cross-attention) but your keys and values come from X",
    why="in cross-attention the queries come from X and the keys and values from "
    "the other sequence, kv",
    fix="K = kv @ W_K and V = kv @ W_V, while Q = X @ W_Q. Use X only when kv is None",
    line=r"=\s*X\s*(#.*)?$|\bX\s*@\s*W_[KV]|\bX\b.*W_[KV]",
)
_MHA_V_FROM_X = ck.Mistake(
    symptom="kv was given (cross-attention): your keys come from kv but your "
    "values from X",
    why="the values are read from the same sequence as the keys: each weight "
    "a_ij picks value j of the sequence that key j belongs to, kv",
    fix="V = kv @ W_V (X only when kv is None)",
    line=r"\bX\s*@\s*W_V|\bX\b.*W_V",
)
_MHA_MASK_FLIPPED = dataclasses.replace(
    mk.MASK_FLIPPED, line=r"np\.where\(.*mask|~\s*mask|mask\s*==|not\s+mask|\[.*mask"
)
_REFUSED = ("multi_head_attention", "scaled_dot_product_attention", "merge_heads")


def _mha_variant(
    X,
    W_Q,
    W_K,
    W_V,
    W_O,
    num_heads,
    mask=None,
    kv=None,
    *,
    divide_by="sqrt_d_k",
    split_transpose=True,
    merge_transpose=True,
    mask_mode="before",
    use_kv=True,
    v_from_kv=True,
    use_W_O=True,
    transpose_W=False,
    average_heads=False,
):
    """multi_head_attention with one of the common mistakes switched on."""
    if transpose_W:
        W_Q, W_K, W_V, W_O = W_Q.T, W_K.T, W_V.T, W_O.T
    source = kv if kv is not None and use_kv else X
    batch, n, d_model = X.shape
    d_k = d_model // num_heads

    def split(x):  # (batch, length, d_model) -> (batch, H, length, d_k)
        if split_transpose:
            return anp.split_heads(x, num_heads)
        return x.reshape(batch, num_heads, x.shape[1], d_k)

    values = source if v_from_kv else X
    Q, K, V = split(X @ W_Q), split(source @ W_K), split(values @ W_V)
    divisor = {
        "sqrt_d_k": math.sqrt(d_k),
        "sqrt_d_model": math.sqrt(d_model),
        "d_model": d_model,
        "d_k": d_k,
        "one": 1.0,
    }[divide_by]
    scores = Q @ np.swapaxes(K, -1, -2) / divisor  # (batch, H, n, m)
    weights = mk.masked_softmax(scores, mask, mask_mode)
    heads = weights @ V  # (batch, H, n, d_k)
    if merge_transpose:
        merged = anp.merge_heads(heads)
    else:
        merged = heads.reshape(batch, n, d_model)
    output = merged @ W_O if use_W_O else merged  # (batch, n, d_model)
    return output, (weights.mean(axis=1) if average_heads else weights)


def _mha_cases(rng):
    def case(batch, n, d_model, num_heads, m=None, mask=None, note=""):
        X = rng.normal(size=(batch, n, d_model))
        kv = None if m is None else rng.normal(size=(batch, m, d_model))
        W_Q, W_K, W_V, W_O = (
            rng.normal(size=(d_model, d_model)) / math.sqrt(d_model) for _ in range(4)
        )
        d_k = d_model // num_heads
        sizes = {"batch": batch, "n": n, "m": n if m is None else m}
        sizes.update(d_model=d_model, num_heads=num_heads, d_k=d_k)
        return ck.make_case(
            ("X", "W_Q", "W_K", "W_V", "W_O", "num_heads"),
            X,
            W_Q,
            W_K,
            W_V,
            W_O,
            num_heads,
            mask=mask,
            kv=kv,
            sizes=sizes,
            note=note,
        )

    return [
        case(2, 5, 12, 3),
        case(1, 4, 6, 2, mask=anp.causal_mask(4)),
        case(2, 3, 8, 4, m=5, note="cross-attention"),
        case(
            2,
            4,
            8,
            2,
            m=6,
            mask=anp.padding_mask(np.array([6, 3]), 6),
            note="cross-attention with padding",
        ),
        case(1, 3, 4, 1),
    ]


def check_multi_head_attention(fn, *, seed=0):
    """Check ``fn(X, W_Q, W_K, W_V, W_O, num_heads, mask=None, kv=None)``.

    Steps: on a small case with kv given (n = 3, m = 5, d_model = 8, 2 heads),
    print the shape of Q, K, V, the scores, the weights, the heads and the merged
    output beside the shapes the exercise lists; then compare one head with a
    single-head attention on that head's d_k columns of W_Q, W_K and W_V.

    It must return (output (batch, n, d_model), weights (batch, num_heads, n, m)).
    Cases: self-attention, a causal mask, cross-attention (kv) with and without
    a padding mask, and a single head. While ``fn`` runs, anp's
    multi_head_attention, scaled_dot_product_attention and merge_heads refuse to
    be called.
    """
    reason = N_(
        "exercise 7.3 builds the whole layer; you may use anp.softmax and your "
        "my_split_heads, and merge the heads yourself"
    )
    reference = anp.multi_head_attention
    fn = refusing(fn, anp, _REFUSED, reason)

    def v(**mistake):
        return partial(_mha_variant, **mistake)

    variants = [
        (_MHA_SCALE_D_MODEL, v(divide_by="sqrt_d_model")),
        (_MHA_SCALE_D_MODEL_NO_SQRT, v(divide_by="d_model")),
        (_MHA_SCALE_D_K, v(divide_by="d_k")),
        (mk.NO_SCALE, v(divide_by="one")),
        (_MHA_SPLIT, v(split_transpose=False)),
        (_MHA_SPLIT, v(split_transpose=False, merge_transpose=False)),
        (_MHA_MERGE, v(merge_transpose=False)),
        (_MHA_NO_W_O, v(use_W_O=False)),
        (_MHA_W_TRANSPOSED, v(transpose_W=True)),
        (mk.MASK_AFTER, v(mask_mode="after")),
        (_MHA_MASK_FLIPPED, v(mask_mode="flipped")),
        (mk.MASK_ADDED, v(mask_mode="added")),
        (_MHA_AVERAGED, v(average_heads=True)),
        (_MHA_KV_IGNORED, v(use_kv=False)),
        (_MHA_V_FROM_X, v(v_from_kv=False)),
    ]
    outputs = (
        ck.Out("output", "(batch, n, d_model)", "The merged heads go through W_O."),
        ck.Out(
            "weights",
            "(batch, num_heads, n, m)",
            "Return every head's weights, one row per query, one column per key.",
        ),
    )
    try:
        return ck.run(
            "check_multi_head_attention",
            fn,
            _mha_cases(np.random.default_rng(seed)),
            reference,
            outputs,
            variants,
            mk.diagnose_weights,
            signature="multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads, "
            "mask=None, kv=None)",
            hint=ck.Mistake(
                symptom="Q is (batch, n, d_model) before the split and (batch, "
                "num_heads, n, d_k) after it; K and V come from kv (X when kv is "
                "None), so they have m rows, and each head's scores are (batch, "
                "num_heads, n, m)",
                fix="reshape Q = X @ W_Q to (batch, n, num_heads, d_k) and swap "
                "axes 1 and 2; per head, scores = Q @ np.swapaxes(K, -1, -2)",
            ),
        )
    except ck.CheckFailed as failure:
        if isinstance(failure.__cause__, ValueError) and _values_from_x(fn, seed):
            raise ck.CheckFailed(
                failure.checker,
                _MHA_V_FROM_X,
                failure.case,
                ck.look_at(fn, _MHA_V_FROM_X),
            ) from None
        raise


def _values_from_x(fn, seed):
    """Whether ``fn``, which crashed when m != n, takes V from X (a probe, m = n)."""
    rng = np.random.default_rng(seed + 1)
    X, kv = rng.normal(size=(2, 4, 8)), rng.normal(size=(2, 4, 8))
    W = [rng.normal(size=(8, 8)) / math.sqrt(8) for _ in range(4)]
    try:
        with np.errstate(all="ignore"):
            got = fn(X.copy(), *[w.copy() for w in W], 2, kv=kv.copy())
        got = ck.as_tuple(got, 2)
    except Exception:  # it crashes here too: some other mistake
        return False
    wrong = _mha_variant(X, *W, 2, kv=kv, v_from_kv=False)
    return all(ck.same(g, w) for g, w in zip(got, wrong, strict=True))
