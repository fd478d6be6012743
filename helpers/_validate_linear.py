"""Shape and argument rules of ``linear_attention`` and ``delta_rule`` (lesson 12).

Shared by ``attention_np`` and ``attention_torch``, like ``_validate``: plain
tuples of ints and Python numbers, so both modules raise the same messages and
neither imports the other's library.
"""

from helpers._validate import broadcast, fmt, qkv_shapes, require_ndim
from helpers.i18n import _


def feature_map(fn):
    """Check ``feature_map`` is None or a callable."""
    if fn is not None and not callable(fn):
        raise TypeError(
            _(
                "feature_map must be a function applied to Q and K (e.g. "
                "lambda x: np.exp(x)), or None for elu(x) + 1; got {kind}"
            ).format(kind=type(fn).__name__)
        )


def causal_flag(causal):
    """Return ``causal`` as a bool; refuse anything but True and False."""
    if not isinstance(causal, bool) and type(causal).__name__ not in ("bool", "bool_"):
        raise TypeError(
            _("causal must be True or False; got {causal!r}").format(causal=causal)
        )
    return bool(causal)


def feature_shapes(q_shape, k_shape, phi_q_shape, phi_k_shape):
    """Check that the feature map kept each row and gave Q and K one feature size."""
    for name, before, after in (
        ("Q", q_shape, phi_q_shape),
        ("K", k_shape, phi_k_shape),
    ):
        if len(after) != len(before) or tuple(after[:-1]) != tuple(before[:-1]):
            raise ValueError(
                _(
                    "feature_map({name}) has shape {after} but {name} has shape "
                    "{before}: the feature map must act on each row's last axis "
                    "and keep every other axis, (..., rows, d_k) -> (..., rows, "
                    "r)"
                ).format(name=name, after=fmt(after), before=fmt(before))
            )
    if phi_q_shape[-1] != phi_k_shape[-1] or phi_q_shape[-1] == 0:
        raise ValueError(
            _(
                "feature_map gave {r_q} features per query but "
                "{r_k} per key: phi(q) . phi(k) needs one feature "
                "size r >= 1"
            ).format(r_q=phi_q_shape[-1], r_k=phi_k_shape[-1])
        )


def negative_features_message(name, value):
    """The ValueError text for a feature map that gave a negative feature."""
    return _(
        "feature_map({name}) has a negative feature ({value:.4g}): "
        "linear attention needs phi(q) . phi(k) >= 0 for every pair "
        "(a similarity, as exp is), so that Z > 0; use a positive "
        "map such as elu(x) + 1 or exp"
    ).format(name=name, value=value)


def zero_normaliser_message(query):
    """The ValueError text for a query whose normaliser Z is 0."""
    return _(
        "the normaliser Z = phi(q) . sum_j phi(k_j) is 0 for query "
        "{query}: every similarity of that query is 0, so its "
        "weighted average is 0 / 0; use a feature map with positive "
        "features, such as elu(x) + 1"
    ).format(query=query)


def delta_shapes(q_shape, k_shape, v_shape):
    """Check Q, K (..., n, d_k) and V (..., n, d_v) of one sequence; return sizes.

    Returns ``(batch_shape, n, d_k, d_v)``.
    """
    batch, n, m, d_k, d_v = qkv_shapes(q_shape, k_shape, v_shape)
    if m != n:
        raise ValueError(
            _(
                "Q has n={n} queries but K has {m} keys: the delta rule "
                "reads one query after each write, so Q, K and V need the "
                "same length (Q {q_shape}, K {k_shape}, V {v_shape})"
            ).format(
                n=n,
                m=m,
                q_shape=fmt(q_shape),
                k_shape=fmt(k_shape),
                v_shape=fmt(v_shape),
            )
        )
    return batch, n, d_k, d_v


def beta_shape(beta_shape_, batch, n):
    """Check that beta (a scalar or (..., n)) broadcasts to (..., n)."""
    if len(beta_shape_) == 0:
        return
    require_ndim("beta", beta_shape_, 1, "(..., n) or a scalar")
    if broadcast(beta_shape_, tuple(batch) + (n,)) != tuple(batch) + (n,):
        raise ValueError(
            _(
                "beta of shape {beta_shape} does not broadcast to (..., n) "
                "= {expected}: give one write strength per step"
            ).format(beta_shape=fmt(beta_shape_), expected=fmt(tuple(batch) + (n,)))
        )


def beta_range(low, high):
    """Check that every beta lies in (0, 1]."""
    if not (low > 0 and high <= 1):
        raise ValueError(
            _(
                "beta must lie in (0, 1]; got values from {low:.4g} to "
                "{high:.4g}. beta is the write strength: 1 overwrites the "
                "value stored under a unit-norm key, 0 would write nothing"
            ).format(low=low, high=high)
        )
