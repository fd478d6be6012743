"""helpers.checks.decoder_masks, lesson 05: a mask convention converted to ours,
and the mask of a batched decoder step after a KV cache, built from a blank cell.

Each wrong answer is written as a learner would write it; the build exercise's
known mistakes are also run twice, for the staged hints.
"""

import numpy as np
import pytest

from helpers import attention_np as anp
from helpers.checks import CheckFailed, check_decoder_mask, check_mask_conversion
from tests.checks.catalogue import right, topic_tests, wrong
from tests.checks.staged import assert_staged

# --------------------------------------------------------------------------
# Right answers
# --------------------------------------------------------------------------


def to_ours(mask, convention):
    mask = np.asarray(mask)
    if convention in ("seed003", "additive"):
        return mask == 0
    if convention == "key_padding":
        return ~mask[:, None, None, :]
    if convention == "mha_attn_mask":
        return ~mask
    if convention == "keep_01":
        return (mask == 1)[:, None, None, :]
    raise ValueError(convention)


def to_ours_4d(mask, convention):
    """Every answer widened to 4-D: (n, m) masks as (1, 1, n, m) broadcast too."""
    out = to_ours(mask, convention)
    return out.reshape((1,) * (4 - out.ndim) + out.shape)


def decoder_mask(lengths, n_new, cache_len):
    m = cache_len + n_new
    i = np.arange(n_new)[:, None]  # (n_new, 1)
    j = np.arange(m)[None, :]  # (1, m)
    causal = j <= i + cache_len  # (n_new, m)
    real = j < np.asarray(lengths)[:, None, None, None]  # (batch, 1, 1, m)
    return causal & real  # (batch, 1, n_new, m)


def decoder_mask_loops(lengths, n_new, cache_len):
    m = cache_len + n_new
    mask = np.zeros((len(lengths), 1, n_new, m), dtype=bool)
    for b, length in enumerate(lengths):
        for i in range(n_new):
            for j in range(m):
                mask[b, 0, i, j] = j <= cache_len + i and j < length
    return mask


def decoder_mask_from_tril(lengths, n_new, cache_len):
    """Reuses a lower-right causal mask (exercise 5.1) written by the learner."""
    m = cache_len + n_new
    causal = np.tril(np.ones((n_new, m), dtype=bool), k=m - n_new)
    real = np.arange(m) < np.asarray(lengths)[:, None]  # (batch, m)
    return causal[None, None] & real[:, None, None, :]


# --------------------------------------------------------------------------
# Wrong answers
# --------------------------------------------------------------------------


def key_padding_two_axes(mask, convention):
    if convention == "key_padding":
        return ~mask[:, None, :]
    return to_ours(mask, convention)


def keep_01_no_axes(mask, convention):
    if convention == "keep_01":
        return mask == 1
    return to_ours(mask, convention)


def mha_unchanged(mask, convention):
    return mask if convention == "mha_attn_mask" else to_ours(mask, convention)


def seed003_one_minus(mask, convention):
    return 1 - mask if convention == "seed003" else to_ours(mask, convention)


def additive_as_bool(mask, convention):
    return mask.astype(bool) if convention == "additive" else to_ours(mask, convention)


def decoder_upper_left(lengths, n_new, cache_len):
    m = cache_len + n_new
    causal = np.tril(np.ones((n_new, m), dtype=bool))
    return causal & (np.arange(m) < np.asarray(lengths)[:, None, None, None])


def decoder_padding_on_queries(lengths, n_new, cache_len):
    m = cache_len + n_new
    i = np.arange(n_new)[:, None]
    causal = np.arange(m)[None, :] <= i + cache_len
    real_query = (cache_len + i) < np.asarray(lengths)[:, None, None, None]
    return causal & real_query  # (batch, 1, n_new, m)


def decoder_flipped(lengths, n_new, cache_len):
    return ~decoder_mask(lengths, n_new, cache_len)


def decoder_off_by_one(lengths, n_new, cache_len):
    m = cache_len + n_new
    causal = np.arange(m)[None, :] < np.arange(n_new)[:, None] + cache_len
    return causal & (np.arange(m) < np.asarray(lengths)[:, None, None, None])


def decoder_one_too_many(lengths, n_new, cache_len):
    m = cache_len + n_new
    causal = np.arange(m)[None, :] <= np.arange(n_new)[:, None] + cache_len + 1
    return causal & (np.arange(m) < np.asarray(lengths)[:, None, None, None])


def decoder_cache_keys_only(lengths, n_new, cache_len):
    return decoder_mask(lengths, n_new, cache_len)[..., :cache_len]


def decoder_no_padding(lengths, n_new, cache_len):
    mask = decoder_mask([cache_len + n_new] * len(lengths), n_new, cache_len)
    return mask


def key_padding_keys_on_queries(mask, convention):
    if convention == "key_padding":
        return ~mask[:, None, :, None]
    return to_ours(mask, convention)


def seed003_flipped(mask, convention):
    if convention == "seed003":
        return mask == 1
    return to_ours(mask, convention)


def keep_01_int(mask, convention):
    mask = np.asarray(mask)
    if convention == "seed003":
        return mask == 0
    if convention == "additive":
        return mask == 0
    if convention == "key_padding":
        return ~mask[:, None, None, :]
    if convention == "mha_attn_mask":
        return ~mask
    if convention == "keep_01":
        return mask[:, None, None, :]
    raise ValueError(convention)


def decoder_padding_inclusive(lengths, n_new, cache_len):
    m = cache_len + n_new
    lengths = np.asarray(lengths)
    causal = np.arange(m)[None, :] <= np.arange(n_new)[:, None] + cache_len
    real = np.arange(m) <= lengths[:, None, None, None]
    return causal & real


def decoder_query_padding_lines(lengths, n_new, cache_len):
    lengths = np.asarray(lengths)
    m = cache_len + n_new
    i = np.arange(n_new)[:, None]
    causal = np.arange(m)[None, :] <= i + cache_len
    real_query = (cache_len + i) < lengths[:, None, None, None]
    return causal & real_query


def decoder_with_helpers(lengths, n_new, cache_len):
    m = cache_len + n_new
    return anp.padding_mask(np.asarray(lengths), m) & anp.causal_mask(n_new, m)


RIGHT = [
    right(
        check_mask_conversion,
        to_ours,
        prints="✓ check_mask_conversion: all 5 conventions converted",
    ),
    right(
        check_mask_conversion,
        to_ours_4d,
        prints="✓ check_mask_conversion: all 5 conventions converted",
    ),
    right(check_decoder_mask, decoder_mask),
    right(check_decoder_mask, decoder_mask_loops),
    right(check_decoder_mask, decoder_mask_from_tril),
]

DECODER_WRONG = [
    (decoder_upper_left, "see only the first keys"),
    (decoder_padding_on_queries, "padding is on the wrong axis"),
    (decoder_flipped, "polarity is flipped"),
    (decoder_off_by_one, "one key off"),
    (decoder_one_too_many, "one key off"),
    (decoder_cache_keys_only, "the keys are the cached ones and the new ones"),
    (decoder_no_padding, "attend to padded keys"),
    (decoder_padding_inclusive, "your padding boundary is one key off"),
]

WRONG = [
    *wrong(
        check_mask_conversion,
        [
            (key_padding_two_axes, "its batch axis (size 4) lands on the heads axis"),
            (keep_01_no_axes, "its batch axis (size 4) lands on the query axis"),
            (mha_unchanged, "'mha_attn_mask' conversion is True exactly where"),
            (seed003_one_minus, "returns dtype float64, not bool"),
            (additive_as_bool, "polarity is flipped"),
            (key_padding_keys_on_queries, "its key axis (size 5) lands on the query"),
            (keep_01_int, "returns dtype int64, not bool"),
        ],
    ),
    *wrong(check_decoder_mask, DECODER_WRONG),
    *wrong(check_decoder_mask, [(decoder_with_helpers, "asks you to do without")]),
]

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


@pytest.mark.parametrize(
    ("fn", "says"), DECODER_WRONG, ids=lambda x: getattr(x, "__name__", str(x))[:30]
)
def test_decoder_hints_come_in_steps(fn, says, capsys):
    assert_staged(check_decoder_mask, (fn,), says, capsys)


def test_conversion_hints_come_in_steps(capsys):
    assert_staged(check_mask_conversion, (mha_unchanged,), "polarity", capsys)


def test_the_reference_is_the_helpers():
    """The checker's own mask equals padding_mask & causal_mask (lower-right)."""
    from helpers.checks.decoder_masks import _decoder

    lengths = np.array([6, 3, 5])
    m = 4 + 2
    want = anp.padding_mask(lengths, m) & anp.causal_mask(2, m)
    np.testing.assert_array_equal(_decoder(lengths, 2, 4), want)


def test_the_helpers_are_back_after_the_check():
    before = anp.causal_mask, anp.padding_mask
    with pytest.raises(AssertionError):
        check_decoder_mask(decoder_with_helpers)
    assert (anp.causal_mask, anp.padding_mask) == before


def _where(checker, fn):
    with pytest.raises(CheckFailed) as info:
        checker(fn)
    return info.value


@pytest.mark.parametrize(
    ("fn", "code"),
    [
        (key_padding_two_axes, "return ~mask[:, None, :]"),
        (seed003_flipped, "return mask == 1"),
        (keep_01_int, "return mask[:, None, None, :]"),
        (key_padding_keys_on_queries, "return ~mask[:, None, :, None]"),
    ],
    ids=lambda x: getattr(x, "__name__", "")[:30],
)
def test_conversion_look_at_is_that_conventions_line(fn, code):
    err = _where(check_mask_conversion, fn)
    assert err.where.endswith(code), err.where


@pytest.mark.parametrize(
    ("fn", "code"),
    [
        (
            decoder_query_padding_lines,
            "real_query = (cache_len + i) < lengths[:, None, None, None]",
        ),
        (
            decoder_padding_inclusive,
            "real = np.arange(m) <= lengths[:, None, None, None]",
        ),
        (
            decoder_off_by_one,
            "causal = np.arange(m)[None, :] < np.arange(n_new)[:, None] + cache_len",
        ),
    ],
    ids=lambda x: getattr(x, "__name__", "")[:30],
)
def test_decoder_look_at_is_the_line_with_the_mistake(fn, code):
    err = _where(check_decoder_mask, fn)
    assert err.where.endswith(code), err.where


def test_decoder_case_shows_the_lengths():
    err = _where(check_decoder_mask, decoder_padding_inclusive)
    assert "lengths=[6, 4, 5]" in err.case


def test_the_batch_axis_is_not_blamed_when_the_key_axis_is_wrong():
    err = _where(check_mask_conversion, key_padding_keys_on_queries)
    assert "batch axis" not in err.diagnosis


def test_a_mistake_on_another_convention_starts_at_step_one():
    """Polarity flipped on seed003, then on mha_attn_mask: no why on the second."""
    first = _where(check_mask_conversion, seed003_flipped)
    second = _where(check_mask_conversion, mha_unchanged)
    assert first.stage == second.stage == 1
    assert "Why" not in second.diagnosis
    again = _where(check_mask_conversion, mha_unchanged)
    assert again.stage == 2 and "Why" in again.diagnosis
