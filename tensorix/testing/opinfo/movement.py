"""Registry entries for ops/movement.py."""

from __future__ import annotations

import numpy as np

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
            Sample((x, (slice(None), np.array([[1, 2], [4, 4]]), 2)))]


def _torch_index(x, idx):
    import torch

    if isinstance(idx, tuple):
        idx = tuple(torch.from_numpy(i) if isinstance(i, np.ndarray) else i for i in idx)
    return x[idx]


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
    OpInfo("getitem", _index_samples, lambda x, i: x[i], torch=_torch_index,
           op=lambda x, i: x[i]),
    OpInfo("as_strided", _one(((12,), ((3, 3), (2, 1), 1)), ((3, 4), ((2, 2), (1, 1)))),
           _np_strided, gradgrad=True),
)
