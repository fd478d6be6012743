"""The checkers added for issue 11 name each known mistake and accept right answers.

Every wrong implementation here is written the way a learner might write it,
independently of the variants inside the checkers; each must be rejected with
a ``CheckFailed`` whose message contains the diagnosis.
"""

import math
import re

import numpy as np
import pytest

from helpers import attention_np as anp
from helpers import checks
from helpers.checks import _engine as ck

pytestmark = pytest.mark.filterwarnings(
    "error::helpers.checks._engine.CheckerBugWarning"
)

# --------------------------------------------------------------------------
# Right answers
# --------------------------------------------------------------------------


def softmax_rows(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention(Q, K, V):
    w = softmax_rows(Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1]))
    return w @ V, w


def masked_softmax(scores, mask):
    s = np.where(mask, scores, -np.inf)  # (..., n, m), dtype of scores
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1, total)


def logsumexp(x):
    top = x.max()
    return float(top + np.log(np.exp(x - top).sum()))


def merge_stats(m1, l1, m2, l2):
    m = max(m1, m2)
    if m == -math.inf:  # two empty blocks
        return m, 0.0
    return m, l1 * math.exp(m1 - m) + l2 * math.exp(m2 - m)


def jacobian(a):
    return np.diag(a) - np.outer(a, a)


def entropy(scores):
    log_a = np.log(softmax_rows(scores) + 1e-300)
    return -(softmax_rows(scores) * log_a).sum(-1)


def find_temperature(raw_scores, target_entropy, low=1e-2, high=1e3, steps=60):
    for _ in range(steps):
        mid = math.sqrt(low * high)
        if entropy(raw_scores / mid).mean() < target_entropy:
            low = mid
        else:
            high = mid
    return math.sqrt(low * high)


ZERO_4 = [[0, 1, 1, 1], [0, 0, 1, 1], [0, 0, 0, 1], [0, 0, 0, 0]]
ZERO_2 = [[0, 1, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1]]
ZERO_0 = [[1, 1, 1, 1]] * 4


def zero_weights():
    return np.array([ZERO_4, ZERO_2, ZERO_0], dtype=bool)


def self_attention(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    w = softmax_rows(Q @ K.T / math.sqrt(W_Q.shape[1]))
    return w @ V, w


def shuffle(K, V, rng):
    perm = rng.permutation(len(K))
    return K[perm], V[perm], perm


def update(m, l, acc, scores_block, V_block):
    m_new = np.maximum(m, scores_block.max(axis=1, keepdims=True))
    P = np.exp(scores_block - m_new)
    c = np.exp(m - m_new)
    return m_new, c * l + P.sum(axis=1, keepdims=True), c * acc + P @ V_block


def finish(m, l, acc):
    return acc / l, m + np.log(l)


# --------------------------------------------------------------------------
# Wrong answers, the way learners write them
# --------------------------------------------------------------------------


def attention_columns(Q, K, V):
    s = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    e = np.exp(s - s.max(axis=-2, keepdims=True))
    w = e / e.sum(axis=-2, keepdims=True)
    return w @ V, w


def attention_np_sqrt(Q, K, V):
    """Right in float64; np.sqrt turns float32 inputs into float64 (NumPy 2)."""
    w = softmax_rows(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))
    return w @ V, w


def attention_sqrt_d_v(Q, K, V):
    w = softmax_rows(Q @ np.swapaxes(K, -1, -2) / math.sqrt(V.shape[-1]))
    return w @ V, w


def attention_K_T(Q, K, V):
    w = softmax_rows(Q @ K.T / math.sqrt(Q.shape[-1]))
    return w @ V, w


def attention_unscaled(Q, K, V):
    w = softmax_rows(Q @ np.swapaxes(K, -1, -2))
    return w @ V, w


def one_query_sqrt_d_v(q, K, V, scale=None):
    scale = 1 / math.sqrt(V.shape[1]) if scale is None else scale
    w = softmax_rows(K @ q * scale)
    return w @ V, w, np.exp(K @ q * scale).sum()


def sdpa_sqrt_d_v(Q, K, V, mask=None, scale=None):
    scale = 1 / math.sqrt(V.shape[-1]) if scale is None else scale
    return anp.scaled_dot_product_attention(Q, K, V, mask=mask, scale=scale)


def softmax_global_max(x, axis=-1):
    e = np.exp(x - np.max(x))
    return e / e.sum(axis=axis, keepdims=True)


def sdpa_global_max(Q, K, V, mask=None, scale=None):
    scale = 1 / math.sqrt(Q.shape[-1]) if scale is None else scale
    s = Q @ np.swapaxes(K, -1, -2) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max())
    total = e.sum(axis=-1, keepdims=True)
    w = e / np.where(total == 0, 1, total)
    return w @ V, w


def mha_wrong_axis(X, W_Q, W_K, W_V, W_O, num_heads, mask=None, kv=None):
    """The issue's crash: the softmax runs over the queries (axis -2)."""
    source = X if kv is None else kv
    batch, n, d_model = X.shape
    d_k = d_model // num_heads

    def split(t):
        return t.reshape(batch, t.shape[1], num_heads, d_k).transpose(0, 2, 1, 3)

    s = split(X @ W_Q) @ np.swapaxes(split(source @ W_K), -1, -2) / math.sqrt(d_k)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = anp.softmax(s, axis=-2)
    merged = (w @ split(source @ W_V)).transpose(0, 2, 1, 3).reshape(batch, n, d_model)
    return merged @ W_O, w


def masked_minus_1e9(scores, mask):
    return softmax_rows(np.where(mask, scores, -1e9))


def masked_minus_1e9_times_any(scores, mask):
    """Fine in float32, NaN in float16, where -1e9 is -inf."""
    w = softmax_rows(np.where(mask, scores, -1e9))
    return w * np.broadcast_to(mask, w.shape).any(axis=-1, keepdims=True)


def masked_unguarded(scores, mask):
    return softmax_rows(np.where(mask, scores, -np.inf))


def masked_flipped(scores, mask):
    return masked_softmax(scores, ~mask)


def masked_after(scores, mask):
    return softmax_rows(scores) * mask


def masked_float64(scores, mask):
    return masked_softmax(scores.astype(np.float64), mask)


def masked_no_max(scores, mask):
    e = np.exp(np.where(mask, scores, -np.inf))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1, total)


def lse_naive(x):
    return float(np.log(np.exp(x).sum()))


def lse_forgot_m(x):
    return float(np.log(np.exp(x - x.max()).sum()))


def lse_no_log(x):
    return float(x.max() + np.exp(x - x.max()).sum())


def lse_min_shift(x):
    low = x.min()
    return float(low + np.log(np.exp(x - low).sum()))


def merge_unguarded(m1, l1, m2, l2):
    """Right for every pair but two empty blocks: exp(-inf - (-inf)) is nan."""
    m = max(m1, m2)
    return m, l1 * math.exp(m1 - m) + l2 * math.exp(m2 - m)


def merge_one_side(m1, l1, m2, l2):
    m = max(m1, m2)
    return m, l1 + l2 * math.exp(m2 - m)


def merge_plain_sums(m1, l1, m2, l2):
    return max(m1, m2), l1 * math.exp(m1) + l2 * math.exp(m2)


def merge_no_rescale(m1, l1, m2, l2):
    return max(m1, m2), l1 + l2


def merge_inverted(m1, l1, m2, l2):
    m = max(m1, m2)
    return m, l1 * math.exp(m - m1) + l2 * math.exp(m - m2)


def jacobian_no_outer(a):
    return np.diag(a)


def jacobian_elementwise(a):
    return np.diag(a) - a * a


def temperature_wrong_end(raw_scores, target_entropy, low=1e-2, high=1e3, steps=60):
    for _ in range(steps):
        mid = math.sqrt(low * high)
        if entropy(raw_scores / mid).mean() < target_entropy:
            high = mid  # the wrong end
        else:
            low = mid
    return math.sqrt(low * high)


def temperature_returns_scale(raw_scores, target_entropy, low=1e-2, high=1e3):
    return 1 / find_temperature(raw_scores, target_entropy, low, high)


def zero_uniform_empty_row():
    """Believes a fully masked row spreads its weight evenly: no zero there."""
    return np.array([ZERO_4, ZERO_2, [[0] * 4] * 4], dtype=bool)


def zero_causal_only():
    return np.array([ZERO_4] * 3, dtype=bool)


def zero_flipped():
    return ~zero_weights()


def zero_transposed():
    return zero_weights().transpose(0, 2, 1)


def self_attention_sqrt_d_v(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    w = softmax_rows(Q @ K.T / math.sqrt(W_V.shape[1]))
    return w @ V, w


def self_attention_sqrt_d_model(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    w = softmax_rows(Q @ K.T / math.sqrt(X.shape[1]))
    return w @ V, w


def self_attention_naive(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    e = np.exp(Q @ K.T / math.sqrt(Q.shape[1]))
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, w


def shuffle_keys_only(K, V, rng):
    perm = rng.permutation(len(K))
    return K[perm], V, perm


def shuffle_two_perms(K, V, rng):
    perm = rng.permutation(len(K))
    return K[perm], V[rng.permutation(len(V))], perm


def shuffle_in_place(K, V, rng):
    perm = rng.permutation(len(K))
    K[:] = K[perm]
    V[:] = V[perm]
    return K, V, perm


def update_fa1(m, l, acc, scores_block, V_block):
    """FlashAttention-1: acc is kept normalised, renormalised every step."""
    m_new = np.maximum(m, scores_block.max(axis=1, keepdims=True))
    P = np.exp(scores_block - m_new)
    c = np.exp(m - m_new)
    l_new = c * l + P.sum(axis=1, keepdims=True)
    return m_new, l_new, (c * l * acc + P @ V_block) / l_new


def finish_fa1(m, l, acc):
    return acc, m + np.log(l)


def update_no_rescale_l(m, l, acc, scores_block, V_block):
    m_new = np.maximum(m, scores_block.max(axis=1, keepdims=True))
    P = np.exp(scores_block - m_new)
    c = np.exp(m - m_new)
    return m_new, l + P.sum(axis=1, keepdims=True), c * acc + P @ V_block


def update_inverted(m, l, acc, scores_block, V_block):
    m_new = np.maximum(m, scores_block.max(axis=1, keepdims=True))
    P = np.exp(scores_block - m_new)
    c = np.exp(m_new - m)
    return m_new, c * l + P.sum(axis=1, keepdims=True), c * acc + P @ V_block


def update_no_rescale_acc(m, l, acc, scores_block, V_block):
    m_new = np.maximum(m, scores_block.max(axis=1, keepdims=True))
    P = np.exp(scores_block - m_new)
    c = np.exp(m - m_new)
    return m_new, c * l + P.sum(axis=1, keepdims=True), acc + P @ V_block


def update_old_max(m, l, acc, scores_block, V_block):
    m_new = np.maximum(m, scores_block.max(axis=1, keepdims=True))
    P = np.exp(scores_block - np.where(np.isfinite(m), m, 0))
    c = np.exp(m - m_new)
    return m_new, c * l + P.sum(axis=1, keepdims=True), c * acc + P @ V_block


def finish_no_divide(m, l, acc):
    return acc, m + np.log(l)


def finish_forgot_m(m, l, acc):
    return acc / l, np.log(l)


def finish_flat_lse(m, l, acc):
    return acc / l, (m + np.log(l))[:, 0]


RIGHT = [
    (checks.check_attention, attention),
    (checks.check_masked_softmax, masked_softmax),
    (checks.check_logsumexp, logsumexp),
    (checks.check_merge_stats, merge_stats),
    (checks.check_softmax_jacobian, jacobian),
    (checks.check_find_temperature, find_temperature),
    (checks.check_zero_weights, zero_weights),
    (checks.check_self_attention, self_attention),
    (checks.check_shuffle_keys_and_values, shuffle),
    (lambda fn: checks.check_online_softmax(*fn), (update, finish)),
]

WRONG = [
    # lesson 02 exercise 1: scale and batch axes only
    (checks.check_attention, attention_columns, "columns sum to 1"),
    (checks.check_attention, attention_sqrt_d_v, "sqrt(d_v)"),
    (checks.check_attention, attention_K_T, "np.swapaxes(K, -1, -2)"),
    (checks.check_attention, attention_unscaled, "not scaled"),
    (checks.check_attention, attention_np_sqrt, "math.sqrt(d_k)"),
    # issue 11.13: sqrt(d_v) and the global max in the older checkers
    (checks.check_attention_one_query, one_query_sqrt_d_v, "sqrt(d_v)"),
    (checks.check_scaled_dot_product_attention, sdpa_sqrt_d_v, "sqrt(d_v)"),
    (checks.check_softmax, softmax_global_max, "max of the whole array"),
    (checks.check_scaled_dot_product_attention, sdpa_global_max, "whole array"),
    # issue 11.12: the crash of the issue is now a diagnosis
    (checks.check_multi_head_attention, mha_wrong_axis, "columns sum to 1"),
    # lesson 03 exercise 1: float16 under a mask
    (checks.check_masked_softmax, masked_minus_1e9, "spreads the weight evenly"),
    (
        checks.check_masked_softmax,
        masked_minus_1e9_times_any,
        "np.float16(-1e9) is -inf",
    ),
    (checks.check_masked_softmax, masked_unguarded, "gives nan"),
    (checks.check_masked_softmax, masked_flipped, "polarity is flipped"),
    (checks.check_masked_softmax, masked_after, "after the softmax"),
    (checks.check_masked_softmax, masked_float64, "float64 but the scores were"),
    (checks.check_masked_softmax, masked_no_max, "overflows float16"),
    # lesson 03 exercises 2 and 3
    (checks.check_logsumexp, lse_naive, "overflows"),
    (checks.check_logsumexp, lse_forgot_m, "add the max back"),
    (checks.check_logsumexp, lse_no_log, "needs its log"),
    (checks.check_logsumexp, lse_min_shift, "min of x"),
    (checks.check_merge_stats, merge_unguarded, "two empty blocks"),
    (checks.check_merge_stats, merge_no_rescale, "did not rescale both sums"),
    (checks.check_merge_stats, merge_one_side, "both"),
    (checks.check_merge_stats, merge_plain_sums, "overflow"),
    (checks.check_merge_stats, merge_inverted, "upside down"),
    # lesson 04 exercises 2 and 3
    (checks.check_softmax_jacobian, jacobian_no_outer, "only diag(a)"),
    (checks.check_softmax_jacobian, jacobian_elementwise, "outer product"),
    (checks.check_find_temperature, temperature_wrong_end, "you moved the wrong end"),
    (checks.check_find_temperature, temperature_returns_scale, "returned 1/T"),
    # lesson 05 exercise 3
    (
        checks.check_zero_weights,
        zero_uniform_empty_row,
        "fully masked row gets all-zero",
    ),
    (checks.check_zero_weights, zero_causal_only, "causal zeros only"),
    (checks.check_zero_weights, zero_flipped, "flipped"),
    (checks.check_zero_weights, zero_transposed, "transposed"),
    # lesson 06 exercise 2
    (checks.check_self_attention, self_attention_sqrt_d_v, "sqrt(d_v)"),
    (checks.check_self_attention, self_attention_sqrt_d_model, "sqrt(d_model)"),
    (checks.check_self_attention, self_attention_naive, "overflows"),
    # lesson 02 exercise 3
    (checks.check_shuffle_keys_and_values, shuffle_keys_only, "not the values"),
    (checks.check_shuffle_keys_and_values, shuffle_two_perms, "second permutation"),
    (checks.check_shuffle_keys_and_values, shuffle_in_place, "in place"),
]

ONLINE_WRONG = [
    ((update_fa1, finish_fa1), "FlashAttention-1"),
    ((update_no_rescale_l, finish), "l is not rescaled"),
    ((update_inverted, finish), "upside down"),
    ((update_no_rescale_acc, finish), "acc is not rescaled"),
    ((update_old_max, finish), "off by one factor per query"),
    ((update, finish_no_divide), "out = acc / l"),
    ((update, finish_forgot_m), "logsumexp = m + np.log(l)"),
    ((update, finish_flat_lse), "should be (n, 1)"),
]


@pytest.mark.parametrize(
    ("checker", "fn"), RIGHT, ids=lambda x: getattr(x, "__name__", "")
)
def test_accepts_the_right_answer(checker, fn, capsys):
    assert checker(fn) is True
    assert "✓" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("checker", "fn", "keyword"), WRONG, ids=[w[1].__name__ for w in WRONG]
)
def test_names_the_mistake(checker, fn, keyword):
    with pytest.raises(ck.CheckFailed, match=re.escape(keyword)):
        checker(fn)


@pytest.mark.parametrize(
    ("fns", "keyword"),
    ONLINE_WRONG,
    # ids from names, never from reprs: pytest-xdist needs the same ids in every worker
    ids=[
        f"{k}-{'+'.join(f.__name__ for f in fns)}"
        for k, (fns, _) in enumerate(ONLINE_WRONG)
    ],
)
def test_online_softmax_names_the_mistake(fns, keyword):
    with pytest.raises(ck.CheckFailed, match=re.escape(keyword)):
        checks.check_online_softmax(*fns)


def test_the_fa1_learner_passes_the_whole_loop_but_is_told():
    """FA-1 is a right algorithm; the exercise asks for FA-2's state."""
    scores = np.random.default_rng(0).normal(size=(3, 8))
    V = np.random.default_rng(1).normal(size=(8, 2))
    state = (np.full((3, 1), -np.inf), np.zeros((3, 1)), np.zeros((3, 2)))
    for cut in (slice(0, 3), slice(3, 8)):
        state = update_fa1(*state, scores[:, cut], V[cut])
    np.testing.assert_allclose(finish_fa1(*state)[0], anp.softmax(scores) @ V)
    with pytest.raises(ck.CheckFailed, match="divide by l once"):
        checks.check_online_softmax(update_fa1, finish_fa1)


def update_lists(m, l, acc, scores_block, V_block):
    """Right values, returned as Python lists: each step passes, finish cannot."""
    return tuple(x.tolist() for x in update(m, l, acc, scores_block, V_block))


def test_online_softmax_names_an_update_that_returns_lists():
    """The whole loop reports finish's TypeError and the list types, not 'state'."""
    with pytest.raises(ck.CheckFailed) as caught:
        checks.check_online_softmax(update_lists, finish)
    message = str(caught.value)
    assert "your finish raised TypeError" in message
    assert "returns (list, list, list)" in message
    assert "return NumPy arrays" in message
    assert "keep state" not in message


def test_every_checker_is_exported_from_checks():
    names = [n for n in checks.__all__ if n.startswith("check_")]
    assert len(names) == 16
    for name in names:
        assert callable(getattr(checks, name))


def test_masked_softmax_names_the_dtype_it_was_given():
    """Case 1 is float32: the message must not speak of float16."""
    with pytest.raises(ck.CheckFailed, match="promotes float32 to float64"):
        checks.check_masked_softmax(masked_float64)


def test_merge_of_two_empty_blocks_is_empty(capsys):
    """The reference merge keeps (-inf, 0) for two empty blocks, never nan."""
    assert merge_stats(-math.inf, 0.0, -math.inf, 0.0) == (-math.inf, 0.0)
    assert checks.check_merge_stats(merge_stats) is True
    assert "11 cases passed" in capsys.readouterr().out


def masked_global_max(scores, mask):
    s = np.where(mask, scores, -np.inf)
    e = np.exp(s - scores.max())
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1, total)


def test_masked_softmax_names_the_global_max():
    with pytest.raises(ck.CheckFailed, match="not of each row"):
        checks.check_masked_softmax(masked_global_max)


def softmax_max_over_columns(x, axis=-1):
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def softmax_flipped_exponent(x, axis=-1):
    e = np.exp(x.max(axis=axis, keepdims=True) - x)
    return e / e.sum(axis=axis, keepdims=True)


def attention_times_sqrt(Q, K, V):
    w = softmax_rows(Q @ np.swapaxes(K, -1, -2) * math.sqrt(Q.shape[-1]))
    return w @ V, w


def attention_sqrt_n(Q, K, V):
    w = softmax_rows(Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-2]))
    return w @ V, w


def attention_no_exp(Q, K, V):
    s = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    w = s / s.sum(axis=-1, keepdims=True)
    return w @ V, w


def causal_without_diagonal(n, m):
    return np.arange(m)[None, :] < np.arange(n)[:, None] + (m - n)


def self_attention_query_from_W_K(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_K, X @ W_K, X @ W_V
    w = softmax_rows(Q @ K.T / math.sqrt(W_Q.shape[1]))
    return w @ V, w


MORE_WRONG = [
    (checks.check_softmax, softmax_max_over_columns, "max along axis 0"),
    (checks.check_softmax, softmax_flipped_exponent, "max - x instead of x - max"),
    (checks.check_attention, attention_times_sqrt, "multiplied the scores by sqrt"),
    (checks.check_attention, attention_sqrt_n, "number of queries"),
    (checks.check_attention, attention_no_exp, "forgot np.exp"),
    (checks.check_causal_mask, causal_without_diagonal, "leaves out the diagonal"),
    (checks.check_self_attention, self_attention_query_from_W_K, "wrong matrix"),
]


@pytest.mark.parametrize(
    ("checker", "fn", "keyword"), MORE_WRONG, ids=[w[1].__name__ for w in MORE_WRONG]
)
def test_names_a_slip_inside_the_formula(checker, fn, keyword):
    with pytest.raises(ck.CheckFailed, match=re.escape(keyword)):
        checker(fn)
