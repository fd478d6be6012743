"""Exercise checkers: run the learner's function and name the likely mistake.

Each ``check_*`` takes the learner's function, runs it on a few seeded random
cases (n != m, d_v != d_k, batch axes, masks, large scores) and compares it
with the matching helper in ``helpers.attention_np``. On success it prints one
line and returns True:

    >>> checks.check_softmax(my_softmax)
    ✓ check_softmax: 6 cases passed

On failure it raises :class:`CheckFailed`, an AssertionError that names the
most likely mistake, the case, and where to look; in a notebook it shows a few
short lines instead of a traceback through the checker. To find the mistake,
the checker recomputes the case the way each common mistake would (softmax
over the wrong axis, no scaling, mask applied after the softmax, ...) and
reports the one whose result equals the learner's; when none does, it reads
properties of the answer (rows sum to 1, the mask is obeyed) and finally shows
where the answer differs from the reference.

The catalogue of mistakes lives beside each exercise, one module per topic:

- ``checks_softmax``, lessons 01 and 03: ``check_softmax``,
  ``check_masked_softmax``;
- ``checks_logsumexp``, lesson 03: ``check_logsumexp``, ``check_merge_stats``;
- ``checks_scale``, lesson 04: ``check_softmax_jacobian``,
  ``check_find_temperature``;
- ``checks_attention``, lessons 01 and 02: ``check_attention_one_query``,
  ``check_attention``, ``check_scaled_dot_product_attention``,
  ``check_shuffle_keys_and_values``;
- ``checks_masks``, lesson 05: ``check_causal_mask``, ``check_zero_weights``;
- ``checks_self_attention``, lesson 06: ``check_self_attention``;
- ``checks_heads``, lesson 07: ``check_split_heads``,
  ``check_multi_head_attention``;
- ``checks_online``, lesson 08: ``check_online_softmax``.

Lessons 10 and 11 (torch) import their own: ``helpers.checks_transformer`` and
``helpers.checks_induction``.

The machinery they share (running a case, explaining a mismatch, the short
failure) is in ``helpers._checking``; mistakes shared by several attention
checkers are in ``helpers._checking_mistakes``.
"""

from helpers._checking import CheckFailed
from helpers.checks_attention import (
    check_attention,
    check_attention_one_query,
    check_scaled_dot_product_attention,
    check_shuffle_keys_and_values,
)
from helpers.checks_heads import check_multi_head_attention, check_split_heads
from helpers.checks_logsumexp import check_logsumexp, check_merge_stats
from helpers.checks_masks import check_causal_mask, check_zero_weights
from helpers.checks_online import check_online_softmax
from helpers.checks_scale import check_find_temperature, check_softmax_jacobian
from helpers.checks_self_attention import check_self_attention
from helpers.checks_softmax import check_masked_softmax, check_softmax

__all__ = [
    "CheckFailed",
    "check_softmax",
    "check_attention_one_query",
    "check_attention",
    "check_scaled_dot_product_attention",
    "check_shuffle_keys_and_values",
    "check_masked_softmax",
    "check_logsumexp",
    "check_merge_stats",
    "check_softmax_jacobian",
    "check_find_temperature",
    "check_causal_mask",
    "check_zero_weights",
    "check_self_attention",
    "check_split_heads",
    "check_multi_head_attention",
    "check_online_softmax",
]
