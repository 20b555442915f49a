"""One FSDP unit's parameters as one flat buffer, sharded over the ranks.

The parameters of a unit are concatenated (padded to a multiple of the world size) and each
rank keeps one contiguous 1/N of it: the only copy that persists, and the only tensor the
optimizer sees. ``_Unshard`` is the graph node that makes the full parameters for a forward
(an all-gather) and turns their gradients into this rank's shard of the averaged gradient
(a reduce-scatter) in one step, so no per-parameter gradient of the full size is ever made.

The shard lives on the parameters' device, or on the host with ``offload``; gathers and
reduce-scatters run on the arrays where they are (under "nccl" on the device, under "mpi"
staged through host memory by the collectives), and the gathered parameters are handed to the
unit on the compute device.
"""

from __future__ import annotations

import numpy as np

from ... import backend
from ...autograd.function import Function
from ...tensor import _make
from .. import _collectives
from .._c10d import ReduceOp, _group


def _host(array):
    return backend.to_device(array, backend.cpu)


class _Pending:
    """An all-gather in flight (``async_op=True``); ``wait`` gives the full flat buffer on
    the compute device."""

    __slots__ = ("work", "out", "device")

    def __init__(self, work, out, device):
        self.work, self.out, self.device = work, out, device

    def wait(self):
        if self.work is not None:
            self.work.wait()
        return backend.to_device(self.out, self.device)


class FlatHandle:
    """The flat shard of one unit and how to rebuild its parameters.

    ``specs``: per parameter ``(owners, paths, shape, offset, numel)``, where ``owners`` lists
    the ``(module, attribute)`` pairs that hold it (a tied weight has several) and ``paths``
    their names inside the unit's module. ``replicate_group`` (HYBRID_SHARD): the ranks that
    hold the same shard, over which the reduced gradient shard is all-reduced.
    """

    def __init__(self, named, group, sharded, param_dtype, reduce_dtype, replicate_group=None,
                 offload=False):
        g = _group(group, "FullyShardedDataParallel")
        self.group, self.world, self.rank = group, g.size(), g.rank()
        self.replicate_group = replicate_group
        rg = None if replicate_group is None else _group(replicate_group,
                                                         "FullyShardedDataParallel")
        self.replicas = 1 if rg is None else rg.size()
        # rank 0 of the shard group and of the replicate group: the first of the model's
        # ranks (global rank 0 when the model spans the world), which rank0_only serves
        self.first = self.rank == 0 and (rg is None or rg.rank() == 0)
        self.sharded = sharded
        self.device = backend.get_device(named[0][2]._data) if named else backend.cpu
        self.shard_device = backend.cpu if offload else self.device
        self.specs, offset, parts = [], 0, []
        for owners, paths, p in named:
            arr = _host(p._data).reshape(-1)
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
        self.shard = backend.to_device(flat[lo:lo + self.shard_size].copy(), self.shard_device)
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.reduce_dtype = reduce_dtype
        self.full = None  # the gathered flat buffer while a forward or backward uses it
        self.gathers = 0  # all-gathers done (FULL_SHARD: two per step, one per pass)
        # prefetch (set by the root unit once it knows the execution order)
        self.prefetched = None  # a _Pending all-gather issued ahead of use
        self.prefetch_hits = 0  # gathers that a prefetch had already started
        self.next_forward = self.next_backward = None
        self.forward_prefetch = False
        self.backward_prefetch = None  # "pre" or "post"
        self.reshard_after_forward = False
        self.backward_pending = False  # forward ran with grad; its backward has not ended
        self.order = None  # the root's _Order, recording the first iteration's order
        self.orig = []  # use_orig_params: the original parameters (views of the shard)

    def pieces(self):
        """Per spec, the [start, stop) of the shard that holds its values (empty where the
        parameter lies outside this rank's range)."""
        lo, hi = self.range
        out = []
        for *_, o, n in self.specs:
            a, b = max(o, lo), min(o + n, hi)
            out.append((a - lo, b - lo) if a < b else (0, 0))
        return out

    def start_gather(self, shard, cast=True):
        """Start gathering the full flat buffer (param dtype, or the shard's own with
        ``cast=False``: optimizer state) from this rank's ``shard``."""
        # on the shard's own device: under "nccl" device shards are gathered on the device,
        # under "mpi" the collective stages them through host memory
        xp = backend.array_module(shard)
        src = shard if self.param_dtype is None or not cast else \
            shard.astype(self.param_dtype.np)
        if not self.sharded:
            return _Pending(None, src.copy() if src is shard else src, self.device)
        self.gathers += 1
        out = xp.empty(self.padded, src.dtype)
        work = _collectives.all_gather_into_tensor(
            _make(out), _make(xp.ascontiguousarray(src)), self.group, async_op=True)
        return _Pending(work, out, self.device)

    def gather(self, shard, cast=True):
        """The full flat buffer (param dtype, compute device) from ``shard``."""
        return self.start_gather(shard, cast).wait()

    def unshard(self):
        """The full flat buffer for a pass: the prefetched one if a prefetch started it."""
        pending, self.prefetched = self.prefetched, None
        if pending is not None:
            self.prefetch_hits += 1
        else:
            pending = self.start_gather(self.flat_param._data)
        return pending.wait()

    def prefetch(self):
        """Issue this unit's all-gather now (non-blocking), to be taken by ``unshard``."""
        if self.full is None and self.prefetched is None:
            self.prefetched = self.start_gather(self.flat_param._data)

    def drop_prefetch(self):
        """Finish and forget a prefetch nobody took (the order changed), so no stale
        parameters are used after an optimizer step."""
        if self.prefetched is not None:
            self.prefetched.wait()
            self.prefetched = None

    def views(self, full):
        return tuple(full[o:o + n].reshape(shape) for _, _, shape, o, n in self.specs)

    def reduce(self, flat_grad):
        """This rank's shard of the gradient averaged over all ranks (shard dtype and
        device): reduce-scattered in the shard group, then all-reduced over the replicas."""
        g = flat_grad if self.reduce_dtype is None else flat_grad.astype(self.reduce_dtype.np)
        g /= self.world * self.replicas  # divide, then sum, as DDP does (g is a fresh buffer)
        xp = backend.array_module(g)  # the compute device's (see start_gather)
        if self.sharded:
            out = xp.empty(self.shard_size, g.dtype)
            _collectives.reduce_scatter_tensor(_make(out), _make(g), ReduceOp.SUM, self.group)
        else:
            out = xp.ascontiguousarray(g)
            _collectives.all_reduce(_make(out), ReduceOp.SUM, self.group)
        if self.replicate_group is not None:
            _collectives.all_reduce(_make(out), ReduceOp.SUM, self.replicate_group)
        return backend.to_device(out.astype(self.dtype, copy=False), self.shard_device)

    # -- saved-tensor hooks: FULL_SHARD frees the full parameters after forward -------------
    def pack(self, t):
        """A saved tensor that is a view of the full buffer is kept as (offset, shape,
        strides) and gathered again in backward; anything else is kept as it is."""
        full = self.full
        if full is None or backend.get_device(t._data) is not backend.get_device(full):
            return t
        start, at = backend.data_ptr(full), backend.data_ptr(t._data)
        if not start <= at < start + full.nbytes:
            return t
        return _Regather(self, at - start, t._data.shape, t._data.strides, t._dtype)

    @staticmethod
    def unpack(obj):
        return obj.rebuild() if type(obj) is _Regather else obj

    def begin_backward(self):
        """The first use of the full parameters in this unit's backward: gather them (or take
        the prefetch) and, with BACKWARD_PRE, start the next unit's gather."""
        if self.order is not None:
            self.order.saw(self, "backward")
        self.full = self.unshard()
        if self.backward_prefetch == "pre":
            self.prefetch_next_backward()

    def prefetch_next_backward(self):
        nxt = self.next_backward
        if nxt is not None and nxt.backward_pending and nxt.reshard_after_forward:
            nxt.prefetch()


class _Regather:
    __slots__ = ("handle", "offset", "shape", "strides", "dtype")

    def __init__(self, handle, offset, shape, strides, dtype):
        self.handle, self.offset, self.shape = handle, offset, shape
        self.strides, self.dtype = strides, dtype

    def rebuild(self):
        h = self.handle
        if h.full is None:  # first use in backward: gather once; _Unshard.backward frees it
            h.begin_backward()
        full = h.full
        at = full[self.offset // full.itemsize:]
        return _make(backend.as_strided(at, self.shape, self.strides), self.dtype)


class Unshard(Function):
    """flat shard -> the unit's full parameters (a tuple, one per spec); backward: their
    gradients -> the shard's gradient, averaged over ranks (with use_orig_params, split into
    the original parameters' parts)."""

    @staticmethod
    def forward(ctx, flat_param, handle, *orig):
        # orig: use_orig_params' views of the shard, the leaves that get the gradient
        ctx.handle = handle
        ctx.set_materialize_grads(False)
        full = handle.unshard()
        handle.full = full
        if handle.forward_prefetch and handle.next_forward is not None:
            handle.next_forward.prefetch()  # overlaps this unit's forward
        return handle.views(full)

    @staticmethod
    def backward(ctx, *grads):
        h = ctx.handle
        if h.backward_prefetch == "post":  # before this unit's reduce-scatter
            h.prefetch_next_backward()
        dtype = h.param_dtype.np if h.param_dtype is not None else h.dtype
        flat = h.device.xp.zeros(h.padded, dtype)  # on the compute device, as the gradients
        for (_, _, _, o, n), g in zip(h.specs, grads):
            if g is not None:
                flat[o:o + n] = backend.to_device(g._data, h.device).reshape(-1)
        h.full = None  # every use of the full parameters has run its backward
        h.backward_pending = False
        h.drop_prefetch()
        shard = h.reduce(flat)
        if not h.orig:
            return _make(shard), None
        return (None, None) + tuple(_make(shard[a:b]) for a, b in h.pieces())
