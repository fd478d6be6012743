"""Checkers for lesson 10's build exercises: rotate-half RoPE and a cached decoder.

``check_rope_halves`` (RoPE with coordinate i paired with i + d/2, the layout
of Llama's Hugging Face code, which ``attention_np.rope`` does not compute) and
``check_cached_generation`` (greedy generation from a small Llama-style model,
RoPE and grouped-query attention, with a preallocated KV cache written at
position t). Each runs the learner's NumPy function on fresh seeded cases,
compares it with an independent reference and names the likely mistake as a
:class:`~helpers.checks._engine.Mistake`; see ``helpers.checks``. The model,
the references and the slips they are compared with live in
``helpers.checks.decoder_model``. NumPy only.
"""

import numpy as np

from helpers.checks import _engine as ck
from helpers.checks.decoder_model import (
    cached_variant,
    generate_uncached,
    make_model,
    rope_halves,
)
from helpers.i18n import N_, _

__all__ = ["check_rope_halves", "check_cached_generation"]

# --------------------------------------------------------------------------
# RoPE in the rotate-half layout (exercise 10.2)
# --------------------------------------------------------------------------


_RULE = (
    "coordinate i pairs with i + d/2; pair i turns by position * 10000 ** (-2i / d), "
    "(a, b) -> (a cos - b sin, a sin + b cos)"
)
_HALVES_PAIRS = ck.Mistake(
    symptom="you rotated neighbouring coordinates (0, 1), (2, 3), ... together, the "
    "layout of atn.rope and section 2, not the rotate-half layout",
    why="this layout pairs the first half of x with the second half: coordinate i "
    "turns together with coordinate i + d/2. Both are valid RoPEs, but a model's "
    "weights were trained with one of them, and mixing them scrambles every score",
    fix="split x into a = x[..., :d // 2] and b = x[..., d // 2:], rotate each pair "
    "(a[i], b[i]) and concatenate the two rotated halves: " + _RULE,
)
_HALVES_EXPONENT = ck.Mistake(
    symptom="your angles fall too slowly along the pairs: your pair i turns by "
    "position * 10000 ** (-i / d)",
    why="the exponent counts coordinates, two per pair: 0, 2/d, 4/d, ..., so the "
    "slowest pair turns by about position / 10000",
    fix="freqs = 10000.0 ** (-2 * np.arange(d // 2) / d), then " + _RULE,
)
_HALVES_SIGN = ck.Mistake(
    symptom="your pairs turn the wrong way: the sin terms have the wrong signs",
    why="a rotation by +theta sends (a, b) to (a cos - b sin, a sin + b cos); the "
    "opposite signs turn by -theta, which reverses every offset",
    fix=_RULE,
)
_HALVES_SWAP = ck.Mistake(
    symptom="your two halves come back in the wrong order: the rotated second "
    "half sits in the first half",
    why="a rotation keeps each coordinate where it was: the new a stays in the "
    "first half, the new b in the second",
    fix="concatenate [a cos - b sin, a sin + b cos], in that order",
)
_HALVES_POSITIONS = ck.Mistake(
    symptom="you ignored `positions`: row r turned by the angle of position r "
    "(this case passes other positions)",
    why="a KV cache rotates one new row at position t, and a prompt may start "
    "anywhere: the angle comes from the position you are given, not the row",
    fix="angles = positions[:, None] * freqs, shape (n, d/2)",
)
_HALVES_IDENTITY = ck.Mistake(
    symptom="your result equals the input: nothing was rotated",
    why="only position 0 is the identity; every other position turns its pairs",
    fix="return the rotated halves, concatenated: " + _RULE,
)


def check_rope_halves(fn, *, seed=0):
    """Check ``fn(x, positions)``: x (..., n, d) rotated with i paired with i + d/2."""
    rng = np.random.default_rng(seed)
    cases = [
        ck.make_case(("x", "positions"), rng.standard_normal((5, 8)), np.arange(5)),
        ck.make_case(
            ("x", "positions"),
            rng.standard_normal((3, 6)),
            np.array([0, 9, 4]),
            note="positions [0, 9, 4]",
        ),
        ck.make_case(
            ("x", "positions"),
            rng.standard_normal((2, 4, 12)),
            np.arange(40, 44),
            note="a head axis in front, positions 40-43",
        ),
    ]
    mistakes = [
        (_HALVES_PAIRS, lambda x, p: rope_halves(x, p, pairs=True)),
        (_HALVES_EXPONENT, lambda x, p: rope_halves(x, p, exponent=1.0)),
        (_HALVES_SIGN, lambda x, p: rope_halves(x, p, sign=-1.0)),
        (_HALVES_SWAP, lambda x, p: rope_halves(x, p, swap=True)),
        (_HALVES_POSITIONS, lambda x, p: rope_halves(x, np.arange(x.shape[-2]))),
        (_HALVES_IDENTITY, lambda x, p: x),
    ]
    return ck.run(
        "check_rope_halves",
        fn,
        cases,
        rope_halves,
        (ck.Out("rotated", "the shape of x, (..., n, d)"),),
        mistakes,
        signature="my_rope_halves(x, positions)",
        hint=ck.Mistake(
            symptom="x has shape (..., n, d): the two halves are the first and the "
            "last d/2 features of the last axis, (..., n, d/2) each",
            fix="x[..., :d // 2] and x[..., d // 2:] are the two halves",
        ),
        tol=(1e-5, 1e-6),  # angles in float32, as some reference code computes them
    )


# --------------------------------------------------------------------------
# A cached decoder with RoPE and grouped-query attention (exercise 10.4)
# --------------------------------------------------------------------------


_WHERE_WRITE = r"_cache\s*\[.*\]\s*="
_CACHE_NEXT = ck.Mistake(
    symptom="your cache rows are shifted by one: position t's key and value sit in "
    "row t + 1 and row 0 stayed empty, so the new token reads an empty row where "
    "its own key should be",
    why="row t of the preallocated cache is position t. When the query of position "
    "t reads rows 0..t, its own key must already be in row t",
    fix="K_cache[layer, :, t] = k and V_cache[layer, :, t] = v, then attend over "
    "K_cache[layer, :, : t + 1] and V_cache[layer, :, : t + 1]",
    line=_WHERE_WRITE,
)
_CACHE_ZERO = ck.Mistake(
    symptom="every step wrote its key and value into row 0 of the cache: the rows of "
    "positions 1, 2, ... stayed empty (zeros), and each step overwrote the last",
    why="a preallocated cache keeps every past token: position t has its own row t, "
    "written once and read by every later query",
    fix="write at row t: K_cache[layer, :, t] = k, V_cache[layer, :, t] = v",
    line=_WHERE_WRITE,
)
_CACHE_ALL_ROWS = ck.Mistake(
    symptom="your query attends over the whole preallocated cache, its empty rows "
    "too: rows after position t are still zeros, and each zero key gets the score "
    "0 and a share of the weight",
    why="a preallocated cache is only filled up to the current position; the rows "
    "after it are future tokens that do not exist yet (the causal rule)",
    fix="attend over the filled rows only: K_cache[layer, :, : t + 1], "
    "V_cache[layer, :, : t + 1]",
)
_CACHE_NOT_SELF = ck.Mistake(
    symptom="the new token does not attend to itself: your query reads the cache "
    "before its own key and value are written (at the first step it sees nothing)",
    why="causal attention keeps the diagonal: position t attends to keys 0..t, its "
    "own key included, as in uncached generation",
    fix="write K_cache[layer, :, t] and V_cache[layer, :, t] first, then attend over "
    "rows 0..t",
)
_CACHE_POSITION_ZERO = ck.Mistake(
    symptom="every token was rotated as if it stood at position 0: the new token's "
    "query and key did not turn by their position t (a one-row input rotated "
    "with positions 0..0?)",
    why="RoPE turns the query and key of position t by t times each pair's "
    "frequency; at position 0 nothing turns, so the model loses all order",
    fix="rotate the new q and k with positions [t] (every head at the same "
    "position t), e.g. my_rope_halves(q[:, None, :], np.array([t]))[:, 0]",
)
_CACHE_POSITION_SHIFTED = ck.Mistake(
    symptom="your text and logits are right, but the keys in K_cache were rotated "
    "by the wrong position: row t holds the key of position t turned by "
    "position {shift}",
    why="q . k depends only on the offset between two positions, so rotating every "
    "query and key by the same wrong position leaves the scores, and the text, as "
    "they were; but row t of the cache must hold the key rotated by t, which any "
    "other reader of the cache (a query rotated correctly, a longer context) "
    "relies on",
    fix="rotate the new q and k by the position of the row you write, t: "
    "my_rope_halves(k[:, None, :], np.array([t]))[:, 0], and the same for q",
    line=r"rope|rotate",
)
_CACHE_NO_RESIDUAL = ck.Mistake(
    symptom="your layers leave out the residual: each layer's output is "
    "attention(x) W_O alone, so the token's own row x never reaches the "
    "logits",
    why="one layer maps x to x + attention(x) W_O (the exercise's formula): the "
    "residual carries the token's embedding, and each earlier layer's work, "
    "through to the logits; attention's output is only added to it",
    fix='x = x + y.reshape(-1) @ layer["W_O"]',
    line=r"W_O",
)
_CACHE_UNROTATED_KEYS = ck.Mistake(
    symptom="your cached keys were never rotated, but your query was: the scores "
    "compare a query after RoPE with keys before RoPE",
    why="q . k depends on the offset only when both are rotated by their own "
    "positions; the cache must hold the keys after RoPE (each key is rotated once, "
    "when it is written)",
    fix="K_cache[layer, :, t] = the key rotated by position t, then attend",
    line=_WHERE_WRITE,
)
_CACHE_REROTATED = ck.Mistake(
    symptom="your text and logits are right, but K_cache holds the keys before "
    "RoPE: you rotate the whole cache again at every step",
    why="a key's rotation depends only on its own position, so it can be rotated "
    "once, when it is written; rotating all t cached keys at every step redoes "
    "that work t times (the docstring asks for rotated keys in the cache)",
    fix="store the rotated key: K_cache[layer, :, t] = rope(k, t); read the cache "
    "as it is",
    line=_WHERE_WRITE,
)
_CACHE_QUERY_UNROTATED = ck.Mistake(
    symptom="your query is not rotated (the keys are): only one side of each score "
    "carries its position",
    why="RoPE rotates both q and k by their own positions, so that q . k depends on "
    "the offset between them only",
    fix="rotate q by position t too, with the same function as k",
)
_CACHE_TILE = ck.Mistake(
    symptom="with {num_heads} query heads and {num_kv_heads} K/V heads, your query "
    "head h reads K/V head h % {num_kv_heads} (the K/V heads tiled, not repeated)",
    why="grouped-query attention groups neighbouring query heads: heads 0..g-1 "
    "share K/V head 0, heads g..2g-1 head 1, and so on, g = num_heads // "
    "num_kv_heads; the model was trained that way",
    fix="np.repeat(keys, num_heads // num_kv_heads, axis=1) (and the values), "
    "axis 1 being the heads of the (1, num_kv_heads, t + 1, d_k) rows that your "
    "my_grouped_query_attention takes: [k0, k0, k1, k1], not np.tile's [k0, k1, "
    "k0, k1]",
)
_CACHE_PAIRS = ck.Mistake(
    symptom="your rotation pairs neighbouring coordinates (2i, 2i + 1), atn.rope's "
    "layout; this model pairs coordinate i with i + d_k/2",
    why="the model's weights were made for the rotate-half layout of exercise 10.2; "
    "the other layout gives other scores",
    fix="rotate q and k with your my_rope_halves from exercise 10.2",
)
_CACHE_EMPTY = ck.Mistake(
    symptom="your K_cache and V_cache are still all zeros after generation: the "
    "cache you are given was not written",
    why="the caches are preallocated (layers, num_kv_heads, max_len, d_k) arrays; "
    "generation writes each new key and value into them, in place, at row t",
    fix="K_cache[layer, :, t] = k and V_cache[layer, :, t] = v (assignment into "
    "the array, not K_cache = ...)",
)


def _first_difference(got, want):
    """The index of the first entry where ``got`` and ``want`` differ, or None."""
    got = np.asarray(got, dtype=np.float64)
    if got.shape != want.shape:
        return None
    wrong = ~np.isclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
    return tuple(int(i) for i in np.argwhere(wrong)[0]) if wrong.any() else None


_CACHE_KEY_DIFFERS = N_(
    "your {name}[{layer}, {head}, {t}] (layer {layer}, K/V head {head}, row {t}: "
    "the key after RoPE of position {t}) differs in coordinate {j}: you have "
    "{got}, uncached generation has {right}"
)
_CACHE_VALUE_DIFFERS = N_(
    "your {name}[{layer}, {head}, {t}] (layer {layer}, K/V head {head}, row {t}: "
    "the value of position {t}) differs in coordinate {j}: you have {got}, "
    "uncached generation has {right}"
)


def _diagnose_cache(case, got, expected):
    """An empty cache, or where the answer first differs, in the exercise's words."""
    if not np.any(got[2]) and not np.any(got[3]):
        return _CACHE_EMPTY
    start = len(case.args[1])  # the first generated token's position
    where = _first_difference(got[0], expected[0])
    if where is not None:
        (p,) = where
        return (
            f"your token at position {p} is {ck.num(got[0][p])}; generation without "
            f"a cache chooses {ck.num(expected[0][p])} there"
            + (" (a position of the prompt: return it unchanged)" if p < start else "")
        )
    where = _first_difference(got[1], expected[1])
    if where is not None:
        r, j = where
        return _(
            "your logits row {r} (the choice of the token at position "
            "{position}) differs in entry {j}: you have "
            "{got}, generation without a cache has {right}"
        ).format(
            r=r,
            position=start + r,
            j=j,
            got=ck.num(got[1][r, j]),
            right=ck.num(expected[1][r, j]),
        )
    for index, name, template in (
        (2, "K_cache", _CACHE_KEY_DIFFERS),
        (3, "V_cache", _CACHE_VALUE_DIFFERS),
    ):
        where = _first_difference(got[index], expected[index])
        if where is not None:
            layer, head, t, j = where
            return _(template).format(
                name=name,
                layer=layer,
                head=head,
                t=t,
                j=j,
                got=ck.num(got[index][where]),
                right=ck.num(expected[index][where]),
            )
    return None


_CACHE_NOT_REPEATED = ck.Mistake(
    symptom="your function stopped with a broadcasting error where {num_kv_heads} "
    "K/V heads meet {num_heads} query heads: the K/V heads were not repeated for "
    "their groups of query heads",
    why="grouped-query attention keeps fewer K/V heads than query heads; before the "
    "scores, each K/V head must be lined up with every query head of its group "
    "(heads 0..g-1 use K/V head 0, g = num_heads // num_kv_heads)",
    fix="pass the rows to your my_grouped_query_attention, which repeats them: "
    "my_grouped_query_attention(q[None], K_cache[None, layer, :, : t + 1], "
    "V_cache[None, layer, :, : t + 1]); by hand, np.repeat(keys, num_heads // "
    "num_kv_heads, axis=1) on those (1, num_kv_heads, t + 1, d_k) rows",
)


# The cache rows a generation writes, the part of the caches that is compared.
_ROWS_WRITTEN = "(layers, num_kv_heads, len(prompt) + count - 1, d_k), rows 0 .. "
_ROWS_WRITTEN += "len(prompt) + count - 2 of the caches"


class _Generate:
    """Runs the learner's generator on fresh caches; named and located as it."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "your function")
        self.__code__ = getattr(fn, "__code__", None)

    def __call__(self, model, prompt, count):
        H, G = model["num_heads"], model["num_kv_heads"]
        layers = model["layers"]
        d_k = layers[0]["W_Q"].shape[1] // H
        T = len(prompt) + count
        K_cache = np.zeros((len(layers), G, T + 1, d_k))  # one spare row
        V_cache = np.zeros_like(K_cache)
        self.not_repeated = False
        try:
            result = self.fn(model.copied(), prompt.copy(), count, K_cache, V_cache)
        except ValueError as err:  # (H, ...) against (G, ...): heads not lined up
            if H == G or "broadcast" not in str(err):
                raise
            self.not_repeated = True  # told by inspect, as a known mistake
            vocab = model["embed"].shape[0]
            result = np.zeros(T), np.zeros((count, vocab))
        if not isinstance(result, tuple | list) or len(result) != 2:
            raise TypeError(
                _("{name} must return (tokens, logits)").format(name=self.__name__)
            )
        tokens, logits = result
        return tokens, logits, K_cache[:, :, : T - 1], V_cache[:, :, : T - 1]


_CASES = [  # layers, vocab, d_model, H, G, d_k, prompt length, count
    (1, 11, 16, 6, 2, 4, 3, 5),
    (2, 13, 12, 2, 1, 6, 1, 6),
    (2, 9, 16, 4, 4, 4, 4, 4),
]


def check_cached_generation(fn, *, seed=0):
    """Check ``fn(model, prompt, count, K_cache, V_cache) -> (tokens, logits)``.

    The checker builds small models itself, runs the learner's cached greedy
    generation and an uncached reference, and compares the tokens, the logits
    and the cache rows written, 0 .. len(prompt) + count - 2 (the keys after RoPE).
    """
    rng = np.random.default_rng(seed)
    cases = []
    for layers, vocab, d_model, H, G, d_k, t0, count in _CASES:
        model = make_model(
            rng,
            vocab=vocab,
            d_model=d_model,
            num_heads=H,
            num_kv_heads=G,
            d_k=d_k,
            num_layers=layers,
        )
        prompt = rng.integers(vocab, size=t0)
        sizes = {"num_heads": H, "num_kv_heads": G, "count": count}
        cases.append(
            ck.make_case(
                ("model", "prompt", "count"), model, prompt, count, sizes=sizes
            )
        )
    slips = [
        (_CACHE_NEXT, {"write": "next"}),
        (_CACHE_ZERO, {"write": "zero"}),
        (_CACHE_ALL_ROWS, {"read": "all"}),
        (_CACHE_NOT_SELF, {"read": "before"}),
        (_CACHE_POSITION_ZERO, {"pos": "zero"}),
        (_CACHE_POSITION_SHIFTED.format(shift="t + 1"), {"pos": "next"}),
        (_CACHE_POSITION_SHIFTED.format(shift="t - 1"), {"pos": "prev"}),
        (_CACHE_NO_RESIDUAL, {"residual": False}),
        (_CACHE_REROTATED, {"store": "raw_reread"}),
        (_CACHE_UNROTATED_KEYS, {"store": "raw"}),
        (_CACHE_QUERY_UNROTATED, {"query_rope": False}),
        (_CACHE_TILE, {"groups": "tile"}),
        (_CACHE_PAIRS, {"layout": "pairs"}),
    ]
    mistakes = [
        (m, lambda model, p, c, s=s: cached_variant(model, p, c, **s)) for m, s in slips
    ]
    generate = _Generate(fn)
    return ck.run(
        "check_cached_generation",
        generate,
        cases,
        generate_uncached,
        (
            ck.Out("tokens", "(len(prompt) + count,)"),
            ck.Out("logits", "(count, vocab): one row per generated token"),
            ck.Out("K_cache", _ROWS_WRITTEN),
            ck.Out("V_cache", _ROWS_WRITTEN),
        ),
        mistakes,
        _diagnose_cache,
        inspect=lambda case, got: (
            _CACHE_NOT_REPEATED.filled(case.sizes) if generate.not_repeated else None
        ),
        signature="my_generate_cached(model, prompt, count, K_cache, V_cache)",
        hint="the loop feeds positions 0 .. len(prompt) + count - 2, one token each; "
        "q has num_heads heads and the cache rows num_kv_heads, (layers, "
        "num_kv_heads, max_len, d_k)",
        tol=(1e-5, 1e-6),
    )
