"""DataLoader worker processes (``num_workers > 0``), with PyTorch's semantics.

Each worker is a process (forked on POSIX, as PyTorch does) holding its own copy of the
dataset. The main process draws the index batches from the sampler and hands them out round
robin, at most ``prefetch_factor`` outstanding per worker; each worker fetches and collates its
batch and sends it back; the main process puts the batches back in order. A batch travels as
a pickle whose arrays (tensors travel as NumPy arrays) are out-of-band buffers: small ones go
through the result queue, large ones are written to a file in a per-loader directory on a
memory file system (``/dev/shm``) that the main process maps and deletes, so they do not
squeeze through a pipe. For an IterableDataset each worker reads its own stream (shard it with
:func:`get_worker_info`) and the main process asks the workers in turn for their next batch.

Seeds: worker ``i`` gets ``seed = base_seed + i`` (``base_seed`` drawn from the loader's
generator, or the default one, when the workers start) for tensorix's default generator and
Python's ``random``, and NumPy's legacy global RNG is seeded from ``(base_seed, i)`` by
PyTorch's own hash, so the worker streams match PyTorch's rule.

Cleanup: workers stop when their pool is shut down (end of an epoch without persistent
workers, an exception, the iterator or the loader being garbage collected, interpreter exit)
and on their own when the main process has gone away.
"""

from __future__ import annotations

import contextlib
import mmap
import multiprocessing
import os
import pickle
import queue
import random
import shutil
import sys
import tempfile
import time
import traceback
import warnings
import weakref

import numpy as np

from .._threads import set_num_threads
from ..ops.random import manual_seed
from ._fetch import IterableFetcher, MapFetcher

__all__ = ["WorkerInfo", "get_worker_info"]

_POLL_S = 1.0  # how often a waiting process checks that its peers are still alive
_JOIN_S = 2.0  # how long shutdown waits for a busy worker before terminating it
_PROTOCOL = pickle.HIGHEST_PROTOCOL  # 5: NumPy arrays as out-of-band buffers
_SPILL_MIN = 1 << 20  # batches with more array bytes than this travel through a file
_ALIGN = 64  # each array's offset in a spill file (an aligned array is a fast array)
_worker_info = None


class WorkerInfo:
    """What a worker process knows about itself: ``id`` (0 .. num_workers - 1),
    ``num_workers``, ``seed`` (its base seed + id) and ``dataset`` (its copy). Read-only."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{type(self).__name__}({items})"


def get_worker_info():
    """In a DataLoader worker process, its :class:`WorkerInfo`; None in the main process.

    Use it to shard an IterableDataset, so that the workers do not all read the same items::

        class Range(IterableDataset):
            def __iter__(self):
                info = get_worker_info()
                step, first = (1, 0) if info is None else (info.num_workers, info.id)
                return iter(range(first, 100, step))
    """
    return _worker_info


def _generate_state(base_seed, worker_id):
    """PyTorch's seed for NumPy's global RNG in a worker (torch/utils/data/_utils/worker.py,
    after NumPy's SeedSequence): four 32-bit words hashed from the base seed and the id."""
    mask = 0xFFFFFFFF
    entropy = [worker_id, base_seed & mask, base_seed >> 32, 0]
    const_a = 0x43B0D7E5

    def hash_(value):
        nonlocal const_a
        value = (value ^ const_a) & mask
        const_a = (const_a * 0x931E8875) & mask
        value = (value * const_a) & mask
        return (value ^ (value >> 16)) & mask

    def mix(x, y):
        r = (((0xCA01F9DD * x) & mask) - ((0x4973F715 * y) & mask)) & mask
        return (r ^ (r >> 16)) & mask

    pool = [hash_(e) for e in entropy]
    for src in range(4):
        for dst in range(4):
            if src != dst:
                pool[dst] = mix(pool[dst], hash_(pool[src]))
    const_b, state = 0x8B51F9DD, []
    for v in pool:
        v = (v ^ const_b) & mask
        const_b = (const_b * 0x58F38DED) & mask
        v = (v * const_b) & mask
        state.append((v ^ (v >> 16)) & mask)
    return state


class _ExceptionWrapper:
    """An exception raised in a worker, carried to the main process and raised there again
    with its type (RuntimeError where the type cannot be rebuilt from a message)."""

    def __init__(self, where):
        exc_type, exc, _ = sys.exc_info()
        self.exc_type, self.type_name, self.where = exc_type, exc_type.__name__, where
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc, exc.__traceback__))
        try:  # a class the main process cannot import (made in a function) would be lost
            pickle.dumps(exc_type, _PROTOCOL)
        except Exception:
            self.exc_type = RuntimeError

    def reraise(self):
        msg = f"Caught {self.type_name} {self.where}.\nOriginal {self.exc_msg}"
        try:
            exc = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exc


class _Spec:
    """What every worker needs to know (passed once, at start)."""

    def __init__(self, loader, base_seed):
        self.dataset, self.iterable = loader.dataset, loader._iterable
        self.auto = loader._auto_collation
        self.collate_fn, self.init_fn = loader.collate_fn, loader.worker_init_fn
        self.batch_size, self.drop_last = loader.batch_size, loader.drop_last
        self.num_workers, self.base_seed = loader.num_workers, base_seed


def _seed_worker(spec, worker_id):
    global _worker_info
    seed = spec.base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(_generate_state(spec.base_seed, worker_id))
    set_num_threads(1)  # one process per core already, as torch's workers: no pool inside
    _worker_info = WorkerInfo(id=worker_id, num_workers=spec.num_workers, seed=seed,
                              dataset=spec.dataset)


def _worker_loop(spec, worker_id, index_queue, result_queue, parent_pid):
    """A worker's life: seed, ``worker_init_fn``, then answer tasks until told to stop.

    Messages in: ``(epoch, task, indices)``, ``("reset", epoch)`` (restart the stream of an
    IterableDataset), ``None`` (stop). Out: ``(epoch, task, kind, payload)`` with kind "data"
    (the pickled batch), "error" (an :class:`_ExceptionWrapper`) or "end" (stream exhausted).
    """
    try:
        _seed_worker(spec, worker_id)
        error = None
        try:
            if spec.init_fn is not None:
                spec.init_fn(worker_id)
        except Exception:
            error = _ExceptionWrapper(f"in DataLoader worker process {worker_id} "
                                      "(in worker_init_fn)")
        fetcher = None if spec.iterable else \
            MapFetcher(spec.dataset, spec.auto, spec.collate_fn)
        while True:
            try:
                msg = index_queue.get(timeout=_POLL_S)
            except queue.Empty:
                if os.getppid() != parent_pid:  # orphaned: the main process died
                    return
                continue
            if msg is None:
                break
            if msg[0] == "reset":
                fetcher = None  # made on the first task, so that iter()'s errors are reported
                continue
            epoch, task, indices = msg
            if error is None:
                try:
                    if fetcher is None:
                        fetcher = IterableFetcher(spec.dataset, spec.auto, spec.collate_fn,
                                                  spec.batch_size, spec.drop_last)
                    # pickled here, so that a batch that cannot be pickled is reported
                    # instead of being lost in the queue's feeder thread
                    out = (epoch, task, *_pack(fetcher.fetch(indices), spec.spill_dir))
                except StopIteration:
                    out = (epoch, task, "end", worker_id)
                except Exception:
                    what = "its stream" if spec.iterable else f"indices {indices}"
                    out = (epoch, task, "error", _ExceptionWrapper(
                        f"in DataLoader worker process {worker_id} while fetching batch {task} "
                        f"({what})"))
            else:
                out, error = (epoch, task, "error", error), None
            result_queue.put(out)
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group; the main one reports
        pass
    finally:
        result_queue.cancel_join_thread()  # stopping: never block exit on undelivered batches


def _pack(batch, spill_dir):
    """A batch as ``(kind, payload)``: "data" with the pickle and its array buffers, or, for
    large batches, "file" with the pickle and a file holding the buffers back to back."""
    buffers = []
    header = pickle.dumps(batch, _PROTOCOL, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    sizes = [r.nbytes for r in raws]
    if spill_dir is not None and sum(sizes) >= _SPILL_MIN:
        fd, path = tempfile.mkstemp(dir=spill_dir)
        try:
            with os.fdopen(fd, "wb") as f:
                for r in raws:
                    f.write(r)
                    f.write(bytes(-r.nbytes % _ALIGN))
            return "file", (header, path, sizes)
        except OSError:  # the memory file system is full: the queue takes it
            os.unlink(path)
    return "data", (header, [bytearray(r) for r in raws])  # bytearray: writable arrays


def _unpack(kind, payload):
    """The batch from :func:`_pack`'s output (in the main process; a file is deleted)."""
    if kind == "data":
        header, buffers = payload
        return pickle.loads(header, buffers=buffers)
    header, path, sizes = payload
    with open(path, "rb") as f:  # a private writable mapping: the batch's arrays are writable
        mm = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE,
                       prot=mmap.PROT_READ | mmap.PROT_WRITE)
    os.unlink(path)
    view, buffers, at = memoryview(mm), [], 0
    for n in sizes:
        buffers.append(view[at:at + n])
        at += n + (-n % _ALIGN)
    return pickle.loads(header, buffers=buffers)


def _discard(kind, payload):
    if kind == "file":
        with contextlib.suppress(OSError):
            os.unlink(payload[1])


def _context(name):
    if name is None:
        name = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    if name is None or isinstance(name, str):
        return multiprocessing.get_context(name)
    return name  # a context object


def _shutdown(workers, index_queues, result_queue, spill_dir):
    """Stop the workers: ask, wait a little, then terminate; reap every one (no zombies);
    delete the batches spilled to files and not read."""
    for q in index_queues:
        with contextlib.suppress(OSError, ValueError):  # already closed
            q.put(None)
    deadline = time.monotonic() + _JOIN_S
    for w in workers:
        w.join(max(0.0, deadline - time.monotonic()))
    for w in workers:
        if w.is_alive():
            w.terminate()
            w.join()
    for q in (*index_queues, result_queue):
        q.cancel_join_thread()
        q.close()
    if spill_dir is not None:
        shutil.rmtree(spill_dir, ignore_errors=True)


class WorkerPool:
    """The worker processes of one DataLoader (one epoch's, or all epochs' with
    ``persistent_workers``); ``batches(order)`` runs one epoch through them."""

    def __init__(self, loader, base_seed):
        ctx = _context(loader.multiprocessing_context)
        n = loader.num_workers
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self.spec = _Spec(loader, base_seed)
        self.spec.spill_dir = tempfile.mkdtemp(prefix="tensorix-loader-", dir=shm) \
            if shm is not None else None
        self.timeout, self.prefetch = loader.timeout, max(1, loader.prefetch_factor)
        self.result_queue = ctx.Queue()
        self.index_queues = [ctx.Queue() for _ in range(n)]
        self.workers = []
        self.epoch = 0
        self._finalizer = weakref.finalize(self, _shutdown, self.workers, self.index_queues,
                                           self.result_queue, self.spec.spill_dir)
        for i in range(n):
            w = ctx.Process(target=_worker_loop, daemon=True,
                            args=(self.spec, i, self.index_queues[i], self.result_queue,
                                  os.getpid()))
            with warnings.catch_warnings():
                # Python >= 3.12 warns on fork() beside other threads (queue feeders, the
                # numerics pool): a worker touches none of their locks (_threads.py drops its
                # pool at fork), so, like PyTorch, fork anyway
                warnings.filterwarnings("ignore", ".*use of fork\\(\\) may lead to deadlocks",
                                        DeprecationWarning)
                w.start()
            self.workers.append(w)

    @property
    def alive(self):
        return self._finalizer.alive

    def shutdown(self):
        self._finalizer()

    def _receive(self):
        """The next result from any worker, failing on a dead worker or on ``timeout``."""
        deadline = time.monotonic() + self.timeout if self.timeout else None
        while True:
            wait = _POLL_S if deadline is None else max(0.0, min(_POLL_S,
                                                                 deadline - time.monotonic()))
            try:
                return self.result_queue.get(timeout=wait)
            except queue.Empty:
                pass
            dead = [w for w in self.workers if w.exitcode is not None]
            if dead:
                self.shutdown()
                codes = ", ".join(f"pid {w.pid}: exit code {w.exitcode}" for w in dead)
                raise RuntimeError(f"DataLoader worker(s) exited unexpectedly ({codes})")
            if deadline is not None and time.monotonic() >= deadline:
                raise RuntimeError(f"DataLoader timed out after {self.timeout} seconds")

    def batches(self, order):
        """One epoch: ``order`` yields the index batches (None for an IterableDataset);
        batches come back in that order."""
        self.epoch += 1
        epoch, n = self.epoch, len(self.workers)
        if self.spec.iterable:
            for q in self.index_queues:
                q.put(("reset", epoch))
        active = [True] * n
        sent = got = turn = 0
        order_done = False
        buffer = {}
        try:
            while True:
                while not order_done and sent - got < self.prefetch * n:  # keep the workers busy
                    indices = None if order is None else next(order, StopIteration)
                    if indices is StopIteration or not any(active):
                        order_done = True
                        break
                    while not active[turn % n]:
                        turn += 1
                    self.index_queues[turn % n].put((epoch, sent, indices))
                    sent, turn = sent + 1, turn + 1
                if got == sent:
                    return
                while got not in buffer:
                    e, task, kind, payload = self._receive()
                    if e == epoch:
                        buffer[task] = (kind, payload)
                    else:  # a result of an abandoned epoch
                        _discard(kind, payload)
                kind, payload = buffer.pop(got)
                got += 1
                if kind == "end":
                    active[payload] = False
                elif kind == "error":
                    payload.reraise()
                else:
                    yield _unpack(kind, payload)
        finally:  # also for an abandoned epoch: batches received and not yielded go
            for kind, payload in buffer.values():
                _discard(kind, payload)
