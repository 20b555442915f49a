"""Interop: NumPy (zero-copy numpy(), __array__), DLPack with NumPy and torch, item/tolist,
pickling, deepcopy and the metadata methods (stride, storage_offset, data_ptr)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import tensorix as tx

from ._harness import torch

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
DLPACK_DTYPES = ["float32", "float64", "float16", "int8", "uint8", "int16", "int32", "int64",
                 "bool", "complex64", "complex128"]


def _ptr(a):
    return a.__array_interface__["data"][0]


# -- NumPy ------------------------------------------------------------------------------------
def test_numpy_is_zero_copy_both_ways():
    x = tx.arange(6.0)
    a = x.numpy()
    assert _ptr(a) == x.data_ptr()
    a[0] = 10
    assert x.tolist()[0] == 10
    x.add_(1)
    assert a[1] == 2  # an in-place op on the tensor shows through the array


def test_numpy_of_view_shares_memory():
    base = tx.from_numpy(np.arange(12.0).reshape(3, 4))
    v = base[1:, ::2]
    arr = v.numpy()
    arr[0, 0] = -1
    assert base.numpy()[1, 0] == -1
    assert v.stride() == (4, 2) and v.storage_offset() == 4
    assert v.data_ptr() == base.data_ptr() + 4 * 8


def test_numpy_requires_grad_error():
    x = tx.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"numpy: can't call numpy\(\) on a tensor that "
                                           r"requires grad; use tensor.detach\(\).numpy\(\)"):
        x.numpy()
    d = x.detach().numpy()
    assert _ptr(d) == x.data_ptr()
    assert x.numpy(force=True).tolist() == [1.0, 1.0]


def test_array_protocol():
    x = tx.tensor([1.0, 2.0, 3.0])
    a = np.asarray(x)
    assert _ptr(a) == x.data_ptr()  # no copy on the CPU
    b = np.asarray(x, dtype=np.float64)
    assert b.dtype == np.float64 and _ptr(b) != x.data_ptr()
    c = x.__array__(copy=True)
    assert _ptr(c) != x.data_ptr() and c.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match=r"__array__: copy=False but converting this cpu "
                                         r"float32 tensor needs a copy"):
        x.__array__(np.float64, copy=False)
    assert _ptr(x.__array__(copy=False)) == x.data_ptr()
    np.testing.assert_array_equal(np.array(tx.tensor([[1, 2], [3, 4]])), [[1, 2], [3, 4]])
    assert np.asarray(tx.tensor([1.5], dtype=tx.bfloat16)).dtype.name == "bfloat16"


def test_from_numpy_roundtrip_keeps_dtype():
    for d in ("float16", "int8", "uint8", "bool", "complex64"):
        a = np.zeros(3, dtype=d)
        x = tx.from_numpy(a)
        assert x.dtype.name == d
        assert np.shares_memory(x.numpy(), a)


# -- DLPack -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DLPACK_DTYPES)
def test_dlpack_with_numpy(dtype):
    x = tx.zeros(4, dtype=getattr(tx, dtype))
    a = np.from_dlpack(x)
    assert a.dtype == np.dtype(dtype) and _ptr(a) == x.data_ptr()
    y = tx.from_dlpack(np.ones(3, dtype=dtype))
    assert y.dtype.name == dtype


def test_numpy_dlpack_shares_memory():
    a = np.arange(5.0)
    x = tx.from_dlpack(a)
    a[2] = 100
    assert x.tolist()[2] == 100
    assert x.__dlpack_device__() == (1, 0)


@needs_torch
@pytest.mark.parametrize("dtype", DLPACK_DTYPES)
def test_dlpack_with_torch(dtype):
    x = tx.zeros(3, dtype=getattr(tx, dtype))
    t = torch.from_dlpack(x)
    assert str(t.dtype) == f"torch.{dtype}" and t.data_ptr() == x.data_ptr()
    t[1] = 1
    assert bool(x.tolist()[1])
    src = torch.ones(2, 3, dtype=getattr(torch, dtype))
    y = tx.from_dlpack(src)
    assert y.dtype.name == dtype and y.data_ptr() == src.data_ptr()
    src[0, 0] = 0
    assert not bool(y.tolist()[0][0])


@needs_torch
def test_dlpack_torch_strided_views():
    t = torch.arange(12.0).reshape(3, 4).t()
    y = tx.from_dlpack(t)
    assert y.stride() == t.stride() and tuple(y.shape) == (4, 3)
    np.testing.assert_array_equal(y.numpy(), t.numpy())
    x = tx.from_numpy(np.arange(12.0).reshape(3, 4))[:, 1::2]
    back = torch.from_dlpack(x)
    assert back.stride() == x.stride()
    np.testing.assert_array_equal(back.numpy(), x.numpy())


@needs_torch
def test_dlpack_errors():
    with pytest.raises(BufferError, match=r"__dlpack__: dtype bfloat16 has no DLPack code"):
        torch.from_dlpack(tx.ones(2, dtype=tx.bfloat16))
    with pytest.raises(BufferError, match=r"from_dlpack\(\): the array module can't import "
                                          r"this tensor"):
        tx.from_dlpack(torch.ones(2, dtype=torch.bfloat16))
    with pytest.raises(RuntimeError, match=r"__dlpack__: can't export a tensor that requires "
                                           r"grad; use tensor.detach\(\)"):
        torch.from_dlpack(tx.ones(2, requires_grad=True))
    with pytest.raises(TypeError, match=r"from_dlpack\(\): expected an object with __dlpack__ "
                                        r"and __dlpack_device__, got list"):
        tx.from_dlpack([1, 2])


def test_from_dlpack_of_a_tensor_aliases():
    x = tx.ones(3, requires_grad=True)
    y = tx.from_dlpack(x)
    assert y.data_ptr() == x.data_ptr() and not y.requires_grad


# -- item / tolist ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,value,kind", [
    ("float32", 1.5, float), ("float64", -2.25, float), ("float16", 0.5, float),
    ("bfloat16", 1.5, float), ("float8_e4m3fn", 1.5, float), ("float8_e5m2", -2.0, float),
    ("int8", -3, int), ("uint8", 200, int), ("int64", 2 ** 40, int), ("bool", True, bool),
    ("complex64", 1 + 2j, complex), ("complex128", -1j, complex)])
def test_item(dtype, value, kind):
    x = tx.tensor(value, dtype=getattr(tx, dtype))
    v = x.item()
    assert type(v) is kind and v == value
    assert tx.tensor([[value]], dtype=getattr(tx, dtype)).item() == value


def test_item_errors_and_conversions():
    with pytest.raises(RuntimeError, match=r"item: a Tensor with 2 elements cannot be converted "
                                           r"to a Python scalar"):
        tx.ones(2).item()
    x = tx.tensor(2.75)
    assert float(x) == 2.75 and int(x) == 2 and bool(x) and complex(x) == 2.75
    assert [10, 20, 30][tx.tensor(1)] == 20
    with pytest.raises(TypeError, match=r"only integer tensors of a single element"):
        [1, 2][tx.tensor(1.0)]


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16", "int32", "bool",
                                   "complex64", "uint8"])
def test_tolist_matches_torch(dtype):
    data = [[0.5, -1.0, 2.0], [3.25, 0.0, 7.0]] if dtype not in ("uint8", "bool") else \
        [[0, 1, 2], [3, 0, 1]]
    x = tx.tensor(data, dtype=getattr(tx, dtype))
    t = torch.tensor(data, dtype=getattr(torch, dtype))
    got, want = x.tolist(), t.tolist()
    assert got == want
    assert [[type(v) for v in row] for row in got] == [[type(v) for v in row] for row in want]
    assert x[0, 1].tolist() == t[0, 1].tolist()  # a 0-d tensor gives a scalar
    assert tx.zeros(0, 2).tolist() == []


# -- pickle / deepcopy ------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: tx.tensor([[1.5, -2.0], [3.0, 4.0]], requires_grad=True),
    lambda: tx.tensor([1, 2, 3], dtype=tx.int8),
    lambda: tx.tensor([0.1, 7.0], dtype=tx.bfloat16),
    lambda: tx.tensor([1.0, -2.0], dtype=tx.float8_e4m3fn),
    lambda: tx.tensor(3.5, dtype=tx.float64),
    lambda: tx.zeros(0, 3),
    lambda: tx.tensor([True, False]),
    lambda: tx.tensor([1 + 2j], dtype=tx.complex128),
    lambda: tx.from_numpy(np.arange(12.0).reshape(3, 4))[:, ::2],
], ids=["f32-grad", "int8", "bf16", "fp8", "0d", "empty", "bool", "c128", "view"])
def test_pickle_roundtrip(make):
    x = make()
    y = pickle.loads(pickle.dumps(x))
    assert y.dtype is x.dtype and y.shape == x.shape and y.requires_grad == x.requires_grad
    assert y.is_leaf and y.device == x.device
    np.testing.assert_array_equal(np.asarray(y.detach().tolist()), np.asarray(x.detach().tolist()))
    assert y.numel() == 0 or y.data_ptr() != x.data_ptr()


def test_deepcopy():
    x = tx.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    y = copy.deepcopy(x)
    assert y is not x and y.requires_grad and y.is_leaf and y.dtype is x.dtype
    assert y.data_ptr() != x.data_ptr() and y.tolist() == [1.0, 2.0]
    assert y.grad is not None and y.grad.tolist() == [2.0, 4.0]
    assert y.grad.data_ptr() != x.grad.data_ptr()
    with tx.no_grad():
        y.add_(1)
    assert x.tolist() == [1.0, 2.0]
    a, b = copy.deepcopy([x, x])  # the memo keeps aliasing
    assert a is b
    with pytest.raises(RuntimeError, match=r"deepcopy: only tensors created explicitly by the "
                                           r"user \(graph leaves\)"):
        copy.deepcopy(x * 2)
    h = copy.deepcopy(tx.tensor([0.5], dtype=tx.bfloat16))
    assert h.dtype is tx.bfloat16 and h.tolist() == [0.5]


@needs_torch
def test_strides_and_offsets_match_torch():
    a = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    x, t = tx.from_numpy(a.copy()), torch.from_numpy(a.copy())
    for index in [(slice(None), 1), (1, slice(1, None), slice(None, None, 2)),
                  (slice(None), slice(None), 3), (0,)]:
        xv, tv = x[index], t[index]
        assert xv.stride() == tv.stride() and xv.storage_offset() == tv.storage_offset()
        assert xv.data_ptr() - x.data_ptr() == tv.data_ptr() - t.data_ptr()
    assert x.stride(0) == 12 and x.stride(-1) == 1
    assert x.transpose(0, 2).stride() == t.transpose(0, 2).stride()
