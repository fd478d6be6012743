"""Checkers for lesson 10's build exercises: rotate-half RoPE and a cached decoder.

``check_rope_halves`` (RoPE with coordinate i paired with i + d/2, the layout
of Llama's Hugging Face code, which ``attention_np.rope`` does not compute) and
``check_cached_generation`` (greedy generation from a small Llama-style model,
RoPE and grouped-query attention, with a preallocated KV cache written at
position t). Each runs the learner's NumPy function on fresh seeded cases,
compares it with an independent reference and names the likely mistake as a
:class:`~helpers.checks._engine.Mistake`; see ``helpers.checks``. NumPy only.
"""

import math

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck

__all__ = ["check_rope_halves", "check_cached_generation"]

# --------------------------------------------------------------------------
# RoPE in the rotate-half layout (exercise 10.2)
# --------------------------------------------------------------------------


def rope_halves(x, positions, *, exponent=2.0, sign=1.0, swap=False, pairs=False):
    """RoPE pairing coordinate i with i + d/2, or with one of the usual slips.

    Shapes: x (..., n, d), d even; positions (n,). Returns x's shape.
    """
    x = np.asarray(x, dtype=np.float64)
    if pairs:  # neighbours (2i, 2i + 1): atn.rope's layout
        return anp.rope(x, positions)
    d = x.shape[-1]
    half = d // 2
    freqs = 10000.0 ** (-exponent * np.arange(half) / d)  # (d/2,)
    angles = np.asarray(positions, dtype=np.float64)[:, None] * freqs  # (n, d/2)
    cos, sin = np.cos(angles), sign * np.sin(angles)
    a, b = x[..., :half], x[..., half:]  # (..., n, d/2) each
    first, second = a * cos - b * sin, a * sin + b * cos
    if swap:
        first, second = second, first
    return np.concatenate([first, second], axis=-1)


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
        hint="x has shape (..., n, d): x[..., :d // 2] and x[..., d // 2:] are the "
        "two halves, (..., n, d/2) each",
        tol=(1e-5, 1e-6),  # angles in float32, as some reference code computes them
    )


# --------------------------------------------------------------------------
# A cached decoder with RoPE and grouped-query attention (exercise 10.4)
# --------------------------------------------------------------------------


class TinyLlama(dict):
    """A small attention-only decoder as a dict of NumPy weights, with a short repr.

    Keys: ``embed`` (vocab, d_model), ``unembed`` (d_model, vocab), ``num_heads``,
    ``num_kv_heads`` and ``layers``, a list of dicts with ``W_Q`` (d_model, H d_k),
    ``W_K`` and ``W_V`` (d_model, G d_k), ``W_O`` (H d_k, d_model).
    """

    def __repr__(self):
        vocab, d_model = self["embed"].shape
        d_k = self["layers"][0]["W_Q"].shape[1] // self["num_heads"]
        return (
            f"<{len(self['layers'])}-layer model: vocab {vocab}, d_model {d_model}, "
            f"{self['num_heads']} query heads, {self['num_kv_heads']} K/V heads, "
            f"d_k {d_k}>"
        )

    def copied(self):
        layers = [{k: w.copy() for k, w in layer.items()} for layer in self["layers"]]
        return TinyLlama(
            self,
            embed=self["embed"].copy(),
            unembed=self["unembed"].copy(),
            layers=layers,
        )


def make_model(rng, *, vocab, d_model, num_heads, num_kv_heads, d_k, num_layers):
    """Random weights of variance 1 / fan-in: scores and logits of order 1."""

    def weights(rows, cols):
        return rng.standard_normal((rows, cols)) / math.sqrt(rows)

    layers = [
        {
            "W_Q": weights(d_model, num_heads * d_k),
            "W_K": weights(d_model, num_kv_heads * d_k),
            "W_V": weights(d_model, num_kv_heads * d_k),
            "W_O": weights(num_heads * d_k, d_model),
        }
        for _ in range(num_layers)
    ]
    return TinyLlama(
        embed=rng.standard_normal((vocab, d_model)),
        unembed=weights(d_model, vocab) * 3.0,  # logits spread: no near-ties
        num_heads=num_heads,
        num_kv_heads=num_kv_heads,
        layers=layers,
    )


def _heads(x, count):
    """(t, count * d) -> (count, t, d)."""
    t = x.shape[0]
    return x.reshape(t, count, -1).transpose(1, 0, 2)


def forward_uncached(model, tokens):
    """Logits (t, vocab) and each layer's rotated keys and values (G, t, d_k)."""
    H, G = model["num_heads"], model["num_kv_heads"]
    tokens = np.asarray(tokens)
    t = len(tokens)
    x = model["embed"][tokens]  # (t, d_model)
    positions, causal = np.arange(t), anp.causal_mask(t)
    keys, values = [], []
    for layer in model["layers"]:
        Q = rope_halves(_heads(x @ layer["W_Q"], H), positions)  # (H, t, d_k)
        K = rope_halves(_heads(x @ layer["W_K"], G), positions)  # (G, t, d_k)
        V = _heads(x @ layer["W_V"], G)  # (G, t, d_k)
        keys.append(K)
        values.append(V)
        K, V = np.repeat(K, H // G, axis=0), np.repeat(V, H // G, axis=0)  # (H, t, d)
        y, _ = anp.scaled_dot_product_attention(Q, K, V, mask=causal)  # (H, t, d_k)
        x = x + y.transpose(1, 0, 2).reshape(t, -1) @ layer["W_O"]  # (t, d_model)
    return x @ model["unembed"], np.stack(keys), np.stack(values)


def generate_uncached(model, prompt, count):
    """The reference: greedy tokens, their logits, and the cache rows 0..T-2."""
    tokens = [int(i) for i in prompt]
    logits = []
    for _ in range(count):
        out, keys, values = forward_uncached(model, tokens)
        logits.append(out[-1])
        tokens.append(int(np.argmax(out[-1])))
    _, keys, values = forward_uncached(model, tokens[:-1])
    return np.array(tokens), np.stack(logits), keys, values


def _rotate(x, position, layout):
    """Rotate (heads, d) rows, all at one position; layout "halves", "pairs", None."""
    if layout is None:
        return x
    return rope_halves(x[:, None, :], [position], pairs=layout == "pairs")[:, 0]


def cached_variant(model, prompt, count, **slip):
    """Cached greedy generation, right or with one slip; as generate_uncached.

    ``slip``: write ("t", "next", "zero"), read ("upto", "before", "all"), pos
    ("t", "zero"), store ("rotated", "raw", "raw_reread"), query_rope (bool),
    groups ("repeat", "tile"), layout ("halves", "pairs").
    """
    write, read = slip.get("write", "t"), slip.get("read", "upto")
    store, layout = slip.get("store", "rotated"), slip.get("layout", "halves")
    H, G = model["num_heads"], model["num_kv_heads"]
    layers = model["layers"]
    d_k = layers[0]["W_Q"].shape[1] // H
    T = len(prompt) + count
    K_cache = np.zeros((len(layers), G, T + 1, d_k))
    V_cache = np.zeros_like(K_cache)
    tokens, logits = [int(i) for i in prompt], []
    for t in range(T - 1):
        x = model["embed"][tokens[t]]  # (d_model,)
        p = 0 if slip.get("pos") == "zero" else t
        for i, layer in enumerate(layers):
            q = (x @ layer["W_Q"]).reshape(H, d_k)  # (H, d_k)
            k = (x @ layer["W_K"]).reshape(G, d_k)  # (G, d_k)
            v = (x @ layer["W_V"]).reshape(G, d_k)  # (G, d_k)
            if slip.get("query_rope", True):
                q = _rotate(q, p, layout)
            k_rot = _rotate(k, p, layout)
            row = {"t": t, "next": t + 1, "zero": 0}[write]
            if read == "before":
                keys, vals = K_cache[i, :, :t], V_cache[i, :, :t]
            K_cache[i, :, row] = k_rot if store == "rotated" else k
            V_cache[i, :, row] = v
            if read != "before":
                stop = T + 1 if read == "all" else t + 1
                keys, vals = K_cache[i, :, :stop], V_cache[i, :, :stop]
            if store == "raw_reread":  # rotate the whole cache again, every step
                keys = rope_halves(keys, np.arange(keys.shape[1]))
            if slip.get("groups") == "tile":
                keys, vals = (
                    np.tile(keys, (H // G, 1, 1)),
                    np.tile(vals, (H // G, 1, 1)),
                )
            else:
                keys, vals = np.repeat(keys, H // G, 0), np.repeat(vals, H // G, 0)
            if keys.shape[1] == 0:
                y = np.zeros((H, d_k))
            else:
                y = anp.scaled_dot_product_attention(q[:, None], keys, vals)[0][:, 0]
            x = x + y.reshape(-1) @ layer["W_O"]  # (d_model,)
        if t >= len(prompt) - 1:
            logits.append(x @ model["unembed"])
            tokens.append(int(np.argmax(logits[-1])))
    return (
        np.array(tokens),
        np.stack(logits),
        K_cache[:, :, : T - 1],
        V_cache[:, :, : T - 1],
    )


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
    fix="np.repeat(keys, num_heads // num_kv_heads, axis=0) (and the values): "
    "[k0, k0, k1, k1], not np.tile's [k0, k1, k0, k1]",
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


def _diagnose_cache(case, got, expected):
    if not np.any(got[2]) and not np.any(got[3]):
        return _CACHE_EMPTY
    return None


_CACHE_NOT_REPEATED = ck.Mistake(
    symptom="your function stopped with a broadcasting error where {num_kv_heads} "
    "K/V heads meet {num_heads} query heads: the K/V heads were not repeated for "
    "their groups of query heads",
    why="grouped-query attention keeps fewer K/V heads than query heads; before the "
    "scores, each K/V head must be lined up with every query head of its group "
    "(heads 0..g-1 use K/V head 0, g = num_heads // num_kv_heads)",
    fix="np.repeat(keys, num_heads // num_kv_heads, axis=0) and the same for the "
    "values, or your my_grouped_query_attention, which does it",
)


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
            raise TypeError(f"{self.__name__} must return (tokens, logits)")
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
    and the cache rows 0..T-2 (the keys after RoPE).
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
            ck.Out("K_cache rows 0..T-2", "(layers, num_kv_heads, T - 1, d_k)"),
            ck.Out("V_cache rows 0..T-2", "(layers, num_kv_heads, T - 1, d_k)"),
        ),
        mistakes,
        _diagnose_cache,
        inspect=lambda case, got: (
            _CACHE_NOT_REPEATED.filled(case.sizes) if generate.not_repeated else None
        ),
        signature="my_generate_cached(model, prompt, count, K_cache, V_cache)",
        hint="K and V have num_kv_heads heads, q has num_heads: did each K/V head "
        "serve its group of query heads before the scores?",
        tol=(1e-5, 1e-6),
    )
