"""Make tensors and look at them: seed 000's ``make_tensor`` and ``print_matrix_info``.

Both come from the blog post the course grew from (seed 000, "把 Scaled
Dot-Product Attention 展开写一遍"), improved: ``seed=`` gives reproducible draws
without touching the global random state, ``backend="numpy"`` returns an
ndarray, bad arguments raise errors that list the valid values, and the printer
rounds its numbers so that they are readable and stable.
"""

import numbers

import numpy as np

from helpers.i18n import _

MODES = ("rand", "randn", "zeros", "ones")
BACKENDS = ("torch", "numpy")


def _shape(shape):
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise ValueError(
            _(
                "shape must be a sequence of non-negative integers, e.g. [2, "
                "3]; got {shape!r}"
            ).format(shape=shape)
        ) from None
    for i, d in enumerate(dims):
        if isinstance(d, bool) or not isinstance(d, numbers.Integral):
            if not (hasattr(d, "__index__") and not isinstance(d, bool)):
                raise ValueError(
                    _(
                        "shape must contain integers; dimension {i} is {d!r} in "
                        "shape {dims!r}"
                    ).format(i=i, d=d, dims=list(dims))
                )
        if int(d) < 0:
            raise ValueError(
                _(
                    "shape must not contain negative dimensions; dimension {i} "
                    "is {size} in shape {value!r}"
                ).format(i=i, size=int(d), value=list(int(x) for x in dims))
            )
    return tuple(int(d) for d in dims)


def make_tensor(
    shape,
    mode="rand",
    *,
    dtype=None,
    device=None,
    low=0.0,
    high=1.0,
    seed=None,
    backend="torch",
):
    """Return a tensor of ``shape`` filled by ``mode``: rand, randn, zeros or ones.

    rand draws uniformly from [low, high); randn draws from the standard normal
    (``low`` and ``high`` do not apply). With ``seed`` the draw is reproducible
    and the global random state is left alone; without it the global generator
    is used (``torch.manual_seed`` / ``np.random.seed`` control it).
    ``backend="numpy"`` returns an ndarray (``device`` must then be None).

    Shapes:
        returns ``shape``; dtype float32 unless ``dtype`` says otherwise
    """
    shape = _shape(shape)
    mode_key = mode.lower() if isinstance(mode, str) else mode
    if mode_key not in MODES:
        raise ValueError(
            _("unknown mode {mode!r}; use one of {modes}").format(
                mode=mode, modes=", ".join(MODES)
            )
        )
    if backend not in BACKENDS:
        raise ValueError(
            _("unknown backend {backend!r}; use one of {backends}").format(
                backend=backend, backends=", ".join(BACKENDS)
            )
        )
    low, high = float(low), float(high)
    if mode_key == "rand" and not low < high:
        raise ValueError(
            _(
                "low must be smaller than high for mode='rand'; got "
                "low={low}, high={high}"
            ).format(low=low, high=high)
        )
    if backend == "numpy":
        return _make_numpy(shape, mode_key, dtype, device, low, high, seed)
    return _make_torch(shape, mode_key, dtype, device, low, high, seed)


def _make_numpy(shape, mode, dtype, device, low, high, seed):
    if device is not None:
        raise ValueError(
            _(
                "device={device!r} applies to backend='torch' only; NumPy "
                "arrays live on the CPU"
            ).format(device=device)
        )
    try:
        dtype = np.dtype(np.float32 if dtype is None else dtype)
    except TypeError:
        raise ValueError(
            _("dtype={dtype!r} is not a NumPy dtype (backend='numpy')").format(
                dtype=dtype
            )
        ) from None
    if mode == "zeros":
        return np.zeros(shape, dtype=dtype)
    if mode == "ones":
        return np.ones(shape, dtype=dtype)
    if not np.issubdtype(dtype, np.floating):
        raise ValueError(
            _("mode={mode!r} draws floats; dtype must be floating, got {dtype}").format(
                mode=mode, dtype=dtype
            )
        )
    rng = np.random.default_rng(seed) if seed is not None else np.random
    if mode == "rand":
        x = rng.random(shape) if seed is not None else rng.random_sample(shape)
        x = np.asarray((high - low) * x + low, dtype=dtype)  # 0-d stays an array
        # Rounding to a narrow dtype (float16) can land on high: keep [low, high).
        return np.minimum(x, np.nextafter(dtype.type(high), dtype.type(low)), out=x)
    return rng.standard_normal(shape).astype(dtype)


def _make_torch(shape, mode, dtype, device, low, high, seed):
    import torch

    dtype = torch.float32 if dtype is None else dtype
    if not isinstance(dtype, torch.dtype):
        raise ValueError(
            _(
                "dtype={dtype!r} is not a torch dtype (backend='torch'); "
                "e.g. torch.float32"
            ).format(dtype=dtype)
        )
    if mode == "zeros":
        return torch.zeros(shape, dtype=dtype, device=device)
    if mode == "ones":
        return torch.ones(shape, dtype=dtype, device=device)
    if not dtype.is_floating_point:
        raise ValueError(
            _("mode={mode!r} draws floats; dtype must be floating, got {dtype}").format(
                mode=mode, dtype=dtype
            )
        )
    generator = None
    if seed is not None:
        generator = torch.Generator(device=device or "cpu").manual_seed(int(seed))
    if mode == "rand":
        x = torch.rand(shape, dtype=dtype, device=device, generator=generator)
        x = (high - low) * x + low
        # Rounding to a narrow dtype (float16) can land on high: keep [low, high).
        top = torch.tensor(high, dtype=dtype, device=device)
        return x.clamp_(max=torch.nextafter(top, torch.full_like(top, low)))
    return torch.randn(shape, dtype=dtype, device=device, generator=generator)


def _round(x, digits=4):
    return None if x is None else float(f"{x:.{digits}g}")


def tensor_info(x):
    """Describe a torch tensor or NumPy array as a dict.

    Keys: type, dtype, device (torch only), shape, ndim, requires_grad (torch
    only), size, min, max, mean (None for an empty tensor).
    """
    if isinstance(x, np.ndarray):
        info = {
            "type": "numpy.ndarray",
            "dtype": str(x.dtype),
            "shape": tuple(x.shape),
            "ndim": x.ndim,
        }
        values = x
    elif type(x).__module__.startswith("torch") and hasattr(x, "detach"):
        t = x.detach()
        info = {
            "type": "torch.Tensor",
            "dtype": str(t.dtype).replace("torch.", ""),
            "device": str(t.device),
            "shape": tuple(t.shape),
            "ndim": t.ndim,
            "requires_grad": bool(x.requires_grad),
        }
        values = t.cpu().double().numpy()
    else:
        raise TypeError(
            _("expected a torch.Tensor or numpy.ndarray; got {kind}").format(
                kind=type(x).__name__
            )
        )
    info["size"] = int(values.size)
    if values.size:
        stats = values.astype(np.float64)
        info.update(
            min=float(stats.min()), max=float(stats.max()), mean=float(stats.mean())
        )
    else:
        info.update(min=None, max=None, mean=None)
    return info


def print_matrix_info(x, name="x", max_items=10):
    """Print what ``x`` is (type, dtype, shape, stats, first items); return True.

    For anything that is not a tensor or ndarray, say so and return False.
    Numbers are shown to 4 significant digits.
    """
    try:
        info = tensor_info(x)
    except TypeError:
        text = _("{name}: not a tensor/ndarray (type={kind})")
        print(text.format(name=name, kind=type(x).__name__))
        return False
    print(f"{name}:")
    for key in ("type", "dtype", "device", "shape", "ndim", "requires_grad"):
        if key in info:
            print(f"  {key}: {info[key]}")
    for key in ("min", "max", "mean"):
        print(f"  {key}: {_round(info[key])}")
    flat = (
        x.detach().reshape(-1).cpu()
        if info["type"] == "torch.Tensor"
        else x.reshape(-1)
    )
    k = min(info["size"], max(int(max_items), 0))
    preview = flat[:k].tolist()
    if info["dtype"].startswith(("float", "bfloat")):
        preview = [_round(a) for a in preview]
    print(f"  preview({k}/{info['size']}): {preview}")
    return True


def check_shape(x, expected, name="x"):
    """Raise ValueError unless ``x.shape`` equals ``expected``; None matches any."""
    actual = tuple(int(d) for d in np.shape(x))  # np.shape reads torch's .shape too
    expected = tuple(expected)
    if len(actual) != len(expected) or any(
        e is not None and a != e for a, e in zip(actual, expected, strict=True)
    ):
        shown = ", ".join("any" if e is None else str(e) for e in expected)
        shown = f"({shown},)" if len(expected) == 1 else f"({shown})"
        raise ValueError(
            _("{name} has shape {actual} but expected {shown}").format(
                name=name, actual=actual, shown=shown
            )
        )
