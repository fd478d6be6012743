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

- ``conventions``, lesson 00: ``check_make_queries``, ``check_shape_names``,
  ``check_course_mask``;
- ``predicted``, lessons 01 and 02 (predict, then observe): ``check_key_winners``,
  ``check_predicted_shapes``;
- ``queries``, lesson 01: ``check_attention_each_query``;
- ``streaming``, lesson 03: ``check_streaming_attention``;
- ``softmax``, lessons 01 and 03: ``check_softmax``, ``check_masked_softmax``;
- ``logsumexp``, lesson 03: ``check_logsumexp``, ``check_merge_stats``;
- ``scale``, lesson 04: ``check_softmax_jacobian``, ``check_find_temperature``;
- ``sqrt_dk``, lesson 04: ``check_predict_score_std``,
  ``check_half_entropy_temperature``, ``check_softmax_backward``;
- ``attention``, lessons 01 and 02: ``check_attention_one_query``,
  ``check_attention``, ``check_scaled_dot_product_attention``;
- ``shuffle``, lesson 02: ``check_shuffle_keys_and_values``;
- ``masks``, lesson 05: ``check_causal_mask``, ``check_zero_weights``;
- ``decoder_masks``, lesson 05: ``check_mask_conversion``, ``check_decoder_mask``;
- ``self_attention``, lesson 06: ``check_self_attention``;
- ``projections``, lesson 06: ``check_predict_shapes``, ``check_shrink_prediction``;
- ``layer``, lesson 06: ``check_self_attention_layer``;
- ``heads``, lesson 07: ``check_split_heads``, ``check_multi_head_attention``;
- ``parameters``, lesson 07: ``check_parameter_count`` (torch, imported when it
  runs);
- ``online``, lesson 08: ``check_online_softmax``;
- ``tiles``, lesson 08: ``check_score_bytes``, ``check_merge_states``;
- ``tiled_attention``, lesson 08: ``check_causal_tiled_attention``;
- ``capstone``, lesson 09: ``check_d_k_experiment``, ``check_scale_experiment``,
  ``check_mask_experiment`` (predict, then observe: they train with the lesson's
  ``train``);
- ``recall``, lesson 09: ``check_recall_attention`` (the multi-head recall layer,
  built by hand: the course's attention helpers are refused);
- ``transformer``, lesson 10: ``check_rope``, ``check_grouped_query_attention``,
  ``check_decode_step``;
- ``decoding``, lesson 10: ``check_rope_halves``, ``check_cached_generation``
  (the small decoder they run, its uncached reference and the slips they name
  are in ``decoder_model``);
- ``induction``, lesson 11 (torch, imported on first use):
  ``check_prefix_matching_score``, ``check_previous_token_score``,
  ``check_prediction``;
- ``circuits``, lesson 11 (torch, imported on first use):
  ``check_induction_scores``, ``check_fixed_repeat_prediction``;
- ``delta_rule``, lesson 12: ``check_delta_step``;
- ``running_state``, lesson 12: ``check_causal_linear_attention``;
- ``linear``, lesson 12: ``check_linear_attention``;
- ``sliding_window``, lesson 13: ``check_sliding_window_mask``;
- ``ring_buffer``, lesson 13: ``check_ring_buffer_step``;
- ``sink_mla``, lesson 13: ``check_sink_attention``, ``check_mla_absorption``.

The engine they share is ``_engine`` (running a case, explaining a mismatch, the
short failure), ``_where`` (the learner's cell and line), ``_hints`` (the staged
hints every exported checker goes through) and ``_mistakes`` (mistakes several
attention checkers name in the same words).

Hints come in steps. The first failure names the symptom, the case and the
learner's line; the same mistake failing again in the kernel adds why; the
corrected code comes only on request::

    >>> checks.hint("causal_mask")   # or "check_causal_mask"

A passing run forgets that checker's steps.
"""

from helpers.checks import _hints
from helpers.checks._engine import CheckFailed
from helpers.checks.attention import (
    check_attention,
    check_attention_one_query,
    check_scaled_dot_product_attention,
)
from helpers.checks.capstone import (
    check_d_k_experiment,
    check_mask_experiment,
    check_scale_experiment,
)
from helpers.checks.conventions import (
    check_course_mask,
    check_make_queries,
    check_shape_names,
)
from helpers.checks.decoder_masks import check_decoder_mask, check_mask_conversion
from helpers.checks.decoding import check_cached_generation, check_rope_halves
from helpers.checks.delta_rule import check_delta_step
from helpers.checks.heads import check_multi_head_attention, check_split_heads
from helpers.checks.layer import check_self_attention_layer
from helpers.checks.linear import check_linear_attention
from helpers.checks.logsumexp import check_logsumexp, check_merge_stats
from helpers.checks.masks import check_causal_mask, check_zero_weights
from helpers.checks.online import check_online_softmax
from helpers.checks.parameters import check_parameter_count
from helpers.checks.predicted import check_key_winners, check_predicted_shapes
from helpers.checks.projections import check_predict_shapes, check_shrink_prediction
from helpers.checks.queries import check_attention_each_query
from helpers.checks.recall import check_recall_attention
from helpers.checks.ring_buffer import check_ring_buffer_step
from helpers.checks.running_state import check_causal_linear_attention
from helpers.checks.scale import check_find_temperature, check_softmax_jacobian
from helpers.checks.self_attention import check_self_attention
from helpers.checks.shuffle import check_shuffle_keys_and_values
from helpers.checks.sink_mla import check_mla_absorption, check_sink_attention
from helpers.checks.sliding_window import check_sliding_window_mask
from helpers.checks.softmax import check_masked_softmax, check_softmax
from helpers.checks.sqrt_dk import (
    check_half_entropy_temperature,
    check_predict_score_std,
    check_softmax_backward,
)
from helpers.checks.streaming import check_streaming_attention
from helpers.checks.tiled_attention import check_causal_tiled_attention
from helpers.checks.tiles import check_merge_states, check_score_bytes
from helpers.checks.transformer import (
    check_decode_step,
    check_grouped_query_attention,
    check_rope,
)

# Lesson 11's checkers run helpers.induction (torch): imported on first use, so
# that ``from helpers import checks`` never loads torch.
_INDUCTION = (
    "check_prefix_matching_score",
    "check_previous_token_score",
    "check_prediction",
)
# Lesson 11's build and predict exercises, loaded on first use for the same reason.
_CIRCUITS = ("check_induction_scores", "check_fixed_repeat_prediction")


def __getattr__(name):
    if name in _INDUCTION:
        from helpers.checks import induction

        globals()[name] = _hints.checker(getattr(induction, name))
        return globals()[name]
    if name in _CIRCUITS:
        from helpers.checks import circuits

        globals()[name] = _hints.checker(getattr(circuits, name))
        return globals()[name]
    raise AttributeError(f"module 'helpers.checks' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)


__all__ = [
    "CheckFailed",
    "check_make_queries",
    "check_shape_names",
    "check_course_mask",
    "check_key_winners",
    "check_predicted_shapes",
    "check_attention_each_query",
    "check_streaming_attention",
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
    "check_predict_score_std",
    "check_half_entropy_temperature",
    "check_softmax_backward",
    "check_causal_mask",
    "check_zero_weights",
    "check_mask_conversion",
    "check_decoder_mask",
    "check_self_attention",
    "check_predict_shapes",
    "check_shrink_prediction",
    "check_self_attention_layer",
    "check_split_heads",
    "check_multi_head_attention",
    "check_online_softmax",
    "check_parameter_count",
    "check_score_bytes",
    "check_merge_states",
    "check_causal_tiled_attention",
    "check_rope",
    "check_grouped_query_attention",
    "check_decode_step",
    "check_rope_halves",
    "check_cached_generation",
    "check_d_k_experiment",
    "check_scale_experiment",
    "check_mask_experiment",
    "check_recall_attention",
    "check_delta_step",
    "check_causal_linear_attention",
    "check_linear_attention",
    "check_sliding_window_mask",
    "check_sink_attention",
    "check_mla_absorption",
    "check_ring_buffer_step",
    *_INDUCTION,
    *_CIRCUITS,
    "hint",
]


def hint(name):
    """Print the fix of a checker's last diagnosed mistake: ``hint("causal_mask")``.

    ``name`` is the checker's name, with or without ``check_``. A failed check
    shows its symptom first and, when the same mistake comes back, why; the
    corrected code comes only from here. With no fix written for the mistake
    (or no mistake diagnosed) it says what the checker expects.
    """
    known = {n: globals().get(n) for n in __all__ if n.startswith("check_")}
    full = str(name).strip()
    full = full if full.startswith("check_") else f"check_{full}"
    if full in _INDUCTION + _CIRCUITS:
        known[full] = __getattr__(full)
    print(_hints.hint_text(name, known))


# Every exported checker goes through one path: staged hints, and the one "not
# implemented yet" message for a stub (see helpers.checks._hints).
for _name in __all__:
    if _name.startswith("check_") and _name in globals():
        globals()[_name] = _hints.checker(globals()[_name])
del _name
