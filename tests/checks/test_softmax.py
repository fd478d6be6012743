"""check_softmax and check_masked_softmax (helpers.checks.softmax), lessons 01 and 03.

Every wrong implementation here is written the way a learner might write it,
independently of the variants inside the checkers; each must be rejected with
a message that names the mistake.
"""

import numpy as np
import pytest

from helpers import attention_np as anp
from helpers.checks import CheckFailed, check_masked_softmax, check_softmax
from tests.checks.catalogue import right, simple_softmax, topic_tests, wrong

# --------------------------------------------------------------------------
# Right answers
# --------------------------------------------------------------------------


def masked_softmax(scores, mask):
    s = np.where(mask, scores, -np.inf)  # (..., n, m), dtype of scores
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1, total)


# --------------------------------------------------------------------------
# softmax: wrong answers
# --------------------------------------------------------------------------


def softmax_axis_0(x, axis=-1):
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def softmax_ignores_axis(x, axis=-1):
    return simple_softmax(x, -1)


def softmax_no_max(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def softmax_not_normalised(x, axis=-1):
    return np.exp(x - x.max(axis=axis, keepdims=True))


def softmax_divides_by_max(x, axis=-1):
    e = np.exp(x)
    return e / e.max(axis=axis, keepdims=True)


def softmax_flattened(x, axis=-1):
    return simple_softmax(x, axis).ravel()


def softmax_no_keepdims(x, axis=-1):
    e = np.exp(x - x.max(axis=axis))
    return e / e.sum(axis=axis)


def softmax_in_place(x, axis=-1):
    x -= x.max(axis=axis, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=axis, keepdims=True)
    return x


def softmax_no_return(x, axis=-1):
    simple_softmax(x, axis)


def softmax_returns_z_too(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    Z = e.sum(axis=axis)
    return e / Z[..., None], Z


def softmax_returns_text(x, axis=-1):
    return str(simple_softmax(x, axis))


def softmax_global_max(x, axis=-1):
    e = np.exp(x - np.max(x))
    return e / e.sum(axis=axis, keepdims=True)


def softmax_max_over_columns(x, axis=-1):
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def softmax_flipped_exponent(x, axis=-1):
    e = np.exp(x.max(axis=axis, keepdims=True) - x)
    return e / e.sum(axis=axis, keepdims=True)


# --------------------------------------------------------------------------
# masked_softmax (lesson 03 exercise 1, float16 under a mask): wrong answers
# --------------------------------------------------------------------------


def masked_minus_1e9(scores, mask):
    return simple_softmax(np.where(mask, scores, -1e9))


def masked_minus_1e9_times_any(scores, mask):
    """Fine in float32, NaN in float16, where -1e9 is -inf."""
    w = simple_softmax(np.where(mask, scores, -1e9))
    return w * np.broadcast_to(mask, w.shape).any(axis=-1, keepdims=True)


def masked_unguarded(scores, mask):
    return simple_softmax(np.where(mask, scores, -np.inf))


def masked_flipped(scores, mask):
    return masked_softmax(scores, ~mask)


def masked_after(scores, mask):
    return simple_softmax(scores) * mask


def masked_float64(scores, mask):
    return masked_softmax(scores.astype(np.float64), mask)


def masked_no_max(scores, mask):
    e = np.exp(np.where(mask, scores, -np.inf))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1, total)


def masked_global_max(scores, mask):
    s = np.where(mask, scores, -np.inf)
    e = np.exp(s - scores.max())
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1, total)


def softmax_calls_the_helper(x, axis=-1):
    return anp.softmax(x, axis=axis)


def masked_with_the_helper(scores, mask):
    return anp.softmax(np.where(mask, scores, -np.inf)).astype(scores.dtype)


RIGHT = [
    right(check_softmax, anp.softmax, id="softmax-helper"),
    right(check_softmax, simple_softmax, id="softmax-simple"),
    right(check_masked_softmax, masked_softmax),
]

WRONG = [
    *wrong(
        check_softmax,
        [
            (softmax_axis_0, "normalises over the wrong axis"),
            (softmax_ignores_axis, "normalises over the wrong axis"),
            (softmax_no_max, "nan or inf for large inputs"),
            (softmax_not_normalised, "do not sum to 1"),
            (softmax_divides_by_max, "do not sum to 1"),
            (softmax_flattened, "has shape"),
            (softmax_calls_the_helper, "you called anp.softmax"),
            (softmax_no_keepdims, "dropped the axis it reduced"),  # code: on hint
            (softmax_in_place, "changed its input `x` in place"),
            (softmax_no_return, "did you forget `return`"),
            (softmax_returns_z_too, "not an array of numbers"),
            (softmax_returns_text, "not an array of numbers"),
            (softmax_global_max, "max of the whole array"),  # issue 11.13
            # slips inside the formula
            (softmax_max_over_columns, "max along axis 0"),
            (softmax_flipped_exponent, "max - x instead of x - max"),
        ],
    ),
    *wrong(
        check_masked_softmax,
        [
            # lesson 03 exercise 1: float16 under a mask
            (masked_minus_1e9, "spreads the weight evenly"),
            (masked_with_the_helper, "you called anp.softmax"),
            (masked_minus_1e9_times_any, "np.float16(-1e9) is -inf"),
            (masked_unguarded, "gives nan"),
            (masked_flipped, "polarity is flipped"),
            (masked_after, "after the softmax"),
            (masked_float64, "float64 but the scores were"),
            (masked_no_max, "overflows float16"),
        ],
    ),
]

test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


def test_masked_softmax_names_the_dtype_it_was_given():
    """Case 1 is float32: the message must not speak of float16."""
    with pytest.raises(CheckFailed, match="promotes float32 to float64"):
        check_masked_softmax(masked_float64)


def test_masked_softmax_names_the_global_max():
    with pytest.raises(CheckFailed, match="not of each row"):
        check_masked_softmax(masked_global_max)
