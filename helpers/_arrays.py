"""Input conversion and checks shared by plotting, the explorers and their maths.

One home for what ``plotting`` and ``explorers`` (maths and widgets) all need:
turning an array, list or torch tensor into a float64 ndarray, and the checks
of weights, token labels and seeds. NumPy only; never imports torch.
"""

import numpy as np

WEIGHT_TOLERANCE = 1e-6  # weights may overshoot [0, 1] by float rounding
_SINGULAR = {"queries": "query", "keys": "key", "rows": "row", "columns": "column"}


def real_numbers(x, name):
    """Return the ndarray ``x``; raise TypeError unless its dtype is a real number."""
    if x.dtype == np.bool_ or not np.issubdtype(x.dtype, np.number):
        raise TypeError(f"{name} must hold real numbers; got dtype {x.dtype}")
    if np.issubdtype(x.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real; got dtype {x.dtype}")
    return x


def to_array(x, name):
    """Return ``x`` as a finite float64 ndarray; accepts arrays, lists, tensors.

    A torch tensor is detached and copied to the CPU (bfloat16 via float32,
    which NumPy lacks) without importing torch.
    """
    if hasattr(x, "detach"):  # a torch tensor, without importing torch
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":
            x = x.float()
    x = real_numbers(np.asarray(x), name).astype(np.float64)
    if not np.isfinite(x).all():
        raise ValueError(
            f"{name} of shape {tuple(x.shape)} contains NaN or inf; "
            f"give finite values (a masked weight is 0, not -inf)"
        )
    return x


def check_weights(w, name, meaning):
    """Raise ValueError unless every entry of ``w`` lies in [0, 1]."""
    lo, hi = float(w.min()), float(w.max())
    if lo < -WEIGHT_TOLERANCE or hi > 1 + WEIGHT_TOLERANCE:
        raise ValueError(
            f"{name} of shape {tuple(w.shape)} {meaning} must be attention weights "
            f"in [0, 1]; got values from {lo:.4g} to {hi:.4g} "
            f"(did you pass the scores instead of softmax(scores)?)"
        )


def check_labels(labels, count, name, axis_name):
    """Return ``labels`` as a list of strings, or None; check there are ``count``."""
    if labels is None:
        return None
    labels = [str(label) for label in labels]
    if len(labels) != count:
        raise ValueError(
            f"{name} has {len(labels)} labels but the weights have "
            f"{count} {axis_name}: give one label per {_SINGULAR.get(axis_name)}"
        )
    return labels


def check_seed(seed):
    """Return ``seed`` as an int; raise ValueError unless it is an integer >= 0."""
    if isinstance(seed, bool) or int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be a non-negative integer; got {seed!r}")
    return int(seed)
