"""helpers.tensors: seed 000's make_tensor and print_matrix_info, improved."""

import numpy as np
import pytest
import torch

from helpers.tensors import check_shape, make_tensor, print_matrix_info, tensor_info

BACKENDS = ["torch", "numpy"]


def as_numpy(x):
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


# ----------------------------------------------------------------- make_tensor


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["rand", "randn", "zeros", "ones"])
@pytest.mark.parametrize("shape", [(2, 3), (4,), (2, 1, 3), (0, 3)])
def test_make_tensor_modes_shapes_and_default_float32(backend, mode, shape):
    x = make_tensor(shape, mode, seed=0, backend=backend)
    expected_type = torch.Tensor if backend == "torch" else np.ndarray
    assert isinstance(x, expected_type)
    assert tuple(x.shape) == shape
    assert str(x.dtype).replace("torch.", "") == "float32"
    values = as_numpy(x)
    if mode == "zeros":
        assert (values == 0).all()
    elif mode == "ones":
        assert (values == 1).all()
    elif mode == "rand":
        assert ((values >= 0) & (values < 1)).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_make_tensor_distributions(backend):
    u = as_numpy(make_tensor((20000,), "rand", seed=1, backend=backend)).astype(float)
    assert abs(u.mean() - 0.5) < 0.01
    assert abs(u.var() - 1 / 12) < 0.005
    z = as_numpy(make_tensor((20000,), "randn", seed=1, backend=backend)).astype(float)
    assert abs(z.mean()) < 0.03
    assert abs(z.std() - 1) < 0.03
    assert z.min() < -3 and z.max() > 3  # a normal, not a uniform


@pytest.mark.parametrize("backend", BACKENDS)
def test_make_tensor_accepts_an_int_a_list_and_numpy_ints_as_shape(backend):
    assert tuple(make_tensor(5, backend=backend).shape) == (5,)
    assert tuple(make_tensor([2, 3], backend=backend).shape) == (2, 3)
    shape = (np.int64(2), np.int32(4))
    assert tuple(make_tensor(shape, backend=backend).shape) == (2, 4)
    for mode in ("rand", "randn", "zeros", "ones"):
        for seed in (None, 0):
            x = make_tensor((), mode, seed=seed, backend=backend)
            assert isinstance(x, torch.Tensor if backend == "torch" else np.ndarray)
            assert tuple(x.shape) == ()


def test_make_tensor_mode_is_case_insensitive():
    assert torch.equal(make_tensor((2, 2), "ONES"), torch.ones(2, 2))


@pytest.mark.parametrize(
    "dtype", [torch.float64, torch.float16, torch.bfloat16, torch.float32]
)
@pytest.mark.parametrize("mode", ["rand", "randn", "zeros", "ones"])
def test_make_tensor_torch_dtypes(dtype, mode):
    x = make_tensor((3, 4), mode, dtype=dtype, seed=0)
    assert x.dtype == dtype


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.float32, "float64"])
@pytest.mark.parametrize("mode", ["rand", "randn", "zeros", "ones"])
def test_make_tensor_numpy_dtypes(dtype, mode):
    x = make_tensor((3, 4), mode, dtype=dtype, seed=0, backend="numpy")
    assert x.dtype == np.dtype(dtype)


@pytest.mark.parametrize(
    ("backend", "dtype"), [("torch", torch.int64), ("numpy", np.int32)]
)
def test_make_tensor_integer_dtype_for_zeros_and_ones_but_not_random(backend, dtype):
    x = make_tensor((2, 2), "ones", dtype=dtype, backend=backend)
    assert str(x.dtype).replace("torch.", "") == str(dtype).split(".")[-1].strip("'>")
    assert (as_numpy(x) == 1).all()
    for mode in ("rand", "randn"):
        with pytest.raises(ValueError, match=rf"mode='{mode}' draws floats"):
            make_tensor((2, 2), mode, dtype=dtype, backend=backend)


def test_make_tensor_device_cpu():
    x = make_tensor((2, 3), "rand", device="cpu", seed=0)
    assert x.device.type == "cpu"
    assert torch.equal(x, make_tensor((2, 3), "rand", seed=0))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["rand", "randn"])
def test_make_tensor_seed_is_reproducible(backend, mode):
    a = as_numpy(make_tensor((4, 5), mode, seed=42, backend=backend))
    b = as_numpy(make_tensor((4, 5), mode, seed=42, backend=backend))
    c = as_numpy(make_tensor((4, 5), mode, seed=43, backend=backend))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["rand", "randn"])
def test_make_tensor_seed_leaves_global_rng_state_alone(backend, mode):
    torch.manual_seed(123)
    np.random.seed(123)  # noqa: NPY002
    torch_state = torch.get_rng_state()
    np_state = np.random.get_state()  # noqa: NPY002
    make_tensor((50,), mode, seed=7, backend=backend)
    assert torch.equal(torch.get_rng_state(), torch_state)
    after = np.random.get_state()  # noqa: NPY002
    assert after[0] == np_state[0]
    np.testing.assert_array_equal(after[1], np_state[1])
    assert after[2:] == np_state[2:]
    # and the next global draws are the ones they would have been
    expected_torch = torch.Generator().manual_seed(123)
    assert torch.equal(torch.rand(3), torch.rand(3, generator=expected_torch))
    np.testing.assert_array_equal(
        np.random.random_sample(3),  # noqa: NPY002
        np.random.RandomState(123).random_sample(3),
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_make_tensor_without_seed_uses_the_global_generator(backend):
    torch.manual_seed(5)
    np.random.seed(5)  # noqa: NPY002
    a = as_numpy(make_tensor((6,), "randn", backend=backend))
    torch.manual_seed(5)
    np.random.seed(5)  # noqa: NPY002
    b = as_numpy(make_tensor((6,), "randn", backend=backend))
    np.testing.assert_array_equal(a, b)
    c = as_numpy(make_tensor((6,), "randn", backend=backend))
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize(("low", "high"), [(0.0, 1.0), (-1.0, 1.0), (2.0, 5.0)])
def test_make_tensor_rand_respects_half_open_range(backend, dtype, low, high):
    dtype = getattr(torch, dtype) if backend == "torch" else np.dtype(dtype)
    x = make_tensor(
        (200_000,), "rand", dtype=dtype, low=low, high=high, seed=0, backend=backend
    )
    values = as_numpy(x).astype(np.float64)
    assert values.min() >= low
    assert values.max() < high, f"rand reached high={high}: [low, high) is half-open"
    span = high - low
    assert values.min() < low + 0.01 * span and values.max() > high - 0.01 * span


@pytest.mark.parametrize("backend", BACKENDS)
def test_make_tensor_randn_ignores_low_and_high(backend):
    x = make_tensor((3,), "randn", low=5.0, high=1.0, seed=0, backend=backend)
    y = make_tensor((3,), "randn", seed=0, backend=backend)
    np.testing.assert_array_equal(as_numpy(x), as_numpy(y))


@pytest.mark.parametrize("backend", BACKENDS)
def test_make_tensor_bad_mode_lists_the_valid_modes(backend):
    with pytest.raises(
        ValueError, match=r"unknown mode 'uniform'; use one of rand, randn, zeros, ones"
    ):
        make_tensor((2, 2), "uniform", backend=backend)
    with pytest.raises(ValueError, match="unknown mode 3"):
        make_tensor((2, 2), 3, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("shape", "pattern"),
    [
        ((2, -3), r"negative dimensions; dimension 1 is -3 in shape \[2, -3\]"),
        ((2, 2.5), r"dimension 1 is 2.5 in shape \[2, 2.5\]"),
        ((True, 2), r"dimension 0 is True"),
        (None, "shape must be a sequence of non-negative integers.*got None"),
        (-1, "dimension 0 is -1"),
    ],
)
def test_make_tensor_bad_shape(backend, shape, pattern):
    with pytest.raises(ValueError, match=pattern):
        make_tensor(shape, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("low", "high"), [(1.0, 1.0), (2.0, 1.0)])
def test_make_tensor_low_must_be_below_high(backend, low, high):
    with pytest.raises(
        ValueError, match=rf"low must be smaller than high.*low={low}, high={high}"
    ):
        make_tensor((2,), "rand", low=low, high=high, backend=backend)


def test_make_tensor_unknown_backend_lists_the_valid_ones():
    with pytest.raises(
        ValueError, match=r"unknown backend 'jax'; use one of torch, numpy"
    ):
        make_tensor((2,), backend="jax")


def test_make_tensor_device_with_numpy_backend():
    with pytest.raises(ValueError, match=r"device='cpu' applies to backend='torch'"):
        make_tensor((2,), device="cpu", backend="numpy")


def test_make_tensor_dtype_of_the_other_library():
    with pytest.raises(ValueError, match=r"is not a torch dtype \(backend='torch'\)"):
        make_tensor((2,), dtype=np.float32)
    with pytest.raises(ValueError, match=r"is not a NumPy dtype \(backend='numpy'\)"):
        make_tensor((2,), dtype=torch.float32, backend="numpy")


# ----------------------------------------------------------------- tensor_info


def test_tensor_info_torch():
    x = torch.tensor([[1.0, -2.0], [3.0, 4.0]], dtype=torch.float64)
    x.requires_grad_()
    info = tensor_info(x)
    assert set(info) == {
        "type",
        "dtype",
        "device",
        "shape",
        "ndim",
        "requires_grad",
        "size",
        "min",
        "max",
        "mean",
    }
    assert info["type"] == "torch.Tensor"
    assert info["dtype"] == "float64"
    assert info["device"] == "cpu"
    assert info["shape"] == (2, 2) and info["ndim"] == 2 and info["size"] == 4
    assert info["requires_grad"] is True
    assert (info["min"], info["max"], info["mean"]) == (-2.0, 4.0, 1.5)


def test_tensor_info_numpy():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    info = tensor_info(x)
    assert set(info) == {"type", "dtype", "shape", "ndim", "size", "min", "max", "mean"}
    assert info["type"] == "numpy.ndarray"
    assert info["dtype"] == "int32"
    assert info["shape"] == (2, 3) and info["ndim"] == 2 and info["size"] == 6
    assert (info["min"], info["max"], info["mean"]) == (0.0, 5.0, 2.5)


@pytest.mark.parametrize("x", [torch.zeros(0, 3), np.zeros((2, 0))])
def test_tensor_info_empty_has_no_stats(x):
    info = tensor_info(x)
    assert info["size"] == 0
    assert info["min"] is info["max"] is info["mean"] is None


@pytest.mark.parametrize("x", [[1, 2], 3.0, "abc", None])
def test_tensor_info_rejects_non_tensors(x):
    with pytest.raises(TypeError, match="expected a torch.Tensor or numpy.ndarray"):
        tensor_info(x)


# ----------------------------------------------------------- print_matrix_info


def test_print_matrix_info_torch(capsys):
    x = torch.tensor([[0.123456, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert print_matrix_info(x, name="scores") is True
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "scores:"
    assert "  type: torch.Tensor" in lines
    assert "  dtype: float32" in lines
    assert "  device: cpu" in lines
    assert "  shape: (2, 3)" in lines
    assert "  ndim: 2" in lines
    assert "  requires_grad: False" in lines
    assert "  min: 0.1235" in lines
    assert "  max: 6.0" in lines
    assert "  preview(6/6): [0.1235, 2.0, 3.0, 4.0, 5.0, 6.0]" in lines


def test_print_matrix_info_numpy_and_max_items(capsys):
    x = np.arange(12, dtype=np.float64).reshape(3, 4) / 3
    assert print_matrix_info(x, max_items=3) is True
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "x:"
    assert "  type: numpy.ndarray" in lines
    assert "  dtype: float64" in lines
    assert "  shape: (3, 4)" in lines
    assert not any(line.startswith("  device") for line in lines)
    assert "  mean: 1.833" in lines
    assert "  preview(3/12): [0.0, 0.3333, 0.6667]" in lines


def test_print_matrix_info_integers_and_requires_grad(capsys):
    assert print_matrix_info(torch.arange(4), name="idx") is True
    out = capsys.readouterr().out
    assert "  dtype: int64" in out
    assert "  preview(4/4): [0, 1, 2, 3]" in out
    assert print_matrix_info(torch.ones(2, requires_grad=True)) is True
    assert "  requires_grad: True" in capsys.readouterr().out


def test_print_matrix_info_empty(capsys):
    assert print_matrix_info(np.zeros((0, 2)), name="e") is True
    out = capsys.readouterr().out
    assert "  min: None" in out
    assert "  preview(0/0): []" in out


@pytest.mark.parametrize("x", [[1, 2, 3], 3.5, None])
def test_print_matrix_info_returns_false_for_non_tensors(capsys, x):
    assert print_matrix_info(x, name="thing") is False
    out = capsys.readouterr().out
    assert out.startswith("thing: not a tensor/ndarray")
    assert f"type={type(x).__name__}" in out


# ----------------------------------------------------------------- check_shape


@pytest.mark.parametrize("x", [np.zeros((2, 3)), torch.zeros(2, 3)])
def test_check_shape_passes_and_accepts_none_as_wildcard(x):
    assert check_shape(x, (2, 3)) is None
    assert check_shape(x, [2, None]) is None
    assert check_shape(x, (None, None)) is None


@pytest.mark.parametrize("x", [np.zeros((2, 3)), torch.zeros(2, 3)])
def test_check_shape_raises_with_both_shapes(x):
    with pytest.raises(
        ValueError, match=r"^scores has shape \(2, 3\) but expected \(2, 4\)$"
    ):
        check_shape(x, (2, 4), name="scores")
    with pytest.raises(
        ValueError, match=r"x has shape \(2, 3\) but expected \(2, 3, 1\)"
    ):
        check_shape(x, (2, 3, 1))
    with pytest.raises(
        ValueError, match=r"x has shape \(2, 3\) but expected \(any, 4\)"
    ):
        check_shape(x, (None, 4))
    with pytest.raises(ValueError, match=r"x has shape \(2, 3\) but expected \(6,\)"):
        check_shape(x, (6,))
