"""Helpers for the course *Attention, step by step*.

Every lesson imports this package: ``import helpers`` or
``from helpers import attention_np as anp``. The submodules are small and flat:

- ``helpers.tensors``: ``make_tensor``, ``tensor_info``, ``print_matrix_info``,
  ``check_shape``.
- ``helpers.attention_np``: attention in NumPy (never imports torch).
- ``helpers.attention_torch``: the same functions in PyTorch, and lesson 10's
  ``MultiHeadAttention`` module (``_validate``: the shape rules both share).
- ``helpers.measure``: CPU time and peak memory of a call (NumPy and torch).
- ``helpers.plotting``: heatmaps and bar charts of scores and weights.
- ``helpers.widgets``: the slider explorers; their NumPy maths is
  ``helpers.explorer_math``, their readouts ``helpers.explorer_readouts``, their
  engine ``_render``, shared input checks ``_arrays``.
- ``helpers.induction``: lesson 11's attention-only transformer, its training
  loop and the scores that find induction heads (torch).
- ``helpers.checks``: the checkers of lessons 01-08's exercises (one module per
  topic, ``checks_softmax``, ``checks_logsumexp``, ``checks_scale``,
  ``checks_attention``, ``checks_masks``, ``checks_self_attention``,
  ``checks_heads``, ``checks_online``; their engine is ``_checking``,
  ``_checking_where`` and ``_checking_mistakes``).
- ``helpers.checks_induction``: the checkers of lesson 11's exercises.
- ``helpers.checks_transformer``: the checkers of lesson 10's exercises.

The submodules are imported on demand so that ``import helpers`` stays cheap and
``helpers.attention_np`` works on a machine without torch.
"""

__version__ = "0.1.0"
