"""The maths of lesson 13's explorers: KV-cache sizes and top-k attention's error.

``CONFIGS`` holds the attention part of five published models, each number as
its own config.json or paper gives it, with the source beside it;
``cache_bytes`` turns a configuration and a context length into the bytes a KV
cache holds for one sequence; ``top_k_stats`` is what ``TopKExplorer`` plots.
Pure NumPy and Python: importable without ipywidgets or matplotlib, never
imports torch.
"""

import functools

import numpy as np

from helpers import _validate
from helpers import attention_np as anp
from helpers.i18n import N_
from helpers.kv_cache import top_k_attention

BYTES_PER_NUMBER = 2  # bfloat16, the dtype each of these configs names
GIB = 2**30

# layer kinds: "full" caches 2 * kv_heads * head_dim numbers per token; "sliding"
# the same for at most `window` tokens; "mla" caches d_c + d_rope numbers per
# token; "linear" keeps a fixed state of state_numbers numbers, whatever the length.
CONFIGS = {
    "Llama 3 8B": {
        "layers": {"full": 32},
        "kv_heads": 8,
        "head_dim": 128,  # hidden_size 4096 / num_attention_heads 32
        "source": "https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/"
        "config.json (num_hidden_layers 32, num_key_value_heads 8, "
        "hidden_size 4096, num_attention_heads 32)",
    },
    "Mistral 7B v0.1": {
        "layers": {"sliding": 32},
        "kv_heads": 8,
        "head_dim": 128,
        "window": 4096,
        "source": "https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/"
        "config.json (32 layers, 8 KV heads, sliding_window 4096); Jiang et al. "
        "2023, arXiv:2310.06825 (the rolling buffer cache)",
    },
    "gpt-oss-20b": {
        "layers": {"sliding": 12, "full": 12},  # layer_types alternate the two
        "kv_heads": 8,
        "head_dim": 64,
        "window": 128,
        "source": "https://huggingface.co/openai/gpt-oss-20b/blob/main/config.json "
        "(24 layers alternating sliding_attention and full_attention, "
        "sliding_window 128, 8 KV heads, head_dim 64); OpenAI 2025, "
        "arXiv:2508.10925 (learned attention sinks)",
    },
    "DeepSeek-V3": {
        "layers": {"mla": 61},
        "d_c": 512,  # kv_lora_rank
        "d_rope": 64,  # qk_rope_head_dim
        "source": "https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/"
        "config.json (num_hidden_layers 61, kv_lora_rank 512, qk_rope_head_dim "
        "64); DeepSeek-AI 2024, arXiv:2412.19437",
    },
    "Qwen3-Next-80B-A3B": {
        "layers": {"full": 12, "linear": 36},  # full_attention_interval 4
        "kv_heads": 2,
        "head_dim": 256,
        "state_numbers": 32 * 128 * 128,  # value heads x d_k x d_v per layer
        "source": "https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct/blob/"
        "main/config.json (48 layers, full_attention_interval 4, 2 KV heads, "
        "head_dim 256; Gated DeltaNet: 32 value heads, key and value head "
        "dims 128)",
    },
}


def config(model):
    """The configuration of ``model`` (a key of CONFIGS); a ValueError names them."""
    if model not in CONFIGS:
        raise ValueError(f"model must be one of {list(CONFIGS)}; got {model!r}")
    return CONFIGS[model]


def cache_bytes(model, context, bytes_per_number=BYTES_PER_NUMBER):
    """Bytes of KV cache (and fixed state) for one sequence of ``context`` tokens.

    Returns a dict: bytes per layer kind ("full", "sliding", "mla", "linear")
    and "total". Only what the attention layers keep: no weights, no
    activations; the Gated DeltaNet layers' short convolution state is left out.
    """
    c = config(model)
    context = _validate.positive_int("context", context)
    per_token_kv = 2 * c.get("kv_heads", 0) * c.get("head_dim", 0)  # K and V
    tokens = {
        "full": context,
        "sliding": min(context, c.get("window", context)),
        "mla": context,
    }
    numbers = {
        "full": per_token_kv,
        "sliding": per_token_kv,
        "mla": c.get("d_c", 0) + c.get("d_rope", 0),
    }
    parts = {}
    for kind, count in c["layers"].items():
        if kind == "linear":
            parts[kind] = count * c["state_numbers"] * bytes_per_number
        else:
            parts[kind] = count * tokens[kind] * numbers[kind] * bytes_per_number
    parts["total"] = sum(parts.values())
    return parts


def cache_curve(model, contexts):
    """Total cache bytes of ``model`` at each context length, as a float array."""
    return np.array([cache_bytes(model, int(t))["total"] for t in contexts], float)


def per_token_numbers(kind, *, num_heads=0, kv_heads=0, head_dim=0, d_c=0, d_rope=0):
    """Numbers one layer caches per token: MHA, GQA, MQA (K and V) or MLA.

    MHA: 2 num_heads head_dim; GQA: 2 kv_heads head_dim; MQA: 2 head_dim;
    MLA: d_c + d_rope (the latent and the shared RoPE key).
    """
    rules = {
        "MHA": 2 * num_heads * head_dim,
        "GQA": 2 * kv_heads * head_dim,
        "MQA": 2 * head_dim,
        "MLA": d_c + d_rope,
    }
    if kind not in rules:
        raise ValueError(f"kind must be one of {list(rules)}; got {kind!r}")
    return rules[kind]


TOP_K_PRESETS = {
    "spread": N_("spread out (random q and k)"),
    "concentrated": N_("concentrated (a few keys match)"),
}


def top_k_inputs(preset, n=32, m=128, d_k=16, seed=0):
    """Seeded Q (n, d_k), K (m, d_k), V (m, d_k) for ``top_k_stats``.

    "concentrated": every query is close to 4 of the keys, so its attention is
    peaked; "spread": plain random vectors.
    """
    if preset not in TOP_K_PRESETS:
        raise ValueError(f"preset must be one of {list(TOP_K_PRESETS)}; got {preset!r}")
    rng = np.random.default_rng(seed)
    K = rng.standard_normal((m, d_k))  # (m, d_k)
    V = rng.standard_normal((m, d_k))  # (m, d_v)
    Q = rng.standard_normal((n, d_k))  # (n, d_k)
    if preset == "concentrated":
        targets = rng.integers(0, m, size=(n, 4))  # 4 matching keys per query
        Q = 1.5 * K[targets].sum(axis=1) + 0.5 * Q  # (n, d_k)
    return Q, K, V


@functools.lru_cache(maxsize=8)
def _error_curve(preset, seed):
    """ks 1..m, top-k's mean output error and dropped weight at each (read-only).

    The error ||y_k - y|| is measured in units of the values' mean length
    mean_j ||v_j||, so it reads the same whether the output y is long or short.
    """
    Q, K, V = top_k_inputs(preset, seed=seed)
    full, weights = anp.scaled_dot_product_attention(Q, K, V)  # (n, d_v), (n, m)
    unit = np.linalg.norm(V, axis=-1).mean()
    ks = np.arange(1, K.shape[0] + 1)
    errors, dropped = [], []
    for k in ks:
        out, kept = top_k_attention(Q, K, V, k)  # (n, d_v), (n, m)
        errors.append(np.linalg.norm(out - full, axis=-1).mean() / unit)
        dropped.append(1.0 - np.where(kept > 0, weights, 0.0).sum(axis=-1).mean())
    curves = ks, np.array(errors), np.array(dropped)
    for curve in curves:
        curve.flags.writeable = False
    return curves


def top_k_stats(k, preset="spread", seed=0):
    """Top-k attention against full attention, for TopKExplorer.

    Returns a dict: k, preset, m, the weights of query 0 with all keys and with
    its top k ("full", "kept", each (m,)); for every k from 1 to m ("ks") the
    mean output error in units of a value's length ("errors") and the mean
    weight that top-k drops ("dropped_curve"); this k's "error" and "dropped".
    """
    Q, K, V = top_k_inputs(preset, seed=seed)
    m = K.shape[0]
    k = _validate.positive_int("k", k)
    if k > m:
        raise ValueError(f"k must be at most m = {m} keys; got {k}")
    ks, errors, dropped = _error_curve(preset, seed)
    _, weights = anp.scaled_dot_product_attention(Q[:1], K, V)  # (1, m)
    _, kept = top_k_attention(Q[:1], K, V, k)  # (1, m)
    return {
        "k": k,
        "preset": preset,
        "m": m,
        "full": weights[0],
        "kept": kept[0],
        "ks": ks,
        "errors": errors,
        "dropped_curve": dropped,
        "error": float(errors[k - 1]),
        "dropped": float(dropped[k - 1]),
    }
