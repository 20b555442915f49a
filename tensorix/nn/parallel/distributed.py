"""DistributedDataParallel: one model replica per rank, gradients averaged during backward.

How it works, as in torch: parameters are put in buckets (about ``bucket_cap_mb`` each, in
reverse registration order, which is roughly the order backward produces their gradients). A
post-accumulate-grad hook on every parameter marks it ready; when a bucket is complete its
gradients are flattened, divided by the world size and all-reduced with a non-blocking call
while backward carries on with earlier layers. Buckets are launched strictly in bucket order so
that every rank issues the same collectives in the same order (MPI requires it). The hook of the
last parameter waits for all buckets and writes the averaged gradients back into ``.grad``.
"""

from __future__ import annotations

import contextlib

from ... import backend
from ... import distributed as dist
from ...autograd.function import EDGE
from ...autograd.grad_mode import is_grad_enabled
from ...tensor import Tensor, _make
from ..module import Module


class _Bucket:
    def __init__(self, params):
        self.params = params  # in the bucket's order
        self.pending = set()
        self.buffer = None
        self.work = None


def _tensors_in(obj):
    """Tensors anywhere in a forward's output (tensor, tuple, list, dict)."""
    stack, found = [obj], []
    while stack:
        item = stack.pop()
        if isinstance(item, Tensor):
            found.append(item)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return found


def _reachable_leaves(outputs):
    """ids of the leaf tensors that backward from ``outputs`` can reach (iterative walk)."""
    leaves, seen = set(), set()
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    leaves.update(id(t) for t in outputs if t.grad_fn is None)
    while stack:
        node = stack.pop()
        for target in node.next_edges[::EDGE]:
            if isinstance(target, Tensor):
                leaves.add(id(target))
            elif target is not None and target not in seen:
                seen.add(target)
                stack.append(target)
    return leaves


class DistributedDataParallel(Module):
    """Wrap ``module`` for data-parallel training: every rank runs it on its part of the batch
    and ``backward()`` leaves the gradient averaged over ranks in every parameter's ``.grad``.

    At construction the parameters and buffers are broadcast from rank 0; with
    ``broadcast_buffers`` the buffers are broadcast again at each forward. ``no_sync()`` skips
    the reduction (gradients accumulate locally until the next synchronised backward).
    ``find_unused_parameters=True`` walks the output's graph at each forward, so parameters
    that take no part contribute zeros instead of stalling the reduction.

    Example (``tensorix run -n 2 train.py``)::

        dist.init_process_group("mpi")
        model = DistributedDataParallel(nn.Linear(10, 1))
        loss = model(x_local).pow(2).mean()
        loss.backward()               # .grad: the mean over both ranks' batches
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, process_group=None, bucket_cap_mb=25,
                 find_unused_parameters=False, gradient_as_bucket_view=False):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel(): expected module to be an nn.Module "
                            f"(got {type(module).__name__})")
        if not (isinstance(bucket_cap_mb, (int, float)) and bucket_cap_mb > 0):
            raise ValueError(f"DistributedDataParallel(): expected bucket_cap_mb > 0 (got "
                             f"{bucket_cap_mb!r})")
        self.module = module
        self.process_group = process_group
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self._world = dist.get_world_size(process_group)
        self._src = dist.get_global_rank(dist._c10d._group(process_group, "DDP"), 0)
        with_grad = [p for p in module.parameters() if p.requires_grad]
        self._buckets = self._make_buckets(with_grad, bucket_cap_mb * 2 ** 20)
        self._bucket_of = {id(p): b for b in self._buckets for p in b.params}
        self._armed = self._started = False  # a forward armed the hooks; a backward began
        self._next = 0
        self._handles = [p.register_post_accumulate_grad_hook(self._on_grad) for p in with_grad]
        self._sync_module_states()

    @staticmethod
    def _make_buckets(params, cap_bytes):
        """Reverse parameter order, one open bucket per dtype, closed past ``cap_bytes``."""
        buckets, open_ = [], {}
        for p in reversed(params):
            key = p._data.dtype
            current = open_.get(key)
            if current is None or sum(q._data.nbytes for q in current) >= cap_bytes:
                current = open_[key] = []
                buckets.append(current)
            current.append(p)
        return [_Bucket(b) for b in buckets]

    def _sync_module_states(self):
        for t in list(self.module.parameters()) + list(self.module.buffers()):
            dist.broadcast(t, self._src, self.process_group)

    def forward(self, *args, **kwargs):
        if self._armed and self._started and self.require_backward_grad_sync:
            raise RuntimeError(
                "DistributedDataParallel: expected to have finished reduction in the prior "
                "iteration before starting a new one; some parameters did not receive a "
                "gradient (pass find_unused_parameters=True if parts of the model are unused)")
        if self.broadcast_buffers:
            for b in self.module.buffers():
                dist.broadcast(b, self._src, self.process_group)
        out = self.module(*args, **kwargs)
        self._armed = is_grad_enabled() and self.require_backward_grad_sync
        if self._armed:
            self._prepare(out)
        return out

    def _prepare(self, out):
        self._next, self._started = 0, False
        for b in self._buckets:
            b.pending = {id(p) for p in b.params}
            b.work = None
        if self.find_unused_parameters:
            used = _reachable_leaves(_tensors_in(out))
            for b in self._buckets:
                for p in b.params:
                    if id(p) not in used:
                        self._mark_ready(p)

    def _on_grad(self, p):
        if self._armed:
            self._mark_ready(p)

    def _mark_ready(self, p):
        self._started = True
        bucket = self._bucket_of[id(p)]
        bucket.pending.discard(id(p))
        # launch every complete bucket in bucket order (the same order on every rank)
        while self._next < len(self._buckets) and not self._buckets[self._next].pending:
            self._launch(self._buckets[self._next])
            self._next += 1
        if self._next and self._next < len(self._buckets):
            # MPI advances a non-blocking call only inside MPI calls (no progress thread):
            # testing the newest one lets the transfers move while backward computes
            self._buckets[self._next - 1].work.is_completed()
        if self._next == len(self._buckets):
            self._finish()

    def _launch(self, bucket):
        # the bucket lives where the parameters do: under "nccl" device gradients are
        # reduced on the device; under "mpi" the collective stages them through the host
        xp = backend.array_module(bucket.params[0]._data)
        parts = [xp.zeros(q._data.size, q._data.dtype) if q.grad is None
                 else q.grad._data.reshape(-1) for q in bucket.params]
        flat = xp.concatenate(parts)
        flat /= self._world  # average as torch's default hook does: divide, then sum
        bucket.buffer = _make(flat)
        bucket.work = dist.all_reduce(bucket.buffer, group=self.process_group, async_op=True)

    def _finish(self):
        """End of backward: wait for every bucket and write the averaged gradients back."""
        self._armed = False
        for bucket in self._buckets:
            bucket.work.wait()
            flat, start = bucket.buffer._data, 0
            for q in bucket.params:
                block = flat[start:start + q._data.size].reshape(q._data.shape)
                start += q._data.size
                if q.grad is None:
                    q.grad = _make(block.copy())
                else:
                    q.grad._data[...] = block
            bucket.work = bucket.buffer = None

    @contextlib.contextmanager
    def no_sync(self):
        """Within it, backward accumulates gradients locally without reducing them."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old
