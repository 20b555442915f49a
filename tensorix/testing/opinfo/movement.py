"""Registry entries for ops/movement.py."""

from __future__ import annotations

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, register
from ._samples import uniform


def _one(*cases):
    def samples(rng, dtype):
        return [Sample((uniform(rng, shape),) + tuple(args)) for shape, args in cases]
    return samples


def _index_samples(rng, dtype):
    x = uniform(rng, (4, 5, 3))
    return [Sample((x, (1, slice(0, 4, 2)))), Sample((x, (Ellipsis, None, 0))),
            Sample((x, (np.array([3, 0, 3]),))), Sample((x, x[..., 0] > 0)),
            Sample((x, (slice(None), np.array([[1, 2], [4, 4]]), 2))),
            Sample((x, (0, slice(None), np.array([1, 2]))), name="int+slice+array "),
            Sample((x, (np.array([0, 1]), slice(None), np.array([2, 0]))), name="split adv "),
            Sample((x, (np.array([[0], [3]]), None, np.array([1, 4, 4]))), name="None between "),
            Sample((x, (slice(1, None, 2), x[0] > 0)), name="slice+2d mask "),
            Sample((x, (Ellipsis, np.array([2, 2, 0]))), name="ellipsis+array "),
            Sample((x, ([1, 1, 0], 3)), name="list ")]


def _torch_index(x, idx):
    import torch

    def conv(i):
        if isinstance(i, np.ndarray):
            return torch.from_numpy(i)
        return torch.tensor(i) if isinstance(i, list) else i

    return x[tuple(conv(i) for i in idx) if isinstance(idx, tuple) else conv(idx)]


def _np_index(x, idx):
    """NumPy indexing with PyTorch's placement: integers are applied first (as selects), then
    the advanced indices on what is left."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    first, rest = [], []
    for i in idx:
        if isinstance(i, int):
            first.append(i)
        elif isinstance(i, np.ndarray) and i.dtype == bool:
            first += [slice(None)] * i.ndim
            rest.append(i)
        else:
            first.append(slice(None) if i is not None and i is not Ellipsis else i)
            rest.append(slice(None) if i is None else np.asarray(i) if isinstance(i, list) else i)
    return x[tuple(first)][tuple(rest)]


def _setitem_samples(rng, dtype):
    x = uniform(rng, (4, 5))
    return [Sample((x, (1, slice(0, 4, 2)), uniform(rng, (2,)))),
            Sample((x, (np.array([3, 0]),), uniform(rng, (1, 5)))),
            Sample((x, x > 0, 0.5), name="mask+scalar "),
            Sample((x, (slice(None), np.array([4, 1])), uniform(rng, (4, 1)))),
            Sample((x, (Ellipsis, 2), uniform(rng, ())))]


def _setitem(x, idx, v):
    y = x.clone()
    y[idx] = v
    return y


def _torch_setitem(x, idx, v):
    import torch

    y = x.clone()
    if isinstance(idx, tuple):
        idx = tuple(torch.from_numpy(i) if isinstance(i, np.ndarray) else i for i in idx)
    y[idx] = v
    return y


def _np_setitem(x, idx, v):
    y = np.array(x)
    y[idx] = v
    return y


def _unfold_ref(x, dim, size, step):
    if x.ndim == 0:
        return x.reshape(1)[:size]
    win = np.lib.stride_tricks.sliding_window_view(x, size, axis=dim)
    return np.take(win, np.arange(0, win.shape[dim], step), axis=dim)


def _torch_fn(name):
    import torch

    return getattr(torch, name)


def _complex_samples(rng, dtype):
    return [Sample((uniform(rng, s) + 1j * uniform(rng, s),)) for s in [(3,), (2, 3)]]


def _np_strided(x, size, stride, offset=0):
    flat = np.ascontiguousarray(x).reshape(-1)[offset:]
    return np.lib.stride_tricks.as_strided(flat, size, tuple(s * flat.itemsize for s in stride))


register(
    OpInfo("reshape", _one(((2, 6), ((3, 4),)), ((2, 3, 4), ((-1, 4),))), np.reshape,
           gradgrad=True),
    OpInfo("view", _one(((2, 6), ((3, 4),)), ((2, 3, 4), ((6, -1),))), np.reshape,
           torch=lambda x, s: x.view(s)),
    OpInfo("expand", _one(((3, 1), ((3, 4),)), ((4,), ((2, 4),))),
           lambda x, s: np.broadcast_to(x, s), torch=lambda x, s: x.expand(s),
           aliases=("broadcast_to",)),
    OpInfo("permute", _one(((2, 3, 4), ((2, 0, 1),))), np.transpose),
    OpInfo("transpose", _one(((2, 3, 4), (0, 2)), ((3, 4), (-1, -2))), np.swapaxes),
    OpInfo("squeeze", _one(((2, 1, 3, 1), ()), ((2, 1, 3), (1,))), np.squeeze),
    OpInfo("unsqueeze", _one(((2, 3), (1,)), ((2, 3), (-1,))), np.expand_dims),
    OpInfo("clone", _one(((2, 3), ())), np.copy),
    OpInfo("contiguous", _one(((2, 3), ())), np.ascontiguousarray,
           torch=lambda x: x.contiguous()),
    OpInfo("getitem", _index_samples, _np_index, torch=_torch_index, op=lambda x, i: x[i],
           gradgrad=True),
    OpInfo("setitem", _setitem_samples, _np_setitem, torch=_torch_setitem, op=_setitem),
    OpInfo("diagonal", _one(((3, 4), ()), ((3, 4), (1,)), ((2, 3, 4), (-1, 2, 0)),
                            ((4, 3), (-1, -1, -2)), ((2, 3), (5,))), np.diagonal),
    OpInfo("unfold", _one(((7,), (0, 3, 2)), ((2, 5, 3), (1, 2, 1)), ((3, 4), (0, 3, 3)),
                          ((), (0, 1, 1))),
           _unfold_ref, op=lambda x, *a: x.unfold(*a), torch=lambda x, *a: x.unfold(*a),
           gradgrad=True),
    OpInfo("flatten", _one(((2, 3, 4), ()), ((2, 3, 4), (1,)), ((2, 3, 4, 1), (0, -2)),
                           ((), ())),
           lambda x, s=0, e=-1: x.reshape(x.shape[:s] + (-1,) + x.shape[e % max(x.ndim, 1)
                                                                          + 1:])),
    OpInfo("unflatten", _one(((2, 12), (1, (3, -1))), ((6, 2), (0, (1, 2, 3)))),
           lambda x, d, s: x.reshape(x.shape[:d] + tuple(s) + x.shape[d + 1:])),
    OpInfo("narrow", _one(((4, 5), (1, 1, 3)), ((4, 5), (0, -2, 2)), ((4, 5), (1, 5, 0))),
           lambda x, d, s, n: np.take(x, np.arange(n) + (s + x.shape[d] if s < 0 else s),
                                      axis=d)),
    OpInfo("select", _one(((4, 5), (1, -1)), ((2, 3, 4), (0, 1))),
           lambda x, d, i: np.take(x, i, axis=d)),
    OpInfo("unbind", _one(((3, 4), ()), ((2, 3, 4), (1,))),
           lambda x, d=0: tuple(np.moveaxis(x, d, 0))),
    OpInfo("t", _one(((3, 4), ()), ((5,), ()), ((), ())), lambda x: x.T),
    OpInfo("movedim", _one(((2, 3, 4), (0, -1)), ((2, 3, 4), ((0, 1), (2, 0)))), np.moveaxis,
           aliases=("moveaxis",)),
    OpInfo("swapaxes", _one(((2, 3, 4), (0, 2))), np.swapaxes, aliases=("swapdims",)),
    OpInfo("view_as_real", _complex_samples, lambda x: np.stack([x.real, x.imag], -1),
           dtypes=(tx.complex64, tx.complex128)),
    # seen through a complex product and back, so the real-valued gradcheck applies
    OpInfo("view_as_complex", _one(((3, 2), ()), ((2, 4, 2), ())),
           lambda x: (lambda z: np.stack([z.real, z.imag], -1))(
               (x[..., 0] + 1j * x[..., 1]) * (1 + 0.5j)),
           op=lambda x: tx.view_as_real(tx.view_as_complex(x) * (1 + 0.5j)),
           torch=lambda x: _torch_fn("view_as_real")(
               _torch_fn("view_as_complex")(x) * (1 + 0.5j))),
    OpInfo("as_strided", _one(((12,), ((3, 3), (2, 1), 1)), ((3, 4), ((2, 2), (1, 1)))),
           _np_strided, gradgrad=True),
)
