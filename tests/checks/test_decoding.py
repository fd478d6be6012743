"""Lesson 10's build checkers (helpers.checks.decoding) against wrong answers.

``check_rope_halves`` (RoPE with coordinate i paired with i + d/2) and
``check_cached_generation`` (greedy generation from a preallocated KV cache with
RoPE and grouped-query attention, against uncached generation). Each wrong
answer is written as a learner would write it and must be rejected with its
diagnosis (a keyword of the symptom, never the fix).
"""

import math
import re

import numpy as np
import pytest

from helpers import attention_np as anp
from helpers import checks
from helpers.checks import CheckFailed, _hints
from tests.checks.catalogue import right, topic_tests, wrong

# --------------------------------------------------------------------------
# 10.2: RoPE, rotate-half layout
# --------------------------------------------------------------------------


def rope_halves_right(x, positions):
    d = x.shape[-1]
    half = d // 2
    freqs = 10000.0 ** (-np.arange(0, d, 2) / d)  # (d/2,)
    angles = np.asarray(positions, dtype=float)[:, None] * freqs  # (n, d/2)
    a, b = x[..., :half], x[..., half:]
    cos, sin = np.cos(angles), np.sin(angles)
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)


def rope_halves_by_permuting(x, positions):
    # atn.rope on a permuted basis: interleave the halves, rotate, undo
    d = x.shape[-1]
    order = np.stack([np.arange(d // 2), np.arange(d // 2, d)], -1).reshape(-1)
    rotated = anp.rope(x[..., order], positions)
    out = np.empty_like(rotated)
    out[..., order] = rotated
    return out


def rope_calls_the_helper(x, positions):
    return anp.rope(x, positions)


def rope_slow_exponent(x, positions):
    d = x.shape[-1]
    freqs = 10000.0 ** (-np.arange(d // 2) / d)
    angles = np.asarray(positions, dtype=float)[:, None] * freqs
    a, b = x[..., : d // 2], x[..., d // 2 :]
    cos, sin = np.cos(angles), np.sin(angles)
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)


def rope_minus_sin(x, positions):
    d = x.shape[-1]
    freqs = 10000.0 ** (-np.arange(0, d, 2) / d)
    angles = np.asarray(positions, dtype=float)[:, None] * freqs
    a, b = x[..., : d // 2], x[..., d // 2 :]
    cos, sin = np.cos(angles), np.sin(angles)
    return np.concatenate([a * cos + b * sin, -a * sin + b * cos], axis=-1)


def rope_halves_swapped(x, positions):
    d = x.shape[-1]
    freqs = 10000.0 ** (-np.arange(0, d, 2) / d)
    angles = np.asarray(positions, dtype=float)[:, None] * freqs
    a, b = x[..., : d // 2], x[..., d // 2 :]
    cos, sin = np.cos(angles), np.sin(angles)
    return np.concatenate([a * sin + b * cos, a * cos - b * sin], axis=-1)


def rope_row_positions(x, positions):
    return rope_halves_right(x, np.arange(x.shape[-2]))


# --------------------------------------------------------------------------
# 10.4: the cached decoder
# --------------------------------------------------------------------------


def _attend(q, keys, values):
    # q (H, d_k), keys/values (H, t, d): one query per head
    scores = np.einsum("hd,htd->ht", q, keys) / math.sqrt(q.shape[-1])  # (H, t)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    return np.einsum("ht,htd->hd", w, values)  # (H, d)


def make_generator(slip=None):
    """A learner's cached generator, right or with one slip."""

    def my_generate_cached(model, prompt, count, K_cache, V_cache):
        H, G = model["num_heads"], model["num_kv_heads"]
        tokens, logits = list(prompt), []
        for t in range(len(prompt) + count - 1):
            x = model["embed"][tokens[t]]  # (d_model,)
            for i, layer in enumerate(model["layers"]):
                q = (x @ layer["W_Q"]).reshape(H, -1)  # (H, d_k)
                k = (x @ layer["W_K"]).reshape(G, -1)  # (G, d_k)
                v = (x @ layer["W_V"]).reshape(G, -1)  # (G, d_k)
                at = np.array([{"position 0": 0, "position t + 1": t + 1}.get(slip, t)])
                if slip != "query not rotated":
                    q = rope_halves_right(q[:, None], at)[:, 0]
                if slip != "keys cached before RoPE":
                    k = rope_halves_right(k[:, None], at)[:, 0]
                if slip == "reads before writing":
                    keys, values = K_cache[i, :, :t], V_cache[i, :, :t]
                row = t + 1 if slip == "row t + 1" else t
                K_cache[i, :, row], V_cache[i, :, row] = k, v
                if slip != "reads before writing":
                    keys, values = K_cache[i, :, : t + 1], V_cache[i, :, : t + 1]
                if slip == "whole cache":
                    keys, values = K_cache[i], V_cache[i]
                if slip == "tiled":
                    keys, values = (np.tile(a, (H // G, 1, 1)) for a in (keys, values))
                elif slip != "not repeated":
                    keys = np.repeat(keys, H // G, axis=0)
                    values = np.repeat(values, H // G, axis=0)
                if keys.shape[1] == 0:
                    y = np.zeros_like(q)
                else:
                    y = _attend(q, keys, values)  # (H, d_k)
                out = y.reshape(-1) @ layer["W_O"]
                x = out if slip == "no residual" else x + out
            if t >= len(prompt) - (0 if slip == "logits one late" else 1):
                logits.append(x @ model["unembed"])
                tokens.append(int(np.argmax(logits[-1])))
        return np.array(tokens), np.stack(logits)

    return my_generate_cached


def generator_with_pairs(model, prompt, count, K_cache, V_cache):
    # the neighbour layout of atn.rope instead of the model's rotate-half one
    H, G = model["num_heads"], model["num_kv_heads"]
    tokens, logits = list(prompt), []
    for t in range(len(prompt) + count - 1):
        x = model["embed"][tokens[t]]
        for i, layer in enumerate(model["layers"]):
            q = anp.rope((x @ layer["W_Q"]).reshape(H, 1, -1), np.array([t]))[:, 0]
            k = anp.rope((x @ layer["W_K"]).reshape(G, 1, -1), np.array([t]))[:, 0]
            K_cache[i, :, t], V_cache[i, :, t] = k, (x @ layer["W_V"]).reshape(G, -1)
            keys = np.repeat(K_cache[i, :, : t + 1], H // G, axis=0)
            values = np.repeat(V_cache[i, :, : t + 1], H // G, axis=0)
            x = x + _attend(q, keys, values).reshape(-1) @ layer["W_O"]
        if t >= len(prompt) - 1:
            logits.append(x @ model["unembed"])
            tokens.append(int(np.argmax(logits[-1])))
    return np.array(tokens), np.stack(logits)


def generator_new_cache(model, prompt, count, K_cache, V_cache):
    # fills a cache of its own: the one it was given stays zeros
    K_cache, V_cache = K_cache.copy(), V_cache.copy()
    return make_generator()(model, prompt, count, K_cache, V_cache)


def generator_rerotates(model, prompt, count, K_cache, V_cache):
    # caches raw keys and rotates the whole cache at every step: right text
    H, G = model["num_heads"], model["num_kv_heads"]
    tokens, logits = list(prompt), []
    for t in range(len(prompt) + count - 1):
        x = model["embed"][tokens[t]]
        for i, layer in enumerate(model["layers"]):
            q = rope_halves_right((x @ layer["W_Q"]).reshape(H, 1, -1), [t])[:, 0]
            K_cache[i, :, t] = (x @ layer["W_K"]).reshape(G, -1)
            V_cache[i, :, t] = (x @ layer["W_V"]).reshape(G, -1)
            keys = rope_halves_right(K_cache[i, :, : t + 1], np.arange(t + 1))
            keys = np.repeat(keys, H // G, axis=0)
            values = np.repeat(V_cache[i, :, : t + 1], H // G, axis=0)
            x = x + _attend(q, keys, values).reshape(-1) @ layer["W_O"]
        if t >= len(prompt) - 1:
            logits.append(x @ model["unembed"])
            tokens.append(int(np.argmax(logits[-1])))
    return np.array(tokens), np.stack(logits)


def named(slip):
    fn = make_generator(slip)
    fn.__name__ = "my_generate_cached"
    return fn, slip


RIGHT = [
    right(checks.check_rope_halves, rope_halves_right),
    right(checks.check_rope_halves, rope_halves_by_permuting),
    right(checks.check_cached_generation, make_generator(), id="cached-right"),
]

WRONG = [
    *wrong(
        checks.check_rope_halves,
        [
            (rope_calls_the_helper, "rotated neighbouring coordinates"),
            (rope_slow_exponent, "angles fall too slowly"),
            (rope_minus_sin, "turn the wrong way"),
            (rope_halves_swapped, "halves come back in the wrong order"),
            (rope_row_positions, "ignored `positions`"),
            (lambda x, positions: x.copy(), "equals the input", "rope-identity"),
        ],
    ),
    *wrong(
        checks.check_cached_generation,
        [
            (make_generator("row t + 1"), "rows are shifted by one", "row-t+1"),
            (make_generator("position 0"), "as if it stood at position 0", "pos-0"),
            (
                make_generator("position t + 1"),
                "rotated by the wrong position",
                "pos-t+1",
            ),
            (make_generator("no residual"), "leave out the residual", "no-residual"),
            (make_generator("keys cached before RoPE"), "never rotated", "raw-keys"),
            (generator_rerotates, "K_cache holds the keys before RoPE"),
            (make_generator("query not rotated"), "query is not rotated", "raw-q"),
            (make_generator("tiled"), "tiled, not repeated", "tiled"),
            (make_generator("not repeated"), "K/V heads were not repeated", "rep"),
            (
                make_generator("reads before writing"),
                "does not attend to itself",
                "not-self",
            ),
            (make_generator("whole cache"), "whole preallocated cache", "all-rows"),
            (generator_with_pairs, "atn.rope's layout"),
            (generator_new_cache, "still all zeros"),
        ],
    ),
]

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


# --------------------------------------------------------------------------
# Staged hints: the symptom, then why, then the fix on request
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("slip", "keyword"),
    [
        ("row t + 1", "shifted by one"),
        ("position 0", "position 0"),
        ("keys cached before RoPE", "never rotated"),
        ("tiled", "tiled"),
        ("reads before writing", "attend to itself"),
    ],
)
def test_a_cached_generation_mistake_is_told_in_steps(slip, keyword, capsys):
    _hints.reset()
    fn = make_generator(slip)
    with pytest.raises(CheckFailed) as first:
        checks.check_cached_generation(fn)
    mistake = first.value.mistake
    assert mistake is not None and keyword in first.value.diagnosis
    assert mistake.fix not in str(first.value)  # no corrected code at first
    assert "Why:" not in str(first.value)
    with pytest.raises(CheckFailed) as second:
        checks.check_cached_generation(fn)
    assert f"Why: {mistake.why}" in str(second.value)
    assert mistake.fix not in str(second.value)
    checks.hint("cached_generation")
    assert f"Fix: {mistake.fix}" in capsys.readouterr().out
    _hints.reset()


def test_not_repeating_the_kv_heads_is_a_known_mistake():
    _hints.reset()
    with pytest.raises(
        CheckFailed, match=re.escape("2 K/V heads meet 6 query")
    ) as info:
        checks.check_cached_generation(make_generator("not repeated"))
    assert info.value.mistake is not None
    assert "np.repeat" not in str(info.value)  # the fix only on request
    _hints.reset()


def test_a_generator_that_crashes_unrecognised_gets_no_why():
    # logits collected one step late: tokens[t] does not exist yet, an IndexError
    _hints.reset()
    for _ in range(2):
        with pytest.raises(CheckFailed, match="raised IndexError") as info:
            checks.check_cached_generation(make_generator("logits one late"))
        text = str(info.value)
        assert info.value.mistake is None  # a generated message: the why of a crash
        assert ("Why:" in text) == (info.value.stage == 2)  # only on the repeat
        diagnosis = info.value.diagnosis
        assert "K/V head" not in diagnosis and "group" not in diagnosis  # no GQA why
    _hints.reset()


def test_the_gqa_fixes_repeat_along_the_exercise_heads_axis():
    from helpers.checks import decoding

    for mistake in (decoding._CACHE_TILE, decoding._CACHE_NOT_REPEATED):
        assert "axis=1" in mistake.fix and "axis=0" not in mistake.fix


def test_a_wrong_cache_row_is_told_by_layer_head_and_position():
    def scribbles(model, prompt, count, K_cache, V_cache):
        tokens, logits = make_generator()(model, prompt, count, K_cache, V_cache)
        V_cache[0, 1, 2, 3] += 1.0  # one value of position 2, K/V head 1, changed
        return tokens, logits

    with pytest.raises(CheckFailed) as info:
        checks.check_cached_generation(scribbles)
    text = str(info.value)
    assert (
        "V_cache[0, 1, 2] (layer 0, K/V head 1, row 2: the value of position 2)" in text
    )
    assert "differs in coordinate 3" in text
    assert "T-2" not in text and "T - 1" not in text


def test_the_model_and_variants_live_in_their_own_module():
    from helpers.checks import decoder_model, decoding

    assert decoding.generate_uncached is decoder_model.generate_uncached
    for module in ("decoding", "decoder_model"):
        path = f"helpers/checks/{module}.py"
        with open(path, encoding="utf-8") as source:
            assert len(source.readlines()) < 500, path
