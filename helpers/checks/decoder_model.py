"""Lesson 10's small decoder, its uncached reference and its cached variants.

The models and references behind ``helpers.checks.decoding``: ``rope_halves``
(RoPE with coordinate i paired with i + d/2, right or with a slip), a small
Llama-style model as a dict of NumPy weights (``TinyLlama``, ``make_model``),
greedy generation without a cache (``generate_uncached``, the reference of
exercise 10.4) and ``cached_variant``, cached generation right or with one of
the slips the checker names. NumPy only.
"""

import math

import numpy as np

from helpers import attention_np as anp

__all__ = [
    "rope_halves",
    "TinyLlama",
    "make_model",
    "forward_uncached",
    "generate_uncached",
    "cached_variant",
]


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
    """The reference: greedy tokens, their logits, and the cache rows written."""
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
    ("t", "zero", "next", "prev"), store ("rotated", "raw", "raw_reread"),
    query_rope (bool), groups ("repeat", "tile"), layout ("halves", "pairs"),
    residual (bool).
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
        p = {"t": t, "zero": 0, "next": t + 1, "prev": t - 1}[slip.get("pos", "t")]
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
            out = y.reshape(-1) @ layer["W_O"]  # (d_model,)
            x = x + out if slip.get("residual", True) else out
        if t >= len(prompt) - 1:
            logits.append(x @ model["unembed"])
            tokens.append(int(np.argmax(logits[-1])))
    return (
        np.array(tokens),
        np.stack(logits),
        K_cache[:, :, : T - 1],
        V_cache[:, :, : T - 1],
    )
