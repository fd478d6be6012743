"""Lesson 13's explorer maths: cache sizes recomputed by hand, top-k's error."""

import numpy as np
import pytest

from helpers import attention_np as anp
from helpers.explorers import budget_maths as bm

GIB, MIB = 2**30, 2**20


def test_every_configuration_names_its_source():
    for name, config in bm.CONFIGS.items():
        assert "huggingface.co" in config["source"] or "arXiv" in config["source"]
        assert sum(config["layers"].values()) > 0, name


@pytest.mark.parametrize(
    ("model", "context", "expected"),
    [
        ("Llama 3 8B", 8192, 2 * 32 * 8 * 128 * 2 * 8192),  # exactly 1 GiB
        ("Mistral 7B v0.1", 32768, 2 * 32 * 8 * 128 * 2 * 4096),  # the window caps it
        ("Mistral 7B v0.1", 1000, 2 * 32 * 8 * 128 * 2 * 1000),
        ("gpt-oss-20b", 131072, 12 * 2 * 8 * 64 * 2 * (131072 + 128)),
        ("DeepSeek-V3", 131072, 61 * (512 + 64) * 2 * 131072),
        (
            "Qwen3-Next-80B-A3B",
            4096,
            12 * 2 * 2 * 256 * 2 * 4096 + 36 * 32 * 128**2 * 2,
        ),
    ],
)
def test_cache_bytes_by_hand(model, context, expected):
    assert bm.cache_bytes(model, context)["total"] == expected


def test_round_numbers():
    assert bm.cache_bytes("Llama 3 8B", 8192)["total"] == GIB
    assert bm.cache_bytes("Mistral 7B v0.1", 10**6)["total"] == 512 * MIB
    assert bm.cache_bytes("Qwen3-Next-80B-A3B", 1)["linear"] == 36 * MIB
    assert bm.cache_bytes("gpt-oss-20b", 10**6)["sliding"] == 3 * MIB


def test_per_token_numbers_of_deepseek_v3_against_mha_gqa_mqa():
    mla = bm.per_token_numbers("MLA", d_c=512, d_rope=64)
    assert mla == 576
    assert bm.per_token_numbers("MHA", num_heads=128, head_dim=128) == 32768
    assert bm.per_token_numbers("GQA", kv_heads=8, head_dim=128) == 2048
    assert bm.per_token_numbers("MQA", head_dim=128) == 256


def test_bad_model_and_context_are_named():
    with pytest.raises(ValueError, match="model must be one of"):
        bm.cache_bytes("GPT-5", 10)
    with pytest.raises(ValueError, match="context must be a positive integer"):
        bm.cache_bytes("Llama 3 8B", 0)
    with pytest.raises(ValueError, match="kind must be one of"):
        bm.per_token_numbers("MoE")


@pytest.mark.parametrize("preset", list(bm.TOP_K_PRESETS))
def test_top_k_error_falls_to_zero_at_k_equal_m(preset):
    stats = bm.top_k_stats(128, preset)
    assert stats["error"] < 1e-12 and abs(stats["dropped"]) < 1e-12
    errors = stats["errors"]
    assert errors[0] > errors[7] > errors[63]
    assert (np.diff(stats["dropped_curve"]) <= 1e-12).all()  # more keys, less dropped
    np.testing.assert_allclose(stats["full"].sum(), 1.0)
    assert (stats["kept"] > 0).sum() == 128


def test_concentrated_attention_tolerates_a_small_k():
    spread, concentrated = (
        bm.top_k_stats(8, "spread"),
        bm.top_k_stats(8, "concentrated"),
    )
    assert concentrated["error"] < spread["error"] / 2
    assert concentrated["dropped"] < spread["dropped"] / 2


def test_top_k_stats_kept_weights_are_the_k_largest_renormalised():
    stats = bm.top_k_stats(4, "spread")
    order = np.argsort(-stats["full"])
    kept = np.zeros_like(stats["full"])
    kept[order[:4]] = stats["full"][order[:4]] / stats["full"][order[:4]].sum()
    np.testing.assert_allclose(stats["kept"], kept, rtol=1e-12)
    Q, K, V = bm.top_k_inputs("spread")
    _, w = anp.scaled_dot_product_attention(Q[:1], K, V)
    np.testing.assert_allclose(stats["full"], w[0])


def test_bad_k_is_named():
    with pytest.raises(ValueError, match="at most m = 128"):
        bm.top_k_stats(129)
    with pytest.raises(ValueError, match="preset must be one of"):
        bm.top_k_inputs("peaked")
