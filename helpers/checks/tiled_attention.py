"""Checker for lesson 08's build exercise: causal attention tile by tile.

``check_causal_tiled_attention`` checks the ★★★ build: tiles of queries × tiles
of keys, a running max and Z per query tile, the key tiles that lie entirely
above the lower-right diagonal skipped. Each known mistake is a ``ck.Mistake``;
the reference here is written independently of ``helpers.attention_np``, with
the online-softmax state of ``helpers.checks.tiles`` (``check_score_bytes`` and
``check_merge_states``, the lesson's other exercises, live there).
"""

import math
from functools import partial

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.checks._refuse import refused, within_memory
from helpers.checks.tiles import _state
from helpers.i18n import N_

__all__ = ["check_causal_tiled_attention"]


# --------------------------------------------------------------------------
# check_causal_tiled_attention
# --------------------------------------------------------------------------

_TILE_FIRST_QUERY = ck.Mistake(
    symptom="you skipped key tiles that the later queries of a query tile still "
    "see: your skip test looks at the tile's first query",
    why="a key tile is empty only when even the tile's last query, which sees the "
    "most keys, cannot reach its first key",
    fix="skip when k0 > (q1 - 1) + (m - n), q1 - 1 being the tile's last query",
    line=r"\bif\b.*k0|break|continue",
)
_TILE_LATE = ck.Mistake(
    symptom="your output is right but tiles_computed is too high: you computed "
    "one key tile too many after the diagonal in some query tiles",
    why="the first key tile that starts beyond the last query's reach is already "
    "entirely blocked",
    fix="stop as soon as k0 > (q1 - 1) + (m - n)",
    line=r"\bif\b.*k0|break|continue",
)
_TILE_SKIP_EQUAL = ck.Mistake(
    symptom="you skipped key tiles whose first key the tile's last query can still "
    "see: a key tile that starts exactly at the last query's reach is needed",
    why="query i sees key j when j <= i + (m - n), so a key tile is empty only "
    "when its first key lies strictly beyond the reach of the tile's last query",
    fix="skip when k0 > (q1 - 1) + (m - n), not when k0 >= ...",
    line=r">=|\bif\b.*k0",
)
_TILE_NO_SKIP = ck.Mistake(
    symptom="your output is right but tiles_computed counts every tile: nothing "
    "was skipped",
    why="with a causal mask, the key tiles entirely above the diagonal hold no "
    "allowed pair; computing them is the wasted work this exercise removes",
    fix="before computing a key tile, test whether its first key k0 is beyond the "
    "reach (q1 - 1) + (m - n) of the query tile's last query",
    line=r"\+=\s*1|for .*k0",
)
_TILE_DIAGONAL = ck.Mistake(
    symptom="you skipped the diagonal tiles too, the ones that are only partly blocked",
    why="a tile must be computed when at least one (query, key) pair in it is "
    "allowed; the mask inside it blocks the rest",
    fix="skip only when every pair is blocked: k0 > (q1 - 1) + (m - n)",
    line=r"\bif\b.*k0|\bif\b.*k1|break|continue",
)
_TILE_NO_MASK = ck.Mistake(
    symptom="inside the tiles you compute, the blocked pairs are not masked: the "
    "diagonal tiles let queries see later keys",
    why="skipping removes only the tiles that are entirely blocked; a diagonal "
    "tile holds allowed and blocked pairs, and the blocked ones need -inf",
    fix="in each computed tile, set the score of query i and key j to -inf where "
    "j > i + (m - n), with i and j the global positions",
    line=r"@\s*K|\.T\b",
)
_TILE_UPPER_LEFT = ck.Mistake(
    symptom="your mask and skip are aligned upper-left (query i sees keys j <= i); "
    "this case has n = {n}, m = {m}",
    why="the course's causal mask is aligned lower-right: the last query sees the "
    "last key, so query i sees keys j <= i + (m - n)",
    fix="use the offset m - n in both the skip test and the tile's mask",
    line=r"<=|\bif\b.*k0",
)
_TILE_NO_RESCALE = ck.Mistake(
    symptom="rows whose running max grows in a later key tile are wrong: the "
    "earlier tiles' sums are not rescaled",
    why="l and acc hold sums of e^(s - old max); when the max grows they must be "
    "multiplied by e^(old max - new max) before the new tile is added",
    fix="correction = exp(running_max - shift); l = correction * l + P.sum(...); "
    "acc = correction * acc + P @ V_tile",
    line=r"\+=\s*P|=\s*\w+\s*\+\s*P\b|\b\w*(z|sum|acc)\w*\s*\+=|\bl\s*\+=",
)
_TILE_HALF_RESCALE = ck.Mistake(
    symptom="rows whose running max grows in a later key tile are wrong: you "
    "rescaled one of the running sum and the accumulator, not both",
    why="l and acc are both sums of e^(s - old max); when the max grows, both "
    "must be multiplied by e^(old max - new max), or the output's numerator and "
    "denominator no longer match",
    fix="l = correction * l + P.sum(...) and acc = correction * acc + P @ V_tile",
    line=r"\+=\s*P|=\s*\w+\s*\+\s*P\b|\b\w*(z|sum|acc)\w*\s*\+=|\bl\s*\+=",
)
_TILE_WHOLE_MATRIX = ck.Mistake(
    symptom="on n = m = 2048 (tiles of 128) your function allocated {peak_mib} MiB "
    "at once: a whole (n, m) score or mask matrix, 32 MiB, where one tile's "
    "scores take 128 KiB",
    why="the point of tiling is that memory grows with the tile, not with n * m; "
    "a whole (n, m) matrix, even one used only to count or mask, is what tiles "
    "remove",
    fix="build each tile's scores as Q[q0:q1] @ K[k0:k1].T and its mask from "
    "np.arange(q0, q1)[:, None] and np.arange(k0, k1)[None, :]",
    line=r"Q\s*@\s*K|np\.(tril|triu|ones|zeros|full)\(|arange\(\s*[nm]\s*\)",
)
_TILE_NAN = ck.Mistake(
    symptom="NaN in rows that have seen no key yet (or none at all: here n > m, so "
    "the first n - m queries see nothing)",
    why="a row whose running max is still -inf gives -inf - (-inf) = NaN, and a "
    "row that saw nothing ends with l = 0",
    fix="shift by 0 where the max is -inf, and divide by 1 where l == 0 (section 4)",
    line=r"exp|/",
)


def _tiled(Q, K, V, block_q, block_k, **mistake):
    """Causal tiled attention, with one of the known mistakes switched on."""
    n, d_k = Q.shape
    m = K.shape[0]
    offset = 0 if mistake.get("upper_left") else m - n
    out = np.zeros((n, V.shape[1]))  # (n, d_v)
    computed = 0
    for q0 in range(0, n, block_q):
        q1 = min(q0 + block_q, n)
        rows = np.arange(q0, q1)[:, None]  # (b_q, 1) global query positions
        reach = (q0 if mistake.get("first_query") else q1 - 1) + offset
        mx = np.full((q1 - q0, 1), -np.inf)
        z = np.zeros((q1 - q0, 1))
        acc = np.zeros((q1 - q0, V.shape[1]))
        for k0 in range(0, m, block_k):
            k1 = min(k0 + block_k, m)
            late = block_k if mistake.get("late") else 0
            if not mistake.get("no_skip") and k0 > reach + late:
                continue
            if mistake.get("skip_equal") and k0 >= reach:
                continue
            if mistake.get("diagonal") and k1 - 1 > q0 + offset:
                continue
            computed += 1
            S = Q[q0:q1] @ K[k0:k1].T / math.sqrt(d_k)  # (b_q, b_k)
            if not mistake.get("no_mask"):
                S = np.where(np.arange(k0, k1)[None, :] <= rows + offset, S, -np.inf)
            new = np.maximum(mx, S.max(axis=1, keepdims=True))
            shift = new if mistake.get("nan") else np.where(np.isfinite(new), new, 0)
            P = np.exp(S - shift)
            c = 1.0 if mistake.get("no_rescale") else np.exp(mx - shift)
            z = (1.0 if mistake.get("acc_only") else c) * z + P.sum(
                axis=1, keepdims=True
            )
            acc = (1.0 if mistake.get("l_only") else c) * acc + P @ V[k0:k1]
            mx = new
        out[q0:q1] = acc / (z if mistake.get("nan") else np.where(z == 0, 1.0, z))
    return out, computed


def _causal_reference(Q, K, V, block_q, block_k):
    """The matrix form with a lower-right mask, and the tiles holding a pair."""
    n, m = Q.shape[0], K.shape[0]
    allowed = np.arange(m)[None, :] <= np.arange(n)[:, None] + (m - n)  # (n, m)
    scores = np.where(allowed, Q @ K.T / math.sqrt(Q.shape[1]), -np.inf)
    mx, z, acc = _state(scores, V)
    needed = sum(
        bool(allowed[q0 : q0 + block_q, k0 : k0 + block_k].any())
        for q0 in range(0, n, block_q)
        for k0 in range(0, m, block_k)
    )
    return acc / np.where(z == 0, 1.0, z), needed


def _tile_cases(rng):
    cases = []
    for n, m, block_q, block_k, size, note in [
        (8, 8, 2, 2, 1.0, ""),
        (13, 13, 4, 3, 1.0, N_("tiles of unequal sizes")),
        (5, 12, 2, 4, 1.0, N_("n < m: new tokens after a cache")),
        (9, 4, 3, 2, 1.0, N_("n > m: the first queries see nothing")),
        (16, 16, 4, 4, 20.0, N_("large scores")),
        (7, 20, 7, 6, 20.0, N_("one query tile, large scores")),
        (2048, 2048, 128, 128, 1.0, N_("long: memory watched")),
    ]:
        Q = rng.normal(scale=math.sqrt(size), size=(n, 6))  # (n, d_k)
        K = rng.normal(scale=math.sqrt(size), size=(m, 6))  # (m, d_k)
        V = rng.normal(size=(m, 3))  # (m, d_v)
        sizes = {"n": n, "m": m, "d_k": 6, "d_v": 3}
        cases.append(
            ck.make_case(
                ("Q", "K", "V", "block_q", "block_k"),
                Q,
                K,
                V,
                block_q,
                block_k,
                sizes=sizes,
                note=note,
            )
        )
    return cases


_MEMORY_LIMIT = 4 * 2**20  # bytes: a tile of 128 x 128 float64 is 128 KiB


def check_causal_tiled_attention(fn, *, seed=0):
    """Check ``fn(Q, K, V, block_q, block_k) -> (output, tiles_computed)``.

    Steps: on n = 9, m = 4 with tiles of 3 x 2, print for each (query tile, key
    tile) whether you computed it, beside the grid of allowed pairs drawn by
    hand; then compare the output with the matrix form (one head, lower-right
    causal mask).

    One head, lower-right causal mask; queries cut into tiles of ``block_q``,
    keys into tiles of ``block_k``; ``tiles_computed`` counts the (query tile,
    key tile) pairs whose scores were computed, which must be exactly those that
    hold at least one allowed pair. While it runs, the helpers that would answer
    it (or build the whole (n, m) mask) refuse to be called, and on a long case
    (n = m = 2048) an allocation of more than 4 MiB is refused.
    """
    v = partial(partial, _tiled)
    variants = [
        (_TILE_NAN, v(nan=True)),
        (_TILE_UPPER_LEFT, v(upper_left=True)),
        (_TILE_NO_SKIP, v(no_skip=True)),
        (_TILE_LATE, v(late=True)),
        (_TILE_FIRST_QUERY, v(first_query=True)),
        (_TILE_DIAGONAL, v(diagonal=True)),
        (_TILE_NO_MASK, v(no_mask=True)),
        (_TILE_NO_RESCALE, v(no_rescale=True)),
        (_TILE_HALF_RESCALE, v(acc_only=True)),
        (_TILE_HALF_RESCALE, v(l_only=True)),
        (_TILE_SKIP_EQUAL, v(skip_equal=True)),
    ]
    outputs = (
        ck.Out("output", "(n, d_v)", "One row per query, d_v = V.shape[1] columns."),
        ck.Out("tiles_computed", "()", "Return the count as one whole number."),
    )
    reason = N_(
        "this exercise builds causal attention tile by tile, without the whole "
        "(n, m) mask or score matrix; build each tile's mask from the positions "
        "of its queries and keys"
    )
    names = ("causal_mask", "scaled_dot_product_attention", "online_attention")
    with refused(anp, names, reason, scope=getattr(fn, "__globals__", None)):
        return ck.run(
            "check_causal_tiled_attention",
            within_memory(fn, _MEMORY_LIMIT, _TILE_WHOLE_MATRIX),
            _tile_cases(np.random.default_rng(seed)),
            _causal_reference,
            outputs,
            variants,
            signature="causal_tiled_attention(Q, K, V, block_q, block_k)",
        )
