"""Registry entries for ops/shape.py (joining, splitting with its aliases, repeating,
reordering, padding, triangles, broadcasting, meshgrid; ravel, adjoint, narrow_copy).

Ops that take a list of tensors are registered through a varargs wrapper so the harness
differentiates every tensor of the list.
"""

from __future__ import annotations

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, exempt, register
from ._samples import uniform

FLOATS = (tx.float32, tx.float64)
WITH_INT = (tx.float32, tx.float64, tx.int64)


def _one(*cases, **kw):
    def samples(rng, dtype):
        return [Sample((uniform(rng, shape),) + tuple(args), dict(kw)) for shape, args in cases]
    return samples


def _many(*cases):
    """Samples of several arrays (shapes) plus keyword arguments."""
    def samples(rng, dtype):
        return [Sample(tuple(uniform(rng, s) for s in shapes), dict(kw))
                for shapes, kw in cases]
    return samples


def _varargs(fn):
    def op(*tensors, **kw):
        return fn(list(tensors), **kw)
    return op


def _torch_list(name):
    def op(*tensors, **kw):
        import torch

        return getattr(torch, name)(list(tensors), **kw)
    return op


def _np_split(x, sizes, dim=0):
    n = x.shape[dim]
    if isinstance(sizes, int):
        sizes = [min(sizes, n - i) for i in range(0, n, sizes)]
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=dim))


def _np_chunk(x, chunks, dim=0):
    n = x.shape[dim]
    return _np_split(x, -(-n // chunks), dim)


def _np_tensor_split(x, spec, dim=0):
    return tuple(np.array_split(x, spec, axis=dim))


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
              "circular": "wrap"}


def _np_pad(x, pad, mode="constant", value=None):
    k = len(pad) // 2
    widths = [(0, 0)] * (x.ndim - k) + [(pad[2 * i], pad[2 * i + 1]) for i in
                                        reversed(range(k))]
    kw = {"constant_values": value or 0} if mode == "constant" else {}
    return np.pad(x, widths, mode=_PAD_MODES[mode], **kw)


def _pad_samples(rng, dtype):
    return [Sample((uniform(rng, (2, 3)), (1, 2))),
            Sample((uniform(rng, (2, 3, 4)), (0, 1, 2, 1)), {"value": 1.5}),
            Sample((uniform(rng, (2, 3, 4)), (2, 1)), {"mode": "reflect"}),
            Sample((uniform(rng, (1, 2, 3, 4)), (1, 2, 2, 0)), {"mode": "reflect"}),
            Sample((uniform(rng, (2, 3)), (2, 3)), {"mode": "replicate"}),
            Sample((uniform(rng, (1, 2, 2, 3, 3)), (1, 1, 2, 0, 0, 1)), {"mode": "replicate"}),
            Sample((uniform(rng, (2, 3, 4)), (3, 1, 1, 2)), {"mode": "circular"})]


def _repeat_interleave_samples(rng, dtype):
    x = uniform(rng, (3, 4))
    return [Sample((x, 2)), Sample((x, 3), {"dim": 1}),
            Sample((x, np.array([1, 0, 2])), {"dim": 0}),
            Sample((x, np.array([2])), {"dim": -1})]


def _split_samples(sections):
    def samples(rng, dtype):
        return [Sample((uniform(rng, (4, 6, 4)), s)) for s in sections]
    return samples


def _np_split_with_sizes(x, sizes, dim=0):
    return np.split(x, np.cumsum(sizes)[:-1], axis=dim)


register(
    OpInfo("cat", _many((((2, 3), (4, 3)), {}), (((2, 3), (2, 1), (2, 2)), {"dim": 1}),
                        (((2, 3, 2), (2, 3, 2)), {"dim": -1}), (((2, 3), (0,)), {})),
           lambda *ts, dim=0: np.concatenate([t for t in ts if t.shape != (0,)], axis=dim),
           op=_varargs(tx.cat), torch=_torch_list("cat"), dtypes=WITH_INT, gradgrad=True,
           aliases=("concat", "concatenate")),
    OpInfo("stack", _many((((2, 3), (2, 3)), {}), (((2, 3), (2, 3), (2, 3)), {"dim": -1}),
                          (((), ()), {})),
           lambda *ts, dim=0: np.stack(ts, axis=dim), op=_varargs(tx.stack),
           torch=_torch_list("stack")),
    OpInfo("hstack", _many((((2, 3), (2, 1)), {}), (((3,), (2,)), {}), (((), (2,)), {})),
           lambda *ts: np.hstack(ts), op=_varargs(tx.hstack), torch=_torch_list("hstack")),
    OpInfo("vstack", _many((((2, 3), (1, 3)), {}), (((3,), (3,)), {})),
           lambda *ts: np.vstack(ts), op=_varargs(tx.vstack), torch=_torch_list("vstack")),
    OpInfo("dstack", _many((((2, 3), (2, 3)), {}), (((3,), (3,)), {}), (((2, 2, 1),), {})),
           lambda *ts: np.dstack(ts), op=_varargs(tx.dstack), torch=_torch_list("dstack")),
    OpInfo("column_stack", _many((((3,), (3, 2)), {}), (((), ()), {})),
           lambda *ts: np.column_stack(ts), op=_varargs(tx.column_stack),
           torch=_torch_list("column_stack")),
    OpInfo("split", _one(((5, 2), (2,)), ((2, 6), ([1, 2, 3], 1)), ((4,), (4,))), _np_split),
    OpInfo("chunk", _one(((5, 2), (3,)), ((2, 6), (4, 1)), ((6,), (4,))), _np_chunk),
    OpInfo("tensor_split", _one(((7, 2), (3,)), ((2, 6), ([1, 4], 1)), ((5,), ([-2, 1, 7],)),
                                ((5,), ([3, 1],))), _np_tensor_split),
    OpInfo("repeat", _one(((2, 3), (2, 1)), ((2, 3), (2, 1, 3)), ((), (3,)), ((3,), (0,))),
           lambda x, *s: np.tile(x, s), op=lambda x, *s: x.repeat(*s),
           torch=lambda x, *s: x.repeat(*s), dtypes=WITH_INT),
    OpInfo("tile", _one(((2, 3), ((2,),)), ((2, 3), ((2, 1, 2),))), np.tile),
    OpInfo("repeat_interleave", _repeat_interleave_samples,
           lambda x, r, dim=None: np.repeat(x, r, axis=dim)),
    OpInfo("flip", _one(((2, 3, 4), ((0, 2),)), ((3,), ((0,),)), ((2, 3), ((-1,),))), np.flip,
           dtypes=WITH_INT),
    OpInfo("fliplr", _one(((2, 3, 4), ())), np.fliplr),
    OpInfo("flipud", _one(((2, 3), ())), np.flipud),
    OpInfo("roll", _one(((5,), (2,)), ((3, 4), (-1, 1)), ((3, 4), ((1, 5), (0, 1))),
                        ((3, 4), (7,))),
           lambda x, s, d=None: np.roll(x, s, axis=d), dtypes=WITH_INT),
    OpInfo("rot90", _one(((3, 4), ()), ((3, 4), (2,)), ((2, 3, 4), (-1, (2, 1))),
                         ((3, 4), (3, (1, 0)))),
           lambda x, k=1, dims=(0, 1): np.rot90(x, k, tuple(dims))),
    OpInfo("pad", _pad_samples, _np_pad, torch="nn.functional.pad", gradgrad=True),
    OpInfo("tril", _one(((3, 4), ()), ((2, 3, 3), (1,)), ((4, 3), (-1,))), np.tril),
    OpInfo("triu", _one(((3, 4), ()), ((2, 3, 3), (1,)), ((4, 3), (-2,))), np.triu),
    OpInfo("meshgrid", _many((((3,), (2,)), {"indexing": "ij"}),
                             (((3,), (2,), ()), {"indexing": "xy"}),
                             (((4,),), {"indexing": "xy"})),
           lambda *ts, indexing: np.meshgrid(*ts, indexing=indexing)),
    OpInfo("broadcast_tensors", _many((((3, 1), (4,)), {}), (((2, 1, 3), (), (4, 1)), {})),
           lambda *ts: np.broadcast_arrays(*ts)),
    OpInfo("atleast_1d", _one(((), ()), ((3,), ())), np.atleast_1d),
    OpInfo("atleast_2d", _one(((), ()), ((3,), ()), ((2, 3), ())), np.atleast_2d),
    OpInfo("atleast_3d", _one(((), ()), ((3,), ()), ((2, 3), ()), ((2, 3, 4), ())),
           np.atleast_3d),
    OpInfo("ravel", lambda r, d: [Sample((uniform(r, (3, 4))[:, ::2],)),
                                  Sample((uniform(r, (2, 3)),))], np.ravel, dtypes=WITH_INT),
    OpInfo("hsplit", _split_samples((2, 3, [1, 4])), np.hsplit, dtypes=WITH_INT),
    OpInfo("vsplit", _split_samples((2, [1, 3])), np.vsplit, dtypes=WITH_INT),
    OpInfo("dsplit", _split_samples((2, [3])), np.dsplit, dtypes=WITH_INT),
    OpInfo("split_with_sizes", lambda r, d: [Sample((uniform(r, (5, 3)), [2, 3])),
                                             Sample((uniform(r, (2, 4)), [1, 0, 3], 1))],
           _np_split_with_sizes, aliases=("unsafe_split_with_sizes",)),
    OpInfo("unsafe_split", lambda r, d: [Sample((uniform(r, (5, 3)), 2))],
           lambda x, s: np.split(x, [2, 4])),
    OpInfo("unsafe_chunk", lambda r, d: [Sample((uniform(r, (3, 5)), 2, 1))],
           lambda x, c, dim: np.split(x, [3], axis=dim)),
    OpInfo("adjoint", lambda r, d: [Sample((uniform(r, (2, 3, 4)),))],
           lambda x: np.conj(np.swapaxes(x, -1, -2))),
    OpInfo("narrow_copy", lambda r, d: [Sample((uniform(r, (4, 3)), 0, 1, 2))],
           lambda x, dim, start, length: x[start:start + length].copy(), dtypes=WITH_INT),
)

exempt("computes a shape, not a tensor; tested in tests/test_shape.py", "broadcast_shapes")
