"""Tensor creation: dtype inference, shapes, values and errors, against torch where installed."""

from __future__ import annotations

import fractions

import numpy as np
import pytest

import tensorix as tx

from ._harness import torch

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")


def _tdtype(name):
    return getattr(torch, name)


def _same(x, t):
    """tensorix ``x`` equals torch ``t``: dtype name, shape and values (NaN-aware)."""
    assert x.dtype.name == str(t.dtype).replace("torch.", ""), (x.dtype, t.dtype)
    assert tuple(x.shape) == tuple(t.shape)
    want = t.to(torch.float32).numpy() if t.dtype == torch.bfloat16 else t.numpy()
    got = np.asarray(x.numpy(), dtype=want.dtype)
    np.testing.assert_array_equal(got, want)


# -- tensor(): inference ------------------------------------------------------------------------
def _inference_cases():
    """(label, builder(lib)) pairs: the same data built for tensorix and torch."""
    return [
        ("int", lambda m: 3), ("float", lambda m: 2.5), ("bool", lambda m: True),
        ("complex", lambda m: 1 + 2j), ("list-int", lambda m: [1, 2, 3]),
        ("bool-int", lambda m: [True, 1]), ("int-float", lambda m: [1, 2.0]),
        ("float-complex", lambda m: [1.0, 1j]), ("nested", lambda m: [[1, 2], [3, 4]]),
        ("tuple", lambda m: (1, 2)), ("empty", lambda m: []), ("empty-2d", lambda m: [[], []]),
        ("np-f64-scalar", lambda m: np.float64(1.5)), ("np-i32-scalar", lambda m: np.int32(3)),
        ("np-scalars", lambda m: [np.int32(1), np.int32(2)]),
        ("np-f16-and-float", lambda m: [np.float16(1.0), 2.0]),
        ("np-array-f16", lambda m: np.ones((2, 3), np.float16)),
        ("np-array-i8", lambda m: np.arange(4, dtype=np.int8)),
        ("np-array-bool", lambda m: np.array([True, False])),
        ("0d-tensors", lambda m: [m.tensor(1.0), m.tensor(2.0)]),
        ("0d-f64-tensor-and-float", lambda m: [m.tensor(1.0, dtype=m.float64), 2.0]),
        ("0d-i32-tensors", lambda m: [m.tensor(1, dtype=m.int32), m.tensor(2, dtype=m.int32)]),
        ("0d-int-tensor-and-float", lambda m: [m.tensor(1), 2.5]),
        ("list-of-arrays", lambda m: [np.array([1, 2], np.int32), np.array([3, 4], np.int32)]),
        ("min-int64", lambda m: -2 ** 63), ("big-int", lambda m: 2 ** 62),
    ]


@needs_torch
@pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy:UserWarning")
@pytest.mark.parametrize("label,build", _inference_cases(), ids=[c[0] for c in _inference_cases()])
def test_tensor_inference_matches_torch(label, build):
    _same(tx.tensor(build(tx)), torch.tensor(build(torch)))


@needs_torch
@pytest.mark.parametrize("default", ["float32", "float64"])
def test_inference_follows_default_dtype(default):
    tx.set_default_dtype(getattr(tx, default))
    old = torch.get_default_dtype()
    torch.set_default_dtype(_tdtype(default))
    try:
        for data in (1.5, [1, 2.5], 1j, [[1.0], [2.0]]):
            _same(tx.tensor(data), torch.tensor(data))
        assert tx.zeros(2).dtype.name == default
        assert tx.arange(0.0, 1.0, 0.5).dtype.name == default
        assert tx.full((1,), 1j).dtype is tx.get_default_dtype().to_complex()
    finally:
        torch.set_default_dtype(old)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int8", "int64",
                                   "uint8", "bool", "complex64"])
def test_tensor_explicit_dtype(dtype):
    data = [[0.0, 1.7, -2.2], [3.0, 0.5, 9.9]] if dtype not in ("uint8",) else [[0, 1.7, 2.2]]
    _same(tx.tensor(data, dtype=getattr(tx, dtype)), torch.tensor(data, dtype=_tdtype(dtype)))


def test_tensor_copies_and_detaches():
    a = np.arange(3.0)
    x = tx.tensor(a)
    a[0] = 10
    assert x.numpy()[0] == 0
    y = tx.tensor([1.0, 2.0], requires_grad=True)
    z = tx.tensor(y)
    assert not z.requires_grad and z.is_leaf
    z.numpy()[0] = 5
    assert y.detach().numpy()[0] == 1
    assert tx.tensor(y, dtype=tx.float64).dtype is tx.float64


def test_tensor_fraction_counts_as_float():
    assert tx.tensor(fractions.Fraction(1, 2)).item() == 0.5


@pytest.mark.parametrize("data,match", [
    ([[1, 2], [3]], r"tensor\(\): expected sequence of length 2 at dim 1 \(got 1\)"),
    ([1, [2]], r"tensor\(\): expected a scalar at dim 1"),
    ([[1], 2], r"tensor\(\): expected a sequence at dim 1 \(got a scalar\)"),
    ([np.ones(2), np.ones(3)], r"expected sequence of length 2 at dim 1 \(got 3\)"),
    ([[], [1]], r"expected sequence of length 0 at dim 1 \(got 1\)"),
])
def test_ragged_input_errors(data, match):
    with pytest.raises(ValueError, match=match):
        tx.tensor(data)


def test_bad_data_errors():
    with pytest.raises(RuntimeError, match=r"tensor\(\): value cannot be converted to type "
                                           r"int64 without overflow"):
        tx.tensor(2 ** 63)
    with pytest.raises(RuntimeError, match="without overflow"):
        tx.tensor([1, -2 ** 64])
    with pytest.raises(TypeError, match=r"tensor\(\): invalid data type 'str'"):
        tx.tensor("abc")
    with pytest.raises(TypeError, match=r"invalid data type 'str'"):
        tx.tensor([1, "a"])
    with pytest.raises(RuntimeError, match=r"could not infer dtype of NoneType"):
        tx.tensor([None])
    with pytest.raises(RuntimeError, match=r"could not infer dtype of object"):
        tx.tensor(object())
    with pytest.raises(TypeError, match=r"can't convert an array of type uint16"):
        tx.tensor(np.zeros(2, np.uint16))
    with pytest.raises(TypeError, match=r"dtype object"):
        tx.tensor(np.array([1, "a"], dtype=object))
    with pytest.raises(TypeError, match=r"promotion for float8"):
        tx.tensor([tx.tensor(1.0, dtype=tx.float8_e4m3fn), tx.tensor(1.0, dtype=tx.float16)])


def test_requires_grad_argument():
    x = tx.tensor([1.0, 2.0], requires_grad=True)
    assert x.requires_grad and x.is_leaf
    with pytest.raises(RuntimeError, match="only floating point and complex tensors"):
        tx.tensor([1, 2], requires_grad=True)
    for fn in (tx.zeros, tx.ones, tx.empty):
        assert fn(2, requires_grad=True).requires_grad
    assert tx.arange(3.0, requires_grad=True).requires_grad
    assert tx.eye(2, requires_grad=True).requires_grad
    assert tx.zeros_like(x, requires_grad=True).requires_grad
    assert not tx.zeros_like(x).requires_grad


# -- as_tensor / asarray / from_numpy -----------------------------------------------------------
def test_as_tensor_shares_memory():
    a = np.zeros(3, np.float32)
    x = tx.as_tensor(a)
    x.numpy()[1] = 7
    assert a[1] == 7
    y = tx.as_tensor(a, dtype=tx.float64)  # a conversion copies
    y.numpy()[2] = 1
    assert a[2] == 0
    t = tx.ones(2)
    assert tx.as_tensor(t) is t
    assert tx.as_tensor(t, dtype=tx.float64) is not t
    assert tx.as_tensor([1, 2]).dtype is tx.int64


def test_asarray_copy_semantics():
    a = np.arange(4.0)
    shared = tx.asarray(a)
    assert shared.data_ptr() == a.__array_interface__["data"][0]
    copied = tx.asarray(a, copy=True)
    assert copied.data_ptr() != a.__array_interface__["data"][0]
    with pytest.raises(ValueError, match=r"asarray\(\): copy=False but the conversion needs a "
                                         r"copy"):
        tx.asarray(a, dtype=tx.float32, copy=False)
    assert tx.asarray(a, copy=False).data_ptr() == shared.data_ptr()
    g = tx.asarray([1.0, 2.0], requires_grad=True)
    assert g.requires_grad


def test_from_numpy():
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    x = tx.from_numpy(a)
    assert x.dtype is tx.int16 and tuple(x.shape) == (2, 3)
    a[0, 0] = 42
    assert x.numpy()[0, 0] == 42
    v = tx.from_numpy(a[:, 1])  # non-contiguous views keep their strides
    assert v.stride() == (3,)
    with pytest.raises(TypeError, match=r"from_numpy\(\): expected np.ndarray \(got list\)"):
        tx.from_numpy([1, 2])
    with pytest.raises(TypeError, match=r"from_numpy\(\): can't convert an array of type "
                                        r"uint32"):
        tx.from_numpy(np.zeros(2, np.uint32))


# -- filled ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_filled_size_forms(name):
    fn = getattr(tx, name)
    for args in [(2, 3), ((2, 3),), ([2, 3],), (tx.Size([2, 3]),)]:
        x = fn(*args)
        assert tuple(x.shape) == (2, 3) and x.dtype is tx.float32
    assert tuple(fn().shape) == () and tuple(fn(()).shape) == ()
    assert tuple(fn(0, 4).shape) == (0, 4)
    assert fn(2, dtype=tx.int8).dtype is tx.int8
    with pytest.raises(RuntimeError, match=rf"{name}\(\): trying to create tensor with negative "
                                           r"dimension -1: \[2, -1\]"):
        fn(2, -1)
    with pytest.raises(TypeError, match=rf"{name}\(\): argument 'size' must be a tuple of ints, "
                                        r"but found element of type float"):
        fn(2.5)


def test_zeros_ones_values():
    np.testing.assert_array_equal(tx.zeros(2, 2).numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(tx.ones(3, dtype=tx.bool).numpy(), np.ones(3, bool))
    assert tx.ones(2, dtype=tx.bfloat16).tolist() == [1.0, 1.0]


@needs_torch
@pytest.mark.parametrize("value", [True, 3, 2.5, 1 + 1j, -0.0, float("inf")])
def test_full_inference(value):
    _same(tx.full((2, 2), value), torch.full((2, 2), value))
    if isinstance(value, complex):
        with pytest.raises(RuntimeError, match=r"full\(\): value cannot be converted to type "
                                               r"float64 without overflow"):
            tx.full((3,), value, dtype=tx.float64)
    else:
        _same(tx.full((3,), value, dtype=tx.float64),
              torch.full((3,), value, dtype=torch.float64))


def test_full_forms_and_errors():
    assert tuple(tx.full(3, 1.0).shape) == (3,)
    assert tuple(tx.full((), 1.0).shape) == ()
    assert tx.full((2,), tx.tensor(4)).tolist() == [4, 4]
    assert tx.full((2,), np.float64(0.5)).dtype is tx.float32
    with pytest.raises(RuntimeError, match=r"full\(\): fill_value must be a number or a "
                                           r"one-element tensor"):
        tx.full((2,), tx.ones(2))
    with pytest.raises(RuntimeError, match=r"full\(\): trying to create tensor with negative"):
        tx.full((-1,), 0)


@needs_torch
def test_scalar_tensor():
    for v in (3, True, 2.5):
        _same(tx.scalar_tensor(v), torch.scalar_tensor(v))
    _same(tx.scalar_tensor(3, dtype=tx.int32), torch.scalar_tensor(3, dtype=torch.int32))
    assert tx.scalar_tensor(tx.tensor(2)).item() == 2.0


def test_like_variants():
    x = tx.ones(2, 3, dtype=tx.float64)
    for fn, val in ((tx.zeros_like, 0), (tx.ones_like, 1)):
        y = fn(x)
        assert y.dtype is tx.float64 and tuple(y.shape) == (2, 3)
        np.testing.assert_array_equal(y.numpy(), np.full((2, 3), val))
    assert tx.empty_like(x).shape == x.shape
    f = tx.full_like(x, 7)
    assert f.dtype is tx.float64 and f.tolist() == [[7.0] * 3] * 2
    assert tx.zeros_like(x, dtype=tx.int32).dtype is tx.int32
    assert tx.full_like(tx.zeros(2, dtype=tx.int64), 2.7).tolist() == [2, 2]
    with pytest.raises(TypeError, match=r"zeros_like\(\): argument 'input' must be a Tensor, "
                                        r"not list"):
        tx.zeros_like([1, 2])


def test_new_methods():
    x = tx.ones(2, dtype=tx.float64)
    assert x.new_zeros(3).dtype is tx.float64 and tuple(x.new_zeros(3).shape) == (3,)
    assert x.new_ones((2, 2)).tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert x.new_empty(1).dtype is tx.float64
    assert x.new_full((2,), 3).tolist() == [3.0, 3.0]
    assert x.new_tensor([1, 2]).dtype is tx.float64
    assert x.new_zeros(2, dtype=tx.int8).dtype is tx.int8


# -- ranges ------------------------------------------------------------------------------------
ARANGE_CASES = [((5,), {}), ((1, 2.5, 0.5), {}), ((0, 1, 0.1), {}), ((10, 0, -3), {}),
                ((0, 5.5), {"dtype": "int64"}), ((-0.5, 3.7, 1.5), {"dtype": "int64"}),
                ((0, 5), {"dtype": "float64"}), ((0.0, 2.0, 0.3), {"dtype": "float64"}),
                ((3,), {"dtype": "bfloat16"}), ((0, 0), {}), ((-3, 3), {"dtype": "int8"}),
                ((1, -2.0, -0.25), {"dtype": "float16"})]


@needs_torch
@pytest.mark.parametrize("args,kwargs", ARANGE_CASES, ids=[str(c) for c in ARANGE_CASES])
def test_arange_matches_torch(args, kwargs):
    tkw = {k: _tdtype(v) for k, v in kwargs.items()}
    xkw = {k: getattr(tx, v) for k, v in kwargs.items()}
    _same(tx.arange(*args, **xkw), torch.arange(*args, **tkw))


@needs_torch
def test_arange_tensor_bounds():
    _same(tx.arange(tx.tensor(3)), torch.arange(torch.tensor(3)))
    _same(tx.arange(tx.tensor(3.0)), torch.arange(torch.tensor(3.0)))


def test_arange_errors():
    with pytest.raises(RuntimeError, match=r"arange\(\): step must be nonzero"):
        tx.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match=r"arange\(\): upper bound and lower bound "
                                           r"inconsistent with step sign"):
        tx.arange(0, 5, -1)
    with pytest.raises(RuntimeError, match=r"arange\(\): unsupported range: nan -> 1"):
        tx.arange(float("nan"), 1)
    with pytest.raises(RuntimeError, match=r"unsupported range: 0 -> inf"):
        tx.arange(0, float("inf"))
    with pytest.raises(TypeError, match=r"arange\(\): argument 'end' must be a real number, "
                                        r"not str"):
        tx.arange("5")
    with pytest.raises(RuntimeError, match=r"argument 'start' must be a number or a "
                                           r"one-element tensor"):
        tx.arange(tx.ones(2), 5)


LINSPACE_CASES = [(0, 1, 5, None), (-3, 7.3, 11, None), (0, 10, 4, "int64"), (0, 1, 1, None),
                  (0, 1, 0, None), (2, -2, 7, "float64"), (0, 1, 6, "float16"),
                  (1 + 1j, 2 + 2j, 3, None), (5, 5, 3, None), (0, 100, 9, "bfloat16")]


@needs_torch
@pytest.mark.parametrize("start,end,steps,dtype", LINSPACE_CASES,
                         ids=[str(c) for c in LINSPACE_CASES])
def test_linspace_matches_torch(start, end, steps, dtype):
    got = tx.linspace(start, end, steps, dtype=dtype and getattr(tx, dtype))
    want = torch.linspace(start, end, steps, dtype=dtype and _tdtype(dtype))
    assert got.dtype.name == str(want.dtype)[6:] and tuple(got.shape) == tuple(want.shape)
    w = want.to(torch.float32).numpy() if want.dtype == torch.bfloat16 else want.numpy()
    # same kernel as PyTorch (both ends exact); allow one rounding step in the middle
    np.testing.assert_allclose(np.asarray(got.tolist()), w, rtol=1e-6, atol=1e-6)
    if steps:
        assert got.tolist()[0] == w.tolist()[0] and got.tolist()[-1] == w.tolist()[-1]


@needs_torch
@pytest.mark.parametrize("start,end,steps,base,dtype", [
    (0, 2, 3, 10.0, None), (0, 2, 3, 2.0, None), (-2, 2, 9, 10.0, "float64"),
    (0, 3, 4, 10.0, "int64"), (1, 0, 5, 3.0, None), (0, 1, 0, 10.0, None)])
def test_logspace_matches_torch(start, end, steps, base, dtype):
    got = tx.logspace(start, end, steps, base, dtype=dtype and getattr(tx, dtype))
    want = torch.logspace(start, end, steps, base, dtype=dtype and _tdtype(dtype))
    assert got.dtype.name == str(want.dtype)[6:]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_linspace_errors():
    with pytest.raises(RuntimeError, match=r"linspace\(\): number of steps must be "
                                           r"non-negative, got -1"):
        tx.linspace(0, 1, -1)
    with pytest.raises(TypeError, match=r"logspace\(\): argument 'steps' must be an int, not "
                                        r"float"):
        tx.logspace(0, 1, 2.5)


@needs_torch
@pytest.mark.parametrize("args,dtype", [((3,), None), ((2, 4), None), ((4, 2), "int64"),
                                        ((0,), None), ((3, 0), "bool"), ((2,), "bfloat16")])
def test_eye_matches_torch(args, dtype):
    _same(tx.eye(*args, dtype=dtype and getattr(tx, dtype)),
          torch.eye(*args, dtype=dtype and _tdtype(dtype)))


def test_eye_errors():
    with pytest.raises(RuntimeError, match=r"eye\(\): n must be greater or equal to 0, got -1"):
        tx.eye(-1)
    with pytest.raises(RuntimeError, match=r"eye\(\): m must be greater or equal to 0, got -2"):
        tx.eye(2, -2)
    with pytest.raises(TypeError, match=r"eye\(\): argument 'n' must be an int, not float"):
        tx.eye(2.0)


@needs_torch
@pytest.mark.parametrize("row,col,offset", [(3, 3, 0), (3, 4, 1), (4, 3, -1), (0, 0, 0),
                                            (3, 3, 5), (3, 3, -5), (1, 5, 2)])
def test_tri_indices_match_torch(row, col, offset):
    _same(tx.tril_indices(row, col, offset), torch.tril_indices(row, col, offset))
    _same(tx.triu_indices(row, col, offset), torch.triu_indices(row, col, offset))
    _same(tx.tril_indices(row, col, offset, dtype=tx.int32),
          torch.tril_indices(row, col, offset, dtype=torch.int32))


def test_tri_indices_errors():
    with pytest.raises(RuntimeError, match=r"tril_indices\(\): row must be non-negative, "
                                           r"got -1"):
        tx.tril_indices(-1, 2)
    with pytest.raises(RuntimeError, match=r"triu_indices\(\): dtype must be an integer type, "
                                           r"got float32"):
        tx.triu_indices(2, 2, dtype=tx.float32)
    with pytest.raises(TypeError, match=r"triu_indices\(\): argument 'col' must be an int"):
        tx.triu_indices(2, 2.0)


def test_device_argument():
    assert tx.zeros(2, device="cpu").device == tx.device("cpu")
    assert tx.tensor([1], device=tx.device("cpu")).device.type == "cpu"
    with pytest.raises(ValueError, match="device: expected 'cpu' or 'cuda'"):
        tx.zeros(2, device="tpu")


@pytest.mark.cuda
@pytest.mark.skipif(not tx.backend.cuda_available(), reason="needs a GPU")
def test_creation_on_cuda():
    for x in (tx.zeros(2, device="cuda"), tx.tensor([1.0, 2.0], device="cuda"),
              tx.arange(4, device="cuda"), tx.linspace(0, 1, 3, device="cuda"),
              tx.eye(2, device="cuda"), tx.full((2,), 1.5, device="cuda"),
              tx.tril_indices(3, 3, device="cuda")):
        assert x.device.type == "cuda"
    y = tx.tensor([1.5, 2.5], device="cuda")
    assert tx.tensor(y).device.type == "cuda" and tx.tensor(y, device="cpu").tolist() == [1.5, 2.5]


# -- complex / polar (values and gradients are in the op matrix; here: dtypes and errors) -------
@needs_torch
def test_complex_and_polar_dtypes_and_special_values():
    re, im = [1.0, float("inf"), -0.0], [float("inf"), 2.0, 1.0]
    for d in ("float32", "float64"):
        x = tx.complex(tx.tensor(re, dtype=getattr(tx, d)), tx.tensor(im, dtype=getattr(tx, d)))
        t = torch.complex(torch.tensor(re, dtype=getattr(torch, d)),
                          torch.tensor(im, dtype=getattr(torch, d)))
        _same(x, t)  # an infinite imaginary part leaves the real part alone
    half = tx.complex(tx.ones(2, dtype=tx.float16), tx.zeros(2, dtype=tx.float16))
    assert half.dtype is tx.complex64  # there is no complex32
    p = tx.polar(tx.tensor([2.0]), tx.tensor([np.pi / 2]))
    np.testing.assert_allclose(p.numpy(), [2j], atol=1e-6)


def test_complex_and_polar_errors():
    with pytest.raises(RuntimeError, match=r"complex\(\): expected both inputs to be Half, Float "
                                           r"or Double tensors but got float32 and float64"):
        tx.complex(tx.ones(2), tx.ones(2, dtype=tx.float64))
    with pytest.raises(RuntimeError, match=r"polar\(\): expected both inputs to be Half, Float or "
                                           r"Double tensors but got int64 and int64"):
        tx.polar(tx.ones(2, dtype=tx.int64), tx.ones(2, dtype=tx.int64))
    with pytest.raises(TypeError, match=r"complex\(\): argument 'imag' must be a Tensor, not "
                                        r"float"):
        tx.complex(tx.ones(2), 1.0)
