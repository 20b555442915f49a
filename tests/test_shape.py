"""Shape ops beyond the op matrix: dtype promotion and legacy empties in cat, views returned by
the splits, chunk/tensor_split counts against torch over a grid of sizes, every pad mode (and
negative pads) with gradients and second order against torch, repeat_interleave's forms,
meshgrid/broadcast helpers, the in-place triangles, and the argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorix as tx
from tensorix.testing import assert_close, gradcheck, gradgradcheck

RNG = np.random.default_rng(11)


def _torch():
    return pytest.importorskip("torch")


def _shares(a, b):
    return np.shares_memory(a.numpy(force=True), b.numpy(force=True))


# -- joining ---------------------------------------------------------------------------------------
def test_cat_promotes_dtypes_like_torch():
    torch = _torch()
    for a, b in [(tx.float32, tx.int64), (tx.int32, tx.int64), (tx.bool, tx.float64),
                 (tx.float16, tx.bfloat16)]:
        got = tx.cat([tx.ones(2, dtype=a), tx.zeros(3, dtype=b)])
        want = torch.cat([torch.ones(2, dtype=getattr(torch, a.name)),
                          torch.zeros(3, dtype=getattr(torch, b.name))])
        assert got.dtype.name == str(want.dtype).split(".")[1]


def test_cat_skips_legacy_empty_1d_and_gives_it_an_empty_gradient():
    x = tx.ones(2, 3, requires_grad=True)
    e = tx.zeros(0, requires_grad=True)
    out = tx.cat([e, x, e], dim=1)
    assert out.shape == (2, 3)
    out.sum().backward()
    assert e.grad.shape == (0,) and x.grad.tolist() == [[1.0] * 3] * 2
    assert tx.cat([tx.zeros(0), tx.ones(2)]).tolist() == [1.0, 1.0]
    assert tx.concat([x, x]).shape == (4, 3) and tx.concatenate([x], dim=-1).shape == (2, 3)


def test_cat_output_is_a_copy():
    x = tx.ones(2, 2)
    out = tx.cat([x])
    assert not _shares(out, x)


def test_stacks_match_torch():
    torch = _torch()
    a, b = RNG.standard_normal(3), RNG.standard_normal(3)
    m = RNG.standard_normal((3, 2))
    for name in ("hstack", "vstack", "dstack", "column_stack"):
        got = getattr(tx, name)([tx.tensor(a), tx.tensor(b)])
        assert_close(got, getattr(torch, name)([torch.tensor(a), torch.tensor(b)]))
    assert_close(tx.column_stack([tx.tensor(a), tx.tensor(m)]),
                 torch.column_stack([torch.tensor(a), torch.tensor(m)]))
    assert_close(tx.stack([tx.tensor(m)] * 3, dim=1), torch.stack([torch.tensor(m)] * 3, dim=1))
    assert tx.atleast_1d(tx.tensor(1.), tx.tensor(2.))[1].shape == (1,)
    assert tx.atleast_2d([tx.tensor(1.)])[0].shape == (1, 1)
    one = tx.zeros(2, 3, 4)
    assert tx.atleast_3d(one) is one


# -- splitting -------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 5, 6, 7])
@pytest.mark.parametrize("k", [1, 2, 3, 4, 8])
def test_chunk_and_tensor_split_counts_match_torch(n, k):
    torch = _torch()
    x, t = tx.arange(float(n)), torch.arange(float(n))
    for ours, theirs in [(x.chunk(k), t.chunk(k)), (x.tensor_split(k), t.tensor_split(k)),
                         (x.split(k), t.split(k))]:
        assert [p.tolist() for p in ours] == [p.tolist() for p in theirs]


def test_splits_are_views_with_gradients():
    torch = _torch()
    x = RNG.standard_normal((4, 6))
    a, ta = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    parts, tparts = a.split([1, 3, 2], dim=1), ta.split([1, 3, 2], dim=1)
    assert all(p._base is a for p in parts)
    (parts[0].sum() * 2 + (parts[2] ** 2).sum()).backward()
    (tparts[0].sum() * 2 + (tparts[2] ** 2).sum()).backward()
    assert_close(a.grad, ta.grad)
    idx = tx.tensor([1, 4])
    assert [p.shape[1] for p in a.tensor_split(idx, dim=1)] == [1, 3, 2]
    assert [p.shape[0] for p in a.tensor_split(tx.tensor(3))] == [2, 1, 1]


# -- repeating -------------------------------------------------------------------------------------
def test_repeat_interleave_forms():
    torch = _torch()
    x = RNG.standard_normal((2, 3))
    r = np.array([2, 0, 1])
    assert_close(tx.tensor(x).repeat_interleave(tx.tensor(r), dim=1, output_size=3),
                 torch.tensor(x).repeat_interleave(torch.from_numpy(r), dim=1))
    assert tx.repeat_interleave(tx.tensor([2, 1])).tolist() == [0, 0, 1]
    assert tx.tensor(3.).repeat_interleave(2).tolist() == [3.0, 3.0]
    a = tx.tensor(x, requires_grad=True)
    gradcheck(lambda t: t.repeat_interleave(tx.tensor(r), dim=1) ** 2, [a])
    gradgradcheck(lambda t: t.repeat_interleave(2, dim=0) ** 2, [a])
    gradgradcheck(lambda t: t.repeat(2, 1, 2) ** 2, [a])


# -- reordering ------------------------------------------------------------------------------------
def test_flip_is_a_contiguous_copy_and_roll_rot90_match_torch():
    torch = _torch()
    x = RNG.standard_normal((3, 4, 2))
    f = tx.tensor(x).flip((0, 2))
    assert f.is_contiguous() and all(s > 0 for s in f.stride())
    t = torch.tensor(x)
    assert_close(tx.tensor(x).fliplr(), t.fliplr())
    assert_close(tx.tensor(x).flipud(), t.flipud())
    assert_close(tx.tensor(x).roll((2, -5), (1, 0)), t.roll((2, -5), (1, 0)))
    for k in range(-5, 6):
        assert_close(tx.tensor(x).rot90(k, (2, 0)), t.rot90(k, (2, 0)))
    a = tx.tensor(x, requires_grad=True)
    gradgradcheck(lambda v: v.rot90(1, (0, 1)).roll(1, 2).flip(1) ** 2, [a])


# -- padding ---------------------------------------------------------------------------------------
PAD_CASES = [
    ("constant", (2, 3), (1, 2)), ("constant", (2, 3, 4), (-1, 2, 1, -2)),
    ("constant", (2, 3), (0, 0, 1, 1)), ("reflect", (2, 5), (3, 1)),
    ("reflect", (1, 2, 4, 5), (2, 0, 1, 3)), ("reflect", (2, 3, 4, 5, 6), (1, 2, 0, 1, 2, 1)),
    ("reflect", (2, 3, 4), (-1, 2)), ("replicate", (2, 3), (4, 0)),
    ("replicate", (2, 3, 4), (2, -1, 3, 1)), ("replicate", (3, 3, 2, 2), (1, 1, 1, 1, 1, 1)),
    ("circular", (2, 3, 4), (4, 2)), ("circular", (1, 2, 3, 4), (2, -1, -1, 2)),
    ("circular", (1, 1, 2, 3, 2), (1, 1, 2, 0, 1, 2)),
]


@pytest.mark.parametrize("mode,shape,pad", PAD_CASES)
def test_pad_values_and_gradients_against_torch(mode, shape, pad):
    torch = _torch()
    x = RNG.standard_normal(shape)
    kw = {"value": 0.5} if mode == "constant" else {}
    a, ta = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out = tx.pad(a, pad, mode, **kw)
    tout = torch.nn.functional.pad(ta, pad, mode, **kw)
    assert_close(out, tout)
    w = RNG.standard_normal(tuple(tout.shape))
    (out * tx.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    assert_close(a.grad, ta.grad)
    gradgradcheck(lambda v: tx.pad(v, pad, mode, **kw) ** 2, [tx.tensor(x, requires_grad=True)])


def test_pad_keeps_integer_dtypes():
    x = tx.arange(6).reshape(2, 3)
    out = tx.pad(x, (1, 1), value=9)
    assert out.dtype == tx.int64 and out[0].tolist() == [9, 0, 1, 2, 9]
    assert tx.pad(x, (1, 1), mode="replicate").tolist() == [[0, 0, 1, 2, 2], [3, 3, 4, 5, 5]]


# -- triangles, grids, broadcasting ----------------------------------------------------------------
def test_tril_triu_inplace_and_batched():
    torch = _torch()
    x = RNG.standard_normal((2, 3, 4))
    for k in (-2, 0, 1, 5):
        assert_close(tx.tensor(x).tril(k), torch.tensor(x).tril(k))
        assert_close(tx.tensor(x).triu(k), torch.tensor(x).triu(k))
    y = tx.tensor(x)
    assert y.tril_(1) is y and y._version[0] == 1
    assert_close(y, np.tril(x, 1))
    b = tx.tensor(x, requires_grad=True) * 1.0
    b.triu_()
    b.sum().backward()


def test_meshgrid_and_broadcast_helpers():
    torch = _torch()
    a, b = np.arange(3.0), np.arange(2.0)
    for indexing in ("ij", "xy"):
        for ours, theirs in zip(tx.meshgrid(tx.tensor(a), tx.tensor(b), indexing=indexing),
                                torch.meshgrid(torch.tensor(a), torch.tensor(b),
                                               indexing=indexing)):
            assert_close(ours, theirs)
    grids = tx.meshgrid([tx.tensor(a), tx.tensor(b)], indexing="ij")
    assert grids[0]._base is not None  # expanded views
    assert tx.broadcast_shapes((3, 1), (4,), 1) == tx.Size([3, 4])
    assert tx.broadcast_shapes() == tx.Size([])
    assert tuple(tx.broadcast_shapes((0, 1), (1, 5))) == tuple(torch.broadcast_shapes((0, 1),
                                                                                      (1, 5)))
    u, v = tx.broadcast_tensors(tx.zeros(3, 1), tx.zeros(4))
    assert u.shape == v.shape == (3, 4)


# -- argument errors -------------------------------------------------------------------------------
Z = tx.zeros(3, 4)


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda: tx.cat([]), ValueError, "expected a non-empty list of Tensors"),
    (lambda: tx.cat(Z), TypeError, "must be a sequence of Tensors"),
    (lambda: tx.cat([Z, 1]), TypeError, r"argument 'tensors\[1\]' must be a Tensor"),
    (lambda: tx.cat([Z, tx.zeros(3, 5)]), RuntimeError,
     "Sizes of tensors must match except in dimension 0. Expected size 4 but got size 5 for "
     "tensor number 1 in the list"),
    (lambda: tx.cat([Z, tx.zeros(3)]), RuntimeError,
     "Tensors must have same number of dimensions: got 2 and 1"),
    (lambda: tx.cat([tx.tensor(1.), tx.tensor(2.)]), RuntimeError,
     r"zero-dimensional tensor \(at position 0\) cannot be concatenated"),
    (lambda: tx.cat([Z, Z], dim=2), IndexError, r"cat\(\): dimension out of range"),
    (lambda: tx.stack([Z, tx.zeros(3, 5)]), RuntimeError,
     r"stack expects each tensor to be equal size, but got \[3, 4\] at entry 0 and \[3, 5\] "
     "at entry 1"),
    (lambda: tx.stack([]), RuntimeError, "stack expects a non-empty TensorList"),
    (lambda: Z.chunk(0), RuntimeError, "chunk expects `chunks` to be greater than 0, got: 0"),
    (lambda: Z.split(0), RuntimeError, "split_size can only be 0 if dimension size is 0"),
    (lambda: Z.split(-1), RuntimeError, "split expects split_size be non-negative"),
    (lambda: Z.split([1, 1]), RuntimeError,
     r"split_with_sizes expects split_sizes to sum exactly to 3 \(input tensor's size at "
     r"dimension 0\), but got split_sizes=\[1, 1\]"),
    (lambda: Z.split([-1, 4]), RuntimeError, "have only non-negative entries"),
    (lambda: Z.tensor_split(0), RuntimeError, "number of sections must be larger than 0"),
    (lambda: Z.tensor_split(tx.tensor([[1]])), RuntimeError,
     "zero-dimensional or one-dimensional tensor, but got a tensor with 2 dims"),
    (lambda: Z.tensor_split(tx.tensor([1.0])), RuntimeError, "to have dtype of long"),
    (lambda: Z.repeat(2), RuntimeError,
     "Number of dimensions of repeat dims can not be smaller than number of dimensions"),
    (lambda: Z.repeat(2, -1), RuntimeError, "Trying to create tensor with negative dimension"),
    (lambda: tx.repeat_interleave(tx.tensor([1, 2]), tx.tensor([1, 2, 3])), RuntimeError,
     r"repeats must have the same size as input along dim, but got repeats.size\(0\) = 3 and "
     r"input.size\(0\) = 2"),
    (lambda: tx.repeat_interleave(tx.tensor([1, 2]), tx.tensor([1, -2])), RuntimeError,
     "repeats can not be negative"),
    (lambda: tx.repeat_interleave(tx.tensor([1, 2]), tx.tensor([1.0, 2.0])), RuntimeError,
     "repeats has to be a Long tensor"),
    (lambda: tx.repeat_interleave(tx.tensor([1, 2]), 2, output_size=3), RuntimeError,
     "output_size 3 does not match the sum of repeats 4"),
    (lambda: Z.flip((0, 0)), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (lambda: tx.zeros(3).fliplr(), RuntimeError, "Input must be >= 2-d"),
    (lambda: tx.tensor(1.).flipud(), RuntimeError, "Input must be >= 1-d"),
    (lambda: Z.roll((1, 2)), RuntimeError, "shifts and dimensions must align. shifts: 2, dims:0"),
    (lambda: Z.roll((1, 2), (0,)), RuntimeError, "shifts: 2, dims:1"),
    (lambda: Z.rot90(1, (0,)), RuntimeError, "expected total rotation dims == 2, but got dims = 1"),
    (lambda: Z.rot90(1, (0, 0)), RuntimeError,
     "expected rotation dims to be different, but got dim0 = 0 and dim1 = 0"),
    (lambda: tx.zeros(3).rot90(), RuntimeError, "expected total dims >= 2, but got total dims = 1"),
    (lambda: Z.rot90(1, (0, 5)), IndexError, r"rot90\(\): dimension out of range"),
    (lambda: tx.zeros(3).tril(), RuntimeError, "input tensor must have at least 2 dimensions"),
    (lambda: tx.zeros(3).triu(), RuntimeError, "input tensor must have at least 2 dimensions"),
    (lambda: tx.meshgrid(tx.zeros(2), indexing="foo"), RuntimeError,
     "indexing must be one of \"xy\" or \"ij\", but received: foo"),
    (lambda: tx.meshgrid(Z, tx.zeros(3)), RuntimeError, "Expected 0D or 1D tensor"),
    (lambda: tx.meshgrid(tx.zeros(2), tx.zeros(3, dtype=tx.int64)), RuntimeError,
     "meshgrid expects all tensors to have the same dtype"),
    (lambda: tx.meshgrid(), RuntimeError, "meshgrid expects a non-empty TensorList"),
    (lambda: tx.broadcast_tensors(Z, tx.zeros(5)), RuntimeError,
     "Attempting to broadcast a dimension of length 5"),
    (lambda: tx.broadcast_shapes((3, 4), (5,)), RuntimeError,
     r"Mismatching argument at index 1 had \(5,\); but expected shape should be broadcastable "
     r"to \[3, 4\]"),
    (lambda: tx.broadcast_shapes((3, 4), -1), RuntimeError, "dimension of length -1"),
    (lambda: tx.pad(Z, (1,)), RuntimeError, "Padding length must be divisible by 2"),
    (lambda: tx.pad(Z, (1, 1, 1, 1, 1, 1)), RuntimeError,
     "Padding length should be less than or equal to two times the input dimension but got "
     "padding length 6 and input of dimension 2"),
    (lambda: tx.pad(Z, (-3, -2)), RuntimeError,
     r"The input size 4, plus negative padding -3 and -2 resulted in a negative output size"),
    (lambda: tx.pad(Z, (4, 1), mode="reflect"), RuntimeError,
     r"Padding size should be less than the corresponding input dimension, but got: padding "
     r"\(4, 1\) at dimension 1 of input \[3, 4\]"),
    (lambda: tx.pad(tx.zeros(2, 3, 4), (5, 1), mode="circular"), RuntimeError,
     "Padding value causes wrapping around more than once"),
    (lambda: tx.pad(tx.zeros(4), (1, 1), mode="reflect"), NotImplementedError,
     "Padding size 2 is not supported for 1D input tensor"),
    (lambda: tx.pad(Z, (1, 1), mode="foo"), NotImplementedError, "Unrecognised padding mode foo"),
    (lambda: tx.pad(Z, (1, 1), mode="reflect", value=1.0), RuntimeError,
     "Padding mode \"reflect\" doesn't take in value argument"),
    (lambda: tx.pad(tx.zeros(2, 2, 0), (1, 1), mode="reflect"), RuntimeError,
     "Expected non-zero sizes in the padded dims"),
])
def test_shape_op_errors(fn, exc, msg):
    with pytest.raises(exc, match=msg):
        fn()
