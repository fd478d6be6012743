"""Shape rules shared by ``attention_np`` and ``attention_torch``.

Everything here works on plain tuples of ints, so both modules raise the same
messages and neither has to import the other's library.
"""

import math
import numbers

from helpers.i18n import _


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
    what = _("-inf is allowed, NaN and +inf are not") if allow_neg_inf else "NaN/inf"
    return _(
        "{name} contains {count} non-finite value(s) ({what}); the "
        "first is {first} at index {index}"
    ).format(name=name, count=count, what=what, first=first, index=tuple(where))


def softmax_axis(shape, axis):
    """Check that softmax can run along ``axis`` of an input of ``shape``."""
    if len(shape) == 0:
        raise ValueError(_("x must have at least one axis; got a scalar"))
    if not -len(shape) <= axis < len(shape):
        raise ValueError(
            _("axis={axis} is out of range for x of shape {shape}").format(
                axis=axis, shape=fmt(shape)
            )
        )
    if shape[axis] == 0:
        raise ValueError(
            _("x has no entries along axis={axis} (shape {shape})").format(
                axis=axis, shape=fmt(shape)
            )
        )


def one_query_shapes(q_shape, k_shape, v_shape):
    """Check q (d_k,), K (m, d_k), V (m, d_v) for one query; return d_k."""
    if len(q_shape) != 1:
        raise ValueError(
            _("q must be one query of shape (d_k,); got shape {q_shape}").format(
                q_shape=fmt(q_shape)
            )
        )
    for name, shape in (("K", k_shape), ("V", v_shape)):
        if len(shape) != 2:
            raise ValueError(
                _("{name} must have shape (m, d_{v}); got shape {shape}").format(
                    name=name, v=name.lower(), shape=fmt(shape)
                )
            )
    qkv_shapes((1,) + tuple(q_shape), k_shape, v_shape)
    return q_shape[0]


def padding_lengths(shape, dtype_name, is_integer, values, max_len):
    """Check lengths (batch,) of integers in [0, max_len] for ``padding_mask``."""
    if len(shape) != 1 or not is_integer:
        raise ValueError(
            _(
                "lengths must be a 1-D array of integers (one per sequence); "
                "got shape {shape} and dtype {dtype_name}"
            ).format(shape=fmt(shape), dtype_name=dtype_name)
        )
    if values and (min(values) < 0 or max(values) > max_len):
        raise ValueError(
            _("lengths must lie in [0, max_len={max_len}]; got {lengths}").format(
                max_len=max_len, lengths=list(values)
            )
        )


def require_ndim(name, shape, at_least, meaning):
    """Raise ValueError unless ``shape`` has at least ``at_least`` axes."""
    if len(shape) < at_least:
        raise ValueError(
            _(
                "{name} must have shape {meaning}; got shape {shape} with {ndim} axes"
            ).format(name=name, meaning=meaning, shape=fmt(shape), ndim=len(shape))
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
            _(
                "K has d_k={d_k_keys} but Q has d_k={d_k}: queries and keys "
                "must have the same last axis to take dot products (Q "
                "{q_shape}, K {k_shape})"
            ).format(
                d_k_keys=d_k_keys, d_k=d_k, q_shape=fmt(q_shape), k_shape=fmt(k_shape)
            )
        )
    if m_values != m:
        raise ValueError(
            _(
                "K has m={m} keys but V has {m_values} values: every key "
                "needs exactly one value (K {k_shape}, V {v_shape})"
            ).format(m=m, m_values=m_values, k_shape=fmt(k_shape), v_shape=fmt(v_shape))
        )
    if m == 0:
        raise ValueError(
            _("K has no keys (m=0, K {k_shape}): nothing to attend to").format(
                k_shape=fmt(k_shape)
            )
        )
    if d_k == 0:
        raise ValueError(
            _("Q and K have d_k=0 (Q {q_shape}): no features").format(
                q_shape=fmt(q_shape)
            )
        )
    batch = broadcast(q_shape[:-2], k_shape[:-2], v_shape[:-2])
    if batch is None:
        raise ValueError(
            _(
                "the batch axes of Q {q_batch}, K {k_batch} and V {v_batch} "
                "do not broadcast (shapes Q {q_shape}, K {k_shape}, V "
                "{v_shape})"
            ).format(
                q_batch=fmt(q_shape[:-2]),
                k_batch=fmt(k_shape[:-2]),
                v_batch=fmt(v_shape[:-2]),
                q_shape=fmt(q_shape),
                k_shape=fmt(k_shape),
                v_shape=fmt(v_shape),
            )
        )
    return batch, n, m, d_k, d_v


def mask_shape(shape, scores_shape):
    """Check that a mask of ``shape`` broadcasts to the scores (..., n, m)."""
    if broadcast(shape, scores_shape) != tuple(scores_shape):
        # a padding mask for these scores: size 1 on every axis but batch and keys
        padding = ("batch",) + ("1",) * (len(scores_shape) - 2) + ("m",)
        example = ", ".join(padding) if len(scores_shape) > 2 else "1, m"
        raise ValueError(
            _(
                "mask of shape {shape} is not broadcastable to the scores "
                "shape (..., n, m) = {scores_shape}; use size 1 on the axes "
                "it shares, e.g. ({example}) for padding these scores"
            ).format(shape=fmt(shape), scores_shape=fmt(scores_shape), example=example)
        )


def mask_dtype_message(dtype_name):
    """The TypeError text for a mask that is not boolean."""
    return _(
        "mask must be boolean, True = may attend; got {dtype_name}. "
        "For an additive mask (0 = attend, -inf or -1e9 = blocked) "
        "use mask == 0; for a 0/1 mask with 1 = blocked use mask == "
        "0; for a 0/1 mask with 1 = attend use mask == 1"
    ).format(dtype_name=dtype_name)


def default_scale(scale, d_k):
    """Return ``scale`` as a Python float, 1/sqrt(d_k) when None.

    A Python float keeps float32 arrays float32 (``np.sqrt`` would not).
    """
    if scale is None:
        return 1.0 / math.sqrt(d_k)
    scale = float(scale)
    if not math.isfinite(scale):
        raise ValueError(
            _("scale must be a finite number; got {scale}").format(scale=scale)
        )
    return scale


def positive_int(name, value):
    """Return ``value`` as int, raising ValueError unless it is >= 1."""
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(
            _("{name} must be a positive integer; got {value!r}").format(
                name=name, value=value
            )
        )
    return int(value)


def window(value):
    """Return a sliding window ``value`` as int, raising ValueError unless >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(
            _(
                "window must be a positive integer, the number of keys each "
                "query sees (itself included: window=1 keeps only the "
                "diagonal, window=None is the plain causal mask); got "
                "{value!r}"
            ).format(value=value)
        )
    return int(value)


def heads(d_model, num_heads):
    """Return the head size d_k = d_model // num_heads, raising unless it divides."""
    num_heads = positive_int("num_heads", num_heads)
    if d_model % num_heads:
        raise ValueError(
            _(
                "d_model={d_model} is not divisible by "
                "num_heads={num_heads}: each head gets d_k = d_model / "
                "num_heads features"
            ).format(d_model=d_model, num_heads=num_heads)
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
            _(
                "num_heads={num_heads} is not a multiple of "
                "num_kv_heads={num_kv_heads}: each K/V head must serve the "
                "same number of query heads"
            ).format(num_heads=num_heads, num_kv_heads=num_kv_heads)
        )
    return num_kv_heads


def mha_shapes(x_shape, kv_shape, weight_shapes, kv_width=None):
    """Check X (batch, n, d_model), kv (batch, m, d_model) and the projections.

    W_Q and W_O are (d_model, d_model); W_K and W_V are (d_model, kv_width),
    kv_width = num_kv_heads * d_k (d_model when None: one K/V head per query head).
    """
    if len(x_shape) != 3:
        hint = _(" (add a batch axis: X[None])") if len(x_shape) == 2 else ""
        raise ValueError(
            _("X must have shape (batch, n, d_model); got {x_shape}{hint}").format(
                x_shape=fmt(x_shape), hint=hint
            )
        )
    d_model = x_shape[-1]
    if len(kv_shape) != 3 or kv_shape[0] != x_shape[0] or kv_shape[-1] != d_model:
        raise ValueError(
            _(
                "kv must have shape (batch, m, d_model) = ({batch}, m, "
                "{d_model}) to match X {x_shape}; got {kv_shape}"
            ).format(
                batch=x_shape[0],
                d_model=d_model,
                x_shape=fmt(x_shape),
                kv_shape=fmt(kv_shape),
            )
        )
    kv_width = d_model if kv_width is None else kv_width
    for name, shape in weight_shapes.items():
        width, rule = d_model, "(d_model, d_model)"
        if name in ("W_K", "W_V") and kv_width != d_model:
            width, rule = kv_width, "(d_model, num_kv_heads * d_k)"
        if tuple(shape) != (d_model, width):
            raise ValueError(
                _(
                    "{name} must have shape {rule} = ({d_model}, {width}) for X "
                    "{x_shape}, applied as X @ {name}; got {shape}"
                ).format(
                    name=name,
                    rule=rule,
                    d_model=d_model,
                    width=width,
                    x_shape=fmt(x_shape),
                    shape=fmt(shape),
                )
            )
    return d_model


def rope_shapes(x_shape, positions_shape):
    """Check x (..., n, d) with d even, and positions broadcastable to (..., n)."""
    require_ndim("x", x_shape, 2, "(..., n, d)")
    d = x_shape[-1]
    if d % 2 or d == 0:
        raise ValueError(
            _(
                "x must have an even, non-zero last axis d (RoPE rotates "
                "pairs of coordinates); got d={d} in shape {x_shape}"
            ).format(d=d, x_shape=fmt(x_shape))
        )
    if positions_shape is not None and broadcast(
        positions_shape, x_shape[:-1]
    ) != tuple(x_shape[:-1]):
        raise ValueError(
            _(
                "positions of shape {positions_shape} do not broadcast to "
                "x's (..., n) = {rows}; give one position per query, e.g. "
                "shape ({n},)"
            ).format(
                positions_shape=fmt(positions_shape),
                rows=fmt(x_shape[:-1]),
                n=x_shape[-2],
            )
        )


def rope_base(base):
    """Return ``base`` as a float, raising unless it is finite and > 1."""
    base = float(base)
    if not math.isfinite(base) or base <= 1:
        raise ValueError(
            _("base must be a finite number > 1; got {base}").format(base=base)
        )
    return base
