"""One FSDP unit's parameters as one flat buffer, sharded over the ranks.

The parameters of a unit are concatenated (padded to a multiple of the world size) and each
rank keeps one contiguous 1/N of it: the only copy that persists, and the only tensor the
optimizer sees. ``_Unshard`` is the graph node that makes the full parameters for a forward
(an all-gather) and turns their gradients into this rank's shard of the averaged gradient
(a reduce-scatter) in one step, so no per-parameter gradient of the full size is ever made.
"""

from __future__ import annotations

import numpy as np

from ...autograd.function import Function
from ...tensor import _make
from .. import _collectives
from .._c10d import ReduceOp, _group


class FlatHandle:
    """The flat shard of one unit and how to rebuild its parameters.

    ``specs``: per parameter ``(owners, paths, shape, offset, numel)``, where ``owners`` lists
    the ``(module, attribute)`` pairs that hold it (a tied weight has several) and ``paths``
    their names inside the unit's module.
    """

    def __init__(self, named, group, sharded, param_dtype, reduce_dtype):
        g = _group(group, "FullyShardedDataParallel")
        self.group, self.world, self.rank = group, g.size(), g.rank()
        self.sharded = sharded
        self.specs, offset, parts = [], 0, []
        for owners, paths, p in named:
            arr = np.asarray(p._data).reshape(-1)
            self.specs.append((owners, paths, tuple(p.shape), offset, arr.size))
            parts.append(arr)
            offset += arr.size
        self.numel = offset
        dtype = parts[0].dtype if parts else np.float32
        div = self.world if sharded else 1
        self.padded = -(-max(offset, 1) // div) * div
        flat = np.zeros(self.padded, dtype)
        if parts:
            np.concatenate(parts, out=flat[:offset])
        self.shard_size = self.padded // div
        lo = self.rank * self.shard_size if sharded else 0
        self.range = (lo, lo + self.shard_size)
        self.shard = flat[lo:lo + self.shard_size].copy()
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.reduce_dtype = reduce_dtype
        self.full = None  # the gathered flat buffer while a forward or backward uses it
        self.gathers = 0  # all-gathers done (FULL_SHARD: two per step, one per pass)

    def gather(self, shard):
        """The full flat buffer (param dtype) from this rank's ``shard`` array."""
        src = shard if self.param_dtype is None else shard.astype(self.param_dtype.np)
        if not self.sharded:
            return src.copy() if src is shard else src
        self.gathers += 1
        out = np.empty(self.padded, src.dtype)
        _collectives.all_gather_into_tensor(_make(out), _make(np.ascontiguousarray(src)),
                                            self.group)
        return out

    def views(self, full):
        return tuple(full[o:o + n].reshape(shape) for _, _, shape, o, n in self.specs)

    def reduce(self, flat_grad):
        """This rank's shard of the gradient averaged over ranks (shard dtype)."""
        g = flat_grad if self.reduce_dtype is None else flat_grad.astype(self.reduce_dtype.np)
        g /= self.world  # divide, then sum, as DDP does (in place: g is a fresh buffer)
        if self.sharded:
            out = np.empty(self.shard_size, g.dtype)
            _collectives.reduce_scatter_tensor(_make(out), _make(g), ReduceOp.SUM, self.group)
        else:
            out = np.ascontiguousarray(g)
            _collectives.all_reduce(_make(out), ReduceOp.SUM, self.group)
        return out.astype(self.dtype, copy=False)

    # -- saved-tensor hooks: FULL_SHARD frees the full parameters after forward -------------
    def pack(self, t):
        """A saved tensor that is a view of the full buffer is kept as (offset, shape,
        strides) and gathered again in backward; anything else is kept as it is."""
        full = self.full
        if full is None or type(t._data) is not np.ndarray:
            return t
        start = full.__array_interface__["data"][0]
        at = t._data.__array_interface__["data"][0]
        if not start <= at < start + full.nbytes:
            return t
        return _Regather(self, at - start, t._data.shape, t._data.strides, t._dtype)

    @staticmethod
    def unpack(obj):
        return obj.rebuild() if type(obj) is _Regather else obj


class _Regather:
    __slots__ = ("handle", "offset", "shape", "strides", "dtype")

    def __init__(self, handle, offset, shape, strides, dtype):
        self.handle, self.offset, self.shape = handle, offset, shape
        self.strides, self.dtype = strides, dtype

    def rebuild(self):
        h = self.handle
        if h.full is None:  # first use in backward: gather once; _Unshard.backward frees it
            h.full = h.gather(np.asarray(h.flat_param._data))
        full = h.full
        at = full[self.offset // full.itemsize:]
        return _make(np.lib.stride_tricks.as_strided(at, self.shape, self.strides),
                     self.dtype)


class Unshard(Function):
    """flat shard -> the unit's full parameters (a tuple, one per spec); backward: their
    gradients -> the shard's gradient, averaged over ranks."""

    @staticmethod
    def forward(ctx, flat_param, handle):
        ctx.handle = handle
        ctx.set_materialize_grads(False)
        full = handle.gather(np.asarray(flat_param._data))
        handle.full = full
        return handle.views(full)

    @staticmethod
    def backward(ctx, *grads):
        h = ctx.handle
        flat = np.zeros(h.padded, h.full.dtype if h.full is not None else
                        (h.param_dtype.np if h.param_dtype is not None else h.dtype))
        for (_, _, _, o, n), g in zip(h.specs, grads):
            if g is not None:
                flat[o:o + n] = np.asarray(g._data).reshape(-1)
        h.full = None  # every use of the full parameters has run its backward
        return _make(h.reduce(flat)), None
