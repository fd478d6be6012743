"""Helpers for the course *Attention, step by step*.

Every lesson imports this package (``from helpers import attention_np as anp``):

- the attention core: ``attention_np`` (NumPy, never imports torch) and
  ``attention_torch`` (the same functions in torch); ``attention_layer`` (lesson
  10's ``MultiHeadAttention``, an nn.Module, re-exported by ``attention_torch``);
  ``tensors`` (``make_tensor``, ``print_matrix_info``); ``induction`` (lesson
  11's model, torch);
- ``plotting``: heatmaps and bar charts of scores and weights;
- ``explorers/``: the slider explorers, their NumPy maths, readouts and engine;
- ``checks/``: the exercise checkers, one module per topic, and their engine;
- ``measure``: CPU time and peak memory of a call.

``_validate`` (shape rules) and ``_arrays`` (input conversion) are shared by the
parts above. Submodules are imported on demand, so ``import helpers`` stays cheap.
"""

__version__ = "0.1.0"
