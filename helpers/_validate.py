"""Shape rules shared by ``attention_np`` and ``attention_torch``.

Everything here works on plain tuples of ints, so both modules raise the same
messages and neither has to import the other's library.
"""

import math
import numbers


def fmt(shape):
    """Format a shape as ``(2, 3)`` (a 1-tuple as ``(5,)``)."""
    return str(tuple(int(s) for s in shape))


def broadcast(*shapes):
    """Broadcast shapes like NumPy; return the result or None if they clash."""
    ndim = max(len(s) for s in shapes)
    padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
    out = []
    for sizes in zip(*padded, strict=True):
        big = {s for s in sizes if s != 1}
        if len(big) > 1:
            return None
        out.append(big.pop() if big else 1)
    return tuple(out)


def non_finite_message(name, count, first, where, allow_neg_inf):
    """The ValueError text for an input holding NaN or inf."""
    what = "-inf is allowed, NaN and +inf are not" if allow_neg_inf else "NaN/inf"
    return (
        f"{name} contains {count} non-finite value(s) ({what}); "
        f"the first is {first} at index {tuple(where)}"
    )


def softmax_axis(shape, axis):
    """Check that softmax can run along ``axis`` of an input of ``shape``."""
    if len(shape) == 0:
        raise ValueError("x must have at least one axis; got a scalar")
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"axis={axis} is out of range for x of shape {fmt(shape)}")
    if shape[axis] == 0:
        raise ValueError(f"x has no entries along axis={axis} (shape {fmt(shape)})")


def one_query_shapes(q_shape, k_shape, v_shape):
    """Check q (d_k,), K (m, d_k), V (m, d_v) for one query; return d_k."""
    if len(q_shape) != 1:
        raise ValueError(
            f"q must be one query of shape (d_k,); got shape {fmt(q_shape)}"
        )
    for name, shape in (("K", k_shape), ("V", v_shape)):
        if len(shape) != 2:
            raise ValueError(
                f"{name} must have shape (m, d_{name.lower()}); got shape {fmt(shape)}"
            )
    qkv_shapes((1,) + tuple(q_shape), k_shape, v_shape)
    return q_shape[0]


def padding_lengths(shape, dtype_name, is_integer, values, max_len):
    """Check lengths (batch,) of integers in [0, max_len] for ``padding_mask``."""
    if len(shape) != 1 or not is_integer:
        raise ValueError(
            f"lengths must be a 1-D array of integers (one per sequence); got "
            f"shape {fmt(shape)} and dtype {dtype_name}"
        )
    if values and (min(values) < 0 or max(values) > max_len):
        raise ValueError(
            f"lengths must lie in [0, max_len={max_len}]; got {list(values)}"
        )


def require_ndim(name, shape, at_least, meaning):
    """Raise ValueError unless ``shape`` has at least ``at_least`` axes."""
    if len(shape) < at_least:
        raise ValueError(
            f"{name} must have shape {meaning}; got shape {fmt(shape)} "
            f"with {len(shape)} axes"
        )


def qkv_shapes(q_shape, k_shape, v_shape):
    """Check Q (..., n, d_k), K (..., m, d_k), V (..., m, d_v).

    Returns ``(batch_shape, n, m, d_k, d_v)``.
    """
    require_ndim("Q", q_shape, 2, "(..., n, d_k)")
    require_ndim("K", k_shape, 2, "(..., m, d_k)")
    require_ndim("V", v_shape, 2, "(..., m, d_v)")
    n, d_k = q_shape[-2:]
    m, d_k_keys = k_shape[-2:]
    m_values, d_v = v_shape[-2:]
    if d_k_keys != d_k:
        raise ValueError(
            f"K has d_k={d_k_keys} but Q has d_k={d_k}: queries and keys must "
            f"have the same last axis to take dot products "
            f"(Q {fmt(q_shape)}, K {fmt(k_shape)})"
        )
    if m_values != m:
        raise ValueError(
            f"K has m={m} keys but V has {m_values} values: every key needs "
            f"exactly one value (K {fmt(k_shape)}, V {fmt(v_shape)})"
        )
    if m == 0:
        raise ValueError(f"K has no keys (m=0, K {fmt(k_shape)}): nothing to attend to")
    if d_k == 0:
        raise ValueError(f"Q and K have d_k=0 (Q {fmt(q_shape)}): no features")
    batch = broadcast(q_shape[:-2], k_shape[:-2], v_shape[:-2])
    if batch is None:
        raise ValueError(
            f"the batch axes of Q {fmt(q_shape[:-2])}, K {fmt(k_shape[:-2])} and "
            f"V {fmt(v_shape[:-2])} do not broadcast (shapes Q {fmt(q_shape)}, "
            f"K {fmt(k_shape)}, V {fmt(v_shape)})"
        )
    return batch, n, m, d_k, d_v


def mask_shape(shape, scores_shape):
    """Check that a mask of ``shape`` broadcasts to the scores (..., n, m)."""
    if broadcast(shape, scores_shape) != tuple(scores_shape):
        # a padding mask for these scores: size 1 on every axis but batch and keys
        padding = ("batch",) + ("1",) * (len(scores_shape) - 2) + ("m",)
        example = ", ".join(padding) if len(scores_shape) > 2 else "1, m"
        raise ValueError(
            f"mask of shape {fmt(shape)} is not broadcastable to the scores "
            f"shape (..., n, m) = {fmt(scores_shape)}; use size 1 on the axes "
            f"it shares, e.g. ({example}) for padding these scores"
        )


def mask_dtype_message(dtype_name):
    """The TypeError text for a mask that is not boolean."""
    return (
        f"mask must be boolean, True = may attend; got {dtype_name}. "
        f"For an additive mask (0 = attend, -inf or -1e9 = blocked) use "
        f"mask == 0; for a 0/1 mask with 1 = blocked use mask == 0; "
        f"for a 0/1 mask with 1 = attend use mask == 1"
    )


def default_scale(scale, d_k):
    """Return ``scale`` as a Python float, 1/sqrt(d_k) when None.

    A Python float keeps float32 arrays float32 (``np.sqrt`` would not).
    """
    if scale is None:
        return 1.0 / math.sqrt(d_k)
    scale = float(scale)
    if not math.isfinite(scale):
        raise ValueError(f"scale must be a finite number; got {scale}")
    return scale


def positive_int(name, value):
    """Return ``value`` as int, raising ValueError unless it is >= 1."""
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


def window(value):
    """Return a sliding window ``value`` as int, raising ValueError unless >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(
            "window must be a positive integer, the number of keys each query sees "
            "(itself included: window=1 keeps only the diagonal, window=None is the "
            f"plain causal mask); got {value!r}"
        )
    return int(value)


def heads(d_model, num_heads):
    """Return the head size d_k = d_model // num_heads, raising unless it divides."""
    num_heads = positive_int("num_heads", num_heads)
    if d_model % num_heads:
        raise ValueError(
            f"d_model={d_model} is not divisible by num_heads={num_heads}: "
            f"each head gets d_k = d_model / num_heads features"
        )
    return d_model // num_heads


def kv_heads(num_heads, num_kv_heads):
    """Return num_kv_heads (num_heads when None), raising unless it divides num_heads.

    Grouped-query attention: each K/V head serves num_heads // num_kv_heads
    query heads.
    """
    num_heads = positive_int("num_heads", num_heads)
    if num_kv_heads is None:
        return num_heads
    num_kv_heads = positive_int("num_kv_heads", num_kv_heads)
    if num_heads % num_kv_heads:
        raise ValueError(
            f"num_heads={num_heads} is not a multiple of num_kv_heads={num_kv_heads}: "
            f"each K/V head must serve the same number of query heads"
        )
    return num_kv_heads


def mha_shapes(x_shape, kv_shape, weight_shapes, kv_width=None):
    """Check X (batch, n, d_model), kv (batch, m, d_model) and the projections.

    W_Q and W_O are (d_model, d_model); W_K and W_V are (d_model, kv_width),
    kv_width = num_kv_heads * d_k (d_model when None: one K/V head per query head).
    """
    if len(x_shape) != 3:
        hint = " (add a batch axis: X[None])" if len(x_shape) == 2 else ""
        raise ValueError(
            f"X must have shape (batch, n, d_model); got {fmt(x_shape)}{hint}"
        )
    d_model = x_shape[-1]
    if len(kv_shape) != 3 or kv_shape[0] != x_shape[0] or kv_shape[-1] != d_model:
        raise ValueError(
            f"kv must have shape (batch, m, d_model) = ({x_shape[0]}, m, {d_model}) "
            f"to match X {fmt(x_shape)}; got {fmt(kv_shape)}"
        )
    kv_width = d_model if kv_width is None else kv_width
    for name, shape in weight_shapes.items():
        width, rule = d_model, "(d_model, d_model)"
        if name in ("W_K", "W_V") and kv_width != d_model:
            width, rule = kv_width, "(d_model, num_kv_heads * d_k)"
        if tuple(shape) != (d_model, width):
            raise ValueError(
                f"{name} must have shape {rule} = ({d_model}, {width}) "
                f"for X {fmt(x_shape)}, applied as X @ {name}; got {fmt(shape)}"
            )
    return d_model


def rope_shapes(x_shape, positions_shape):
    """Check x (..., n, d) with d even, and positions broadcastable to (..., n)."""
    require_ndim("x", x_shape, 2, "(..., n, d)")
    d = x_shape[-1]
    if d % 2 or d == 0:
        raise ValueError(
            f"x must have an even, non-zero last axis d (RoPE rotates pairs of "
            f"coordinates); got d={d} in shape {fmt(x_shape)}"
        )
    if positions_shape is not None and broadcast(
        positions_shape, x_shape[:-1]
    ) != tuple(x_shape[:-1]):
        raise ValueError(
            f"positions of shape {fmt(positions_shape)} do not broadcast to x's "
            f"(..., n) = {fmt(x_shape[:-1])}; give one position per query, e.g. "
            f"shape ({x_shape[-2]},)"
        )


def rope_base(base):
    """Return ``base`` as a float, raising unless it is finite and > 1."""
    base = float(base)
    if not math.isfinite(base) or base <= 1:
        raise ValueError(f"base must be a finite number > 1; got {base}")
    return base
