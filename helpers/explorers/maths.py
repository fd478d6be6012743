"""The NumPy maths behind the slider explorers of ``helpers.explorers``.

Pure, seeded functions: what each explorer plots and reads out, computed here
and tested without ipywidgets or matplotlib. NumPy only; never imports torch,
so a slider callback never waits on torch's thread pool.

- ``attention_stats``: one random query against ``seq_len`` keys (lesson 04).
- ``temperature_weights``: softmax(scores / temperature) (lesson 01).
- ``heads_weights``: the per-head weights of multi-head attention (lesson 07).
- ``checkpoint_weights``: the weights saved at one training checkpoint (09).
- ``entropy``, ``row_entropy``, ``block_max``: the readouts and the display.
"""

import math

import numpy as np

from helpers import _validate
from helpers import attention_np as anp
from helpers._arrays import check_seed, check_weights, to_array

HEAD_SCALES = ("d_k", "d_model")  # divide the scores by sqrt(d_k) or sqrt(d_model)
HEAD_PROJECTIONS = ("random", "ones")  # N(0, 1/d_model) projections, or seed 003's ones
SATURATED = 0.95  # a head whose rows put more than this on one key, on average


def entropy(weights, axis=-1):
    """Shannon entropy in nats, -sum_s a_s log a_s, along ``axis`` (0 log 0 = 0).

    Shapes:
        weights: (..., m) -> (...)
    """
    w = np.asarray(weights, dtype=np.float64)
    safe = np.where(w > 0, w, 1.0)
    return -np.sum(np.where(w > 0, w * np.log(safe), 0.0), axis=axis)


def row_entropy(weights):
    """``entropy(weights)`` of non-negative weights, kept in their float dtype.

    One add, one log and one fused multiply-sum (no float64 copy, no masks):
    the readout of HeadsExplorer over num_heads x n x n float32 weights. 0 log 0
    = 0: the log is taken of w + tiny (the smallest normal float), which is
    finite at w = 0 and equals w for any w above 1e-30.

    Shapes:
        weights: (..., m) -> (...)
    """
    w = np.asarray(weights)
    log_w = np.add(w, np.finfo(w.dtype).tiny)  # (..., m); 3x faster than np.maximum
    np.log(log_w, out=log_w)
    return -np.einsum("...m,...m->...", w, log_w, optimize=False)


def block_max(weights, k):
    """The largest weight in each k x k block of the last two axes.

    Blocks at the end are smaller when k does not divide n or m. Slices and
    ``np.maximum`` (k passes over rows, then over columns), 10x faster than a
    reshape-and-max or ``np.maximum.reduceat`` on these short blocks.

    Shapes:
        weights: (..., n, m) -> (..., ceil(n / k), ceil(m / k))
    """
    rows = weights[..., ::k, :].copy()  # (..., ceil(n / k), m)
    for j in range(1, k):
        part = weights[..., j::k, :]
        kept = rows[..., : part.shape[-2], :]
        np.maximum(kept, part, out=kept)
    cells = rows[..., ::k].copy()  # (..., ceil(n / k), ceil(m / k))
    for j in range(1, k):
        part = rows[..., j::k]
        kept = cells[..., : part.shape[-1]]
        np.maximum(kept, part, out=kept)
    return cells


def divisors(n):
    """The numbers of heads that divide ``n`` features evenly: 1 ... n."""
    return [h for h in range(1, n + 1) if n % h == 0]


def normal_density(x, std):
    """The N(0, std^2) density at ``x``; NaN (not drawn) when std is 0.

    Shapes:
        x: (...) -> (...)
    """
    x = np.asarray(x, dtype=np.float64)
    if std <= 0:
        return np.full_like(x, np.nan)
    return np.exp(-0.5 * (x / std) ** 2) / (std * math.sqrt(2 * math.pi))


def positive_number(name, value):
    """Return ``value`` as a float; raise ValueError unless finite and > 0."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a positive number; got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive number; got {value}")
    return value


def attention_stats(seq_len, d_k, scaled=True, seed=0, sigma=1.0):
    """Scores and softmax weights of one random query against ``seq_len`` keys.

    q and the keys have entries drawn from N(0, sigma^2) in ``d_k`` dimensions
    (q first, then the keys, so a longer sequence keeps the same first keys).
    The scores are <q, k_s> / sqrt(d_k) when ``scaled``, else <q, k_s>.

    Two predictions of their spread: over random q and k it is sigma^2 scaled
    (sigma^2 sqrt(d_k) unscaled): ``predicted_std``. Within this one row q is
    fixed, and the spread is sigma ||q|| / sqrt(d_k) (sigma ||q|| unscaled):
    ``row_predicted_std``, which varies from query to query (for d_k = 1 it is
    sigma |q_0|, anywhere from 0 up).

    Shapes:
        returns a dict: scores (seq_len,), weights (seq_len,), entropy (nats),
        max_entropy = log(seq_len), max_weight, score_std (measured in this
        row), row_predicted_std, predicted_std, q_norm, and the inputs seq_len,
        d_k, scaled, seed, sigma
    """
    seq_len = _validate.positive_int("seq_len", seq_len)
    d_k = _validate.positive_int("d_k", d_k)
    seed = check_seed(seed)
    sigma = positive_number("sigma", sigma)
    rng = np.random.default_rng(seed)
    q = sigma * rng.standard_normal(d_k)  # (d_k,)
    K = sigma * rng.standard_normal((seq_len, d_k))  # (seq_len, d_k)
    scores = K @ q  # (seq_len,)
    scale = 1 / math.sqrt(d_k) if scaled else 1.0
    scores = scores * scale
    weights = anp.softmax(scores)  # (seq_len,)
    q_norm = float(np.linalg.norm(q))
    return {
        "seq_len": seq_len,
        "d_k": d_k,
        "scaled": bool(scaled),
        "seed": seed,
        "sigma": sigma,
        "scores": scores,
        "weights": weights,
        "entropy": float(entropy(weights)),
        "max_entropy": math.log(seq_len),
        "max_weight": float(weights.max()),
        "score_std": float(scores.std()),
        "q_norm": q_norm,
        "row_predicted_std": sigma * q_norm * scale,
        "predicted_std": sigma**2 * (1.0 if scaled else math.sqrt(d_k)),
    }


def temperature_weights(scores, temperature):
    """softmax(scores / temperature) along the last axis.

    Small temperatures sharpen the weights towards one-hot on the largest score,
    large ones flatten them towards uniform.

    Shapes:
        scores: (..., m) -> weights (..., m)
    """
    scores = to_array(scores, "scores")
    if scores.ndim == 0 or scores.shape[-1] == 0:
        raise ValueError(
            f"scores must have one score per key along the last axis, shape "
            f"(..., m); got shape {tuple(scores.shape)}"
        )
    temperature = positive_number("temperature", temperature)
    return anp.softmax(scores / temperature)


def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}; got {value!r}")
    return value


def heads_weights(
    num_heads,
    d_model,
    seq_len,
    seed=0,
    *,
    dtype=np.float64,
    scale="d_k",
    sigma=1.0,
    projections="random",
):
    """Per-head weights of multi-head self-attention on random tokens.

    W_Q, W_K, W_V, W_O are drawn first, N(0, 1/d_model) entries, then the tokens
    X ~ N(0, sigma^2) of shape (seq_len, d_model): changing ``num_heads``,
    ``scale`` or ``projections`` keeps the same tokens, and a longer sequence keeps
    the same first ones. ``projections="ones"`` replaces W_Q and W_K by all-ones
    matrices, as seed 003 did (every head then sees the same row sums: identical
    heads). ``scale`` divides the scores by sqrt(d_k), the per-head size (the
    rule), or by sqrt(d_model). The weights are those of
    ``attention_np.multi_head_attention`` (W_V and W_O do not change them). The
    projections are computed in float64, the scores and the softmax in
    ``dtype``: float64 (the default) or float32 (what HeadsExplorer uses; the
    weights differ from float64 by about 1e-7).

    Products go through ``np.einsum`` rather than ``@``: NumPy hands even these
    small matmuls to OpenBLAS's thread pool, whose two threads on a busy 2-core
    machine wait on each other (measured: 10x slower than one thread, so a
    slider stalls); einsum's own loops use no threads.

    Shapes:
        returns weights (num_heads, seq_len, seq_len) of ``dtype``, rows summing
        to 1
    """
    d_model = _validate.positive_int("d_model", d_model)
    d_k = _validate.heads(d_model, num_heads)
    seq_len = _validate.positive_int("seq_len", seq_len)
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64; got {dtype}")
    _check_choice("scale", scale, HEAD_SCALES)
    _check_choice("projections", projections, HEAD_PROJECTIONS)
    sigma = positive_number("sigma", sigma)
    Q_heads, K_heads_T = _head_projections(
        d_model // d_k, d_model, seq_len, check_seed(seed), sigma, projections
    )  # (H, n, d_k), (H, d_k, n)
    # Contiguous copies in ``dtype``: einsum is fast on them (and slow on views).
    # The scale goes on Q: n x d_model products instead of n x n.
    divisor = math.sqrt(d_k if scale == "d_k" else d_model)
    Q_heads = np.ascontiguousarray(Q_heads / divisor, dtype=dtype)
    K_heads_T = np.ascontiguousarray(K_heads_T, dtype=dtype)
    scores = np.einsum("hnk,hkm->hnm", Q_heads, K_heads_T, optimize=False)  # (H, n, n)
    scores -= scores.max(axis=-1, keepdims=True)  # the stable softmax, in place
    result = np.exp(scores, out=scores)  # (H, n, n)
    result /= result.sum(axis=-1, keepdims=True)
    return result


def _head_projections(num_heads, d_model, seq_len, seed, sigma, projections):
    """Seeded draws, then Q and K split into heads (K already transposed)."""
    d_k = d_model // num_heads
    rng = np.random.default_rng(seed)
    W_Q, W_K, _, _ = rng.standard_normal((4, d_model, d_model)) / math.sqrt(
        d_model
    )  # 4 x (d_model, d_model); W_V and W_O are drawn but do not shape the weights
    if projections == "ones":
        W_Q = W_K = np.ones((d_model, d_model))  # seed 003's projections
    X = sigma * rng.standard_normal((seq_len, d_model))  # (n, d_model)
    Q = np.einsum("nd,de->ne", X, W_Q, optimize=False)  # (n, d_model)
    K = np.einsum("nd,de->ne", X, W_K, optimize=False)  # (n, d_model)
    Q_heads = Q.reshape(seq_len, num_heads, d_k).transpose(1, 0, 2)  # (H, n, d_k)
    K_heads_T = K.reshape(seq_len, num_heads, d_k).transpose(1, 2, 0)  # (H, d_k, n)
    return Q_heads, K_heads_T


def heads_summary(weights):
    """What makes heads differ, read off their weights.

    Shapes:
        weights: (num_heads, n, m) -> a dict: entropy (num_heads,) mean per row,
        max_weight (num_heads,), identical (bool: every head equals head 0 to
        1e-6), saturated (int: heads whose largest weight per row is above
        SATURATED on average)
    """
    weights = np.asarray(weights)
    top = weights.max(axis=-1)  # (num_heads, n)
    mean_entropy = row_entropy(weights).mean(axis=-1)  # (num_heads,)
    # Cheap first: heads whose row maxima differ are not identical (no big copy).
    identical = bool(
        np.allclose(top, top[:1], rtol=0, atol=1e-6)
        and np.allclose(weights, weights[:1], rtol=0, atol=1e-6)
    )
    return {
        "entropy": mean_entropy,
        "max_weight": top.max(axis=-1),  # (num_heads,)
        "identical": identical,
        "saturated": int(np.sum(top.mean(axis=-1) > SATURATED)),
    }


def checkpoint_weights(weights_per_step, steps, step_index):
    """The attention weights saved at one training checkpoint, and how sharp they are.

    ``weights_per_step[i]`` holds the weights of one fixed example saved at training
    step ``steps[i]`` (steps strictly increasing). Masked keys have weight 0.

    Shapes:
        weights_per_step: (num_checkpoints, n, m) in [0, 1]; steps: (num_checkpoints,)
        returns a dict: step_index, step, num_checkpoints, weights (n, m),
        max_weight (n,), top_key (n,), entropy (n,) in nats, mean_max_weight,
        mean_entropy
    """
    weights_per_step, steps = checkpoint_arrays(weights_per_step, steps)
    return checkpoint_summary(weights_per_step, steps, step_index)


def checkpoint_summary(weights_per_step, steps, step_index):
    """``checkpoint_weights`` of arrays that ``checkpoint_arrays`` has checked.

    The explorer validates its (count, n, m) array once and calls this on every
    slider move; only ``step_index`` is checked here.
    """
    count = steps.size
    if (
        isinstance(step_index, bool)
        or not isinstance(step_index, (int, np.integer))
        or not 0 <= step_index < count
    ):
        raise ValueError(
            f"step_index must be an integer in [0, {count - 1}] (one of the "
            f"{count} checkpoints); got {step_index!r}"
        )
    step_index = int(step_index)
    weights = weights_per_step[step_index]  # (n, m)
    max_weight = weights.max(axis=-1)  # (n,)
    weight_entropy = entropy(weights)  # (n,)
    return {
        "step_index": step_index,
        "step": int(steps[step_index]),
        "num_checkpoints": count,
        "weights": weights,
        "max_weight": max_weight,
        "top_key": weights.argmax(axis=-1),
        "entropy": weight_entropy,
        "mean_max_weight": float(max_weight.mean()),
        "mean_entropy": float(weight_entropy.mean()),
    }


def checkpoint_arrays(weights_per_step, steps):
    """Validate and convert: float64 (num_checkpoints, n, m) weights, int64 steps."""
    w = to_array(weights_per_step, "weights_per_step")
    if w.ndim != 3 or w.size == 0:
        raise ValueError(
            f"weights_per_step must have shape (num_checkpoints, n, m): one (n, m) "
            f"matrix of weights per checkpoint; got shape {tuple(w.shape)}"
        )
    check_weights(w, "weights_per_step", "(num_checkpoints, n, m)")
    s = to_array(steps, "steps")
    if s.ndim != 1 or s.size != w.shape[0]:
        raise ValueError(
            f"steps must be 1-D with one training step per checkpoint; got shape "
            f"{tuple(s.shape)} for {w.shape[0]} checkpoints"
        )
    if not np.array_equal(s, np.round(s)):
        raise ValueError(f"steps must be integers; got {s.tolist()}")
    s = s.astype(np.int64)
    if np.any(np.diff(s) <= 0):
        raise ValueError(f"steps must be strictly increasing; got {s.tolist()}")
    return w, s
