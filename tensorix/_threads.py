"""tensorix's own thread use: one persistent pool for the whole library, and the BLAS kept
to one thread per call.

Why the BLAS never runs its own threads: OpenBLAS's idle threads spin (about 0.1 s of a core
after every threaded call, whatever the thread count is set to afterwards), and its threaded
GEMM waits for its workers by spinning too. On a busy 2-core machine that turned a 128^3 GEMM
from 0.2 ms into 40 ms and a 1024^3 one from 124 ms into 172 ms (benchmarks/results.md). So
the BLAS is set to one thread, once, through its own API (threadpoolctl finds it), and
tensorix splits large GEMMs itself: by batch for batches of small GEMMs, by rows or columns
for one large GEMM, each part a single-threaded BLAS call on a thread of the pool below.
The pool's idle threads sleep on a queue; they never spin. A split op is cut into a few pieces
per thread that the threads claim in turn, the calling thread too, so a pool thread that gets
no core never holds the op up; and while other processes keep every core of the machine busy,
only long ops split (:func:`_machine_busy`, ``BUSY_FACTOR``). Before waking the pool, the
caller takes its own CPU out of the pool threads' affinity (:func:`_steer`): Linux otherwise
often wakes them on the caller's CPU, where the parts run one after another.

Large NumPy kernels elsewhere split their work over the same pool: :func:`elementwise` (and
:func:`ufunc`, its one-ufunc form) for the unary, binary and activation kernels, :func:`blockwise`
for fused multi-pass kernels (erf, gelu), :func:`reduce_sum` for whole-array float32 sums, and
:func:`parallel` underneath; NumPy releases the GIL inside each pass, so the parts run in
parallel. Results never depend on the thread count, except a GEMM's last bits (the BLAS may
block a split part differently) and a float32 sum's rounding (:func:`reduce_sum`), as in
PyTorch.
"""

from __future__ import annotations

import itertools
import math
import os
import queue
import threading
import time

import numpy as np

__all__ = ["set_num_threads", "get_num_threads", "set_num_interop_threads",
           "get_num_interop_threads", "parallel", "matmul", "matmuls", "blockwise", "parts_for",
           "over_parts",
           "elementwise", "ufunc", "reduce_sum", "CHEAP", "COSTLY"]


def _cores() -> int:
    """The cores this process may run on (its affinity mask, as torch's default)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity API (macOS, Windows)
        return max(1, os.cpu_count() or 1)


_threads = _cores()
_interop = None  # None: the default, not yet fixed
_pool = None
_pool_lock = threading.Lock()
_local = threading.local()  # .worker: this thread is one of the pool's (no nested splits)
_blas_pinned = False


def _check_count(n, op):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise RuntimeError(f"{op}(): expects an int, but got {type(n).__name__}")
    if n < 1:
        raise RuntimeError(f"{op}(): expects a positive integer, got {n}")
    return int(n)


def set_num_threads(n: int) -> None:
    """Threads tensorix uses inside one op (as ``torch.set_num_threads``): large GEMMs and
    batches of GEMMs are split over them, and so are large elementwise kernels (unary,
    binary, activations, erf/gelu, numerics) and float32 sums.
    The default is the number of cores this process may run on (``os.sched_getaffinity``);
    no environment variable is read. Results do not depend on it, except a GEMM's last bits.
    It is an upper bound: ops too small to gain run on the calling thread, and while other
    processes keep every core of the machine busy only long ops split.

    Example::

        >>> tensorix.set_num_threads(1)   # e.g. beside a data loader that uses the other cores
        >>> tensorix.get_num_threads()
        1
    """
    global _threads, _pool
    n = _check_count(n, "set_num_threads")
    with _pool_lock:
        _threads = n
        if _pool is not None:
            _pool.close()
            _pool = None


def get_num_threads() -> int:
    """The thread count set by :func:`set_num_threads` (default: the usable cores).
    Example: ``tensorix.get_num_threads()`` is ``2`` on a 2-core machine."""
    return _threads


def set_num_interop_threads(n: int) -> None:
    """Threads for running independent ops at the same time (as
    ``torch.set_num_interop_threads``). tensorix runs one op at a time on the calling thread,
    so today nothing reads this value beyond :func:`get_num_interop_threads`; as in PyTorch it
    may be set once, before it is first read.

    Example::

        >>> tensorix.set_num_interop_threads(2)
    """
    global _interop
    n = _check_count(n, "set_num_interop_threads")
    if _interop is not None:
        raise RuntimeError("set_num_interop_threads(): cannot set the number of interop "
                           "threads after it was set or read (as in PyTorch, set it once, "
                           "at the start)")
    _interop = n


def get_num_interop_threads() -> int:
    """See :func:`set_num_interop_threads` (default: the usable cores).
    Example: ``tensorix.get_num_interop_threads()`` is ``2`` on a 2-core machine."""
    global _interop
    if _interop is None:
        _interop = _cores()
    return _interop


class _Pool:
    """``threads - 1`` daemon threads that run claim loops put on one queue; the caller is the
    last thread. Idle threads block in ``SimpleQueue.get`` (a futex wait, no spinning).

    Why not ``concurrent.futures``: its submit + result costs ~30 us of the calling thread
    (a Future, a work item, a condition per call); a put on a SimpleQueue and one lock are
    about half that (benchmarks/bench_threads.py, "hand-off")."""

    def __init__(self, threads):
        self.queue = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._serve, name=f"tensorix_{i}", daemon=True)
                        for i in range(threads - 1)]
        for t in self.threads:
            t.start()
        # for _steer: the threads' OS ids (set once start() returns) and the CPUs they may use
        self.tids = [t.native_id for t in self.threads]
        self.cpus = _affinity()
        self.steered = None  # the caller's CPU that the threads were last steered off

    def _serve(self):
        _local.worker = True
        _pin_blas()  # per-thread limits (OpenMP-threaded OpenBLAS, MKL) need each worker to set it
        while True:
            job = self.queue.get()
            if job is None:
                return
            job()

    def close(self):
        for _ in self.threads:
            self.queue.put(None)


def _get_pool():
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = _Pool(_threads)
        return _pool


def _forget_pool():
    # a forked child (a DataLoader worker) inherits the pool object but not its threads: work
    # submitted to it would wait forever
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX only; there is no fork elsewhere
    os.register_at_fork(after_in_child=_forget_pool)


# -- where a woken pool thread runs ----------------------------------------------------------
# Linux puts a thread that a running thread wakes on the waker's own CPU when that is where the
# woken thread last ran and the scheduler finds no idle CPU fast enough (its scan for one is
# cut short while the cache domain looks busy, as it does when one thread keeps a core of two
# busy). The woken pool thread then preempts the caller, and the parts of a split op run one
# after the other on one core while the other core idles: a split 256^3 GEMM took as long as a
# whole one, with CPU time equal to wall time, and once there the pool thread stays there,
# since every wake finds it last ran on the caller's CPU (docs/benchmarks.md, "Issue 13, part
# A, fourth session"). So before waking the pool the caller takes its own CPU out of the pool
# threads' affinity: the kernel must put them on another CPU, where they run beside the caller
# or, when that CPU is busy, wait while the caller claims their parts. Only when the caller's
# CPU changes does this cost a syscall per pool thread (~2 us); else one vDSO call (~0.2 us).

def _affinity():
    """The CPUs this thread may run on (None where the OS has no affinity API)."""
    try:
        return frozenset(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


_getcpu = None  # libc's sched_getcpu, found on first use; False where there is none


def _current_cpu() -> int:
    """The CPU the calling thread runs on now, or -1 where it cannot be known."""
    global _getcpu
    if _getcpu is None:
        try:
            import ctypes

            _getcpu = ctypes.CDLL(None, use_errno=True).sched_getcpu
            _getcpu.restype, _getcpu.argtypes = ctypes.c_int, []
        except (OSError, AttributeError):  # no libc symbol (macOS, Windows)
            _getcpu = False
    return _getcpu() if _getcpu else -1


def _steer(pool):
    """Keep ``pool``'s threads off the calling thread's CPU (see above). Who runs a part never
    changes its result, so neither does this."""
    if pool.cpus is None or len(pool.cpus) < 2:
        return
    cpu = _current_cpu()
    if cpu == pool.steered or cpu < 0:
        return
    pool.steered = cpu
    allowed = pool.cpus - {cpu} or pool.cpus
    for tid in pool.tids:
        try:
            os.sched_setaffinity(tid, allowed)
        except OSError:  # the thread has ended (the pool is being closed) or a sandbox forbids it
            pool.cpus = None
            return


def _run_parts(tasks, work=None, min_part=1):
    """Run the callables in ``tasks`` (independent parts of one op, fixed in advance) on this
    thread and the pool's, and return when all have run. ``work`` (the op's units, each part
    at least ``min_part``): while the machine is busy an op whose parts are shorter than
    ``BUSY_FACTOR * min_part`` runs every part on this thread (:func:`_machine_busy`); the
    parts, so the result, stay the same.

    Each thread claims the next part not yet claimed, the calling thread too, so a part
    waits for no thread that is not running: on a busy machine, where a woken pool thread
    may get no core for milliseconds, the caller runs every part itself at the cost of one
    queue put, instead of waiting (``--background-load``). The caller waits only for parts
    a pool thread has started. Who runs a part never changes its result."""
    n = len(tasks)
    if work is not None and work < _threads * min_part * BUSY_FACTOR and _machine_busy():
        for task in tasks:  # no core to hand a part to: the same parts, on this thread
            task()
        return
    claim, finished = itertools.count(), itertools.count()  # next() is atomic under the GIL
    last = threading.Lock()
    last.acquire()  # released by the thread that finishes the last part, if not the caller
    errors = []

    def drain(caller=False):
        """Run unclaimed parts; True when this thread finished the last part to finish."""
        last_done = False
        while (i := next(claim)) < n:
            try:
                tasks[i]()
            except BaseException as e:  # raised again on the calling thread
                errors.append(e)
            last_done = next(finished) == n - 1
        if last_done and not caller:
            last.release()
        return last_done

    pool = _get_pool()
    _steer(pool)
    for _ in range(min(n - 1, len(pool.threads))):
        pool.queue.put(drain)
    if not drain(caller=True):
        last.acquire()
    if errors:
        raise errors[0]


def parts_for(work: int, min_part: int) -> int:
    """How many parts ``work`` units split into: at most the thread count, each at least
    ``min_part``; 1 inside a pool worker (a nested split would wait on its own pool). Never
    depends on the machine's load: a split GEMM or sum rounds differently from a whole one,
    and a program's results must not change with what else the machine runs (the load only
    decides who runs the parts: :func:`_run_parts`)."""
    if _threads == 1 or getattr(_local, "worker", False):
        return 1
    return max(1, min(_threads, work // max(1, min_part)))


# -- a busy machine: no core to split onto ---------------------------------------------------
# When other processes keep every core of the machine busy, a pool thread gets a core only by
# taking a time slice from someone, and a split op then costs more than it gains (measured at
# load 8-14 on 2 cores: split GEMMs and elementwise kernels 1.2-3x slower in median wall time
# than whole, torch's two threads the same; benchmarks/bench_threads.py). So the run queue is
# sampled (the kernel's count of runnable threads, /proc/loadavg) at most every _BUSY_EVERY
# seconds, smoothed, and while it exceeds the machine's CPUs only ops whose parts are
# BUSY_FACTOR times the usual minimum hand parts to the pool (the others run the same parts
# on the calling thread): at load 11-13 splits paid in median wall time
# only from 2^26 multiply-adds (GEMMs; 2^22 a part quiet) and from 1-4 Mi elements
# (transcendental kernels; 128 Ki a part quiet). There, a pool thread that gets a slice adds
# to this process's share of the cores, and one that does not costs one queue put (the
# caller claims the pieces nobody took).
BUSY_FACTOR = 8
_BUSY_EVERY = 0.02
_busy_state = {"next": 0.0, "runnable": 0.0, "ok": os.path.exists("/proc/loadavg")}


def _runnable() -> int:
    """Threads runnable on the machine now, this one included (/proc/loadavg's 4th field)."""
    fd = os.open("/proc/loadavg", os.O_RDONLY)
    try:
        return int(os.read(fd, 128).split()[3].split(b"/")[0])
    finally:
        os.close(fd)


def _machine_busy() -> bool:
    """True while the smoothed count of runnable threads exceeds the machine's CPUs by at
    least half a thread: every core has other work, beside this thread. ~50 ns between
    samples, ~10 us a sample (Linux only; elsewhere never busy)."""
    st = _busy_state
    now = time.monotonic()
    if now >= st["next"] and st["ok"]:
        st["next"] = now + _BUSY_EVERY
        try:
            st["runnable"] += 0.25 * (_runnable() - st["runnable"])
        except (OSError, ValueError, IndexError):
            st["ok"], st["runnable"] = False, 0.0
    return st["runnable"] >= _cpus + 0.5


_cpus = os.cpu_count() or 1  # the machine's, not this process's: the run queue is the machine's


# Pieces per part of a split: threads claim pieces, so a pool thread that loses its core
# mid-op holds back one piece, not half the op (the caller takes the rest).
OVERSPLIT = 4


def _cuts(n, parts, most):
    """Cut points of ``[0, n)`` into ``parts`` to ``parts * OVERSPLIT`` pieces, at most
    ``most`` (the work over the smallest piece worth a numpy call), one unit at least."""
    pieces = min(n, max(parts, min(parts * OVERSPLIT, most)))
    return [n * i // pieces for i in range(pieces + 1)]


def parallel(n: int, work, min_part: int, pieces: int = OVERSPLIT) -> None:
    """``work(a, b)`` over ``[0, n)`` in contiguous pieces that this thread and the pool's
    claim, when each thread gets at least ``min_part`` (else all in this thread). ``pieces``:
    at most this many per thread; 1 for a ``work`` of many NumPy calls, whose Python cost per
    piece would outweigh what smaller pieces save on a busy machine (max pooling: 8 pieces
    cost 30% more CPU than one call).

    Example: ``parallel(len(x), lambda a, b: np.exp(x[a:b], out=y[a:b]), 1 << 16)``.
    """
    parts = parts_for(n, min_part)
    if parts <= 1:
        work(0, n)
        return
    cuts = _cuts(n, parts, parts * pieces)
    _run_parts([lambda a=a, b=b: work(a, b) for a, b in zip(cuts[:-1], cuts[1:])], n, min_part)


# -- BLAS ------------------------------------------------------------------------------------

def _pin_blas():
    """Set every BLAS loaded in this process to one thread, through its own API (found once by
    threadpoolctl; imported here, lazily, since finding the libraries costs ~50 ms)."""
    global _blas_pinned
    from threadpoolctl import ThreadpoolController

    for lib in ThreadpoolController().select(user_api="blas").lib_controllers:
        lib.set_num_threads(1)
    _blas_pinned = True


# Multiply-adds below which a part of a split GEMM does not repay the hand-off to a pool
# thread: 2^23 is ~0.2 ms of one core's float32 GEMM. Measured on a quiet 2-core machine with
# the pool threads steered off the caller's CPU (benchmarks/bench_threads.py, docs/benchmarks.md,
# "fourth session"; split/whole, 10th percentile / median of 41 rounds): 192^3 (2^22.8) 1.21 /
# 1.47, 1024x128x65 (2^23) 1.14 / 1.23, 256^3 (2^24) 1.00 / 1.08, 128x512x256 (2^24) 0.89 / 0.97,
# 32x144x6272 (2^24.8) 0.73 / 0.77, 512^3 0.60 / 0.60. (At load 8, unsteered, 2^23 had looked
# like a gain: 0.76.)
_GEMM_MIN_PART = 1 << 23
_BLAS_TYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64,
                                              np.complex128))


def matmul(a, b):
    """``a @ b`` for ``xp`` arrays with at least 2 dims each, the GEMM every op runs: on the
    CPU, with a single-threaded BLAS per call, a GEMM of at least two parts' work split over
    the pool by batch (batches of small GEMMs: attention, bmm, einsum) or by rows/columns.

    Shapes: ``(..., m, k) @ (..., k, n) -> (..., m, n)`` with broadcast batch dims.
    Example: ``matmul(np.ones((64, 128, 128)), np.ones((64, 128, 128))).shape`` is
    ``(64, 128, 128)``.
    """
    if not _blas_pinned:
        _pin_blas()
    if (type(a) is not np.ndarray or type(b) is not np.ndarray or a.dtype != b.dtype
            or a.dtype not in _BLAS_TYPES or a.ndim < 2 or b.ndim < 2):
        return a @ b
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if a.ndim == b.ndim == 2 and m * n * k < 2 * _GEMM_MIN_PART:
        return a @ b  # a small 2-d GEMM (most of a small model's): no batch shape to work out
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    parts = parts_for(math.prod(batch) * m * n * k, _GEMM_MIN_PART)
    if parts <= 1:
        return a @ b
    out = np.empty(batch + (m, n), dtype=a.dtype)
    if batch and batch[0] >= parts:  # a batch of GEMMs: whole GEMMs per part
        nb = batch[0]

        def part(lo, hi):
            # an operand whose leading batch dim broadcasts (absent or 1) is shared whole
            pa = a[lo:hi] if a.ndim == out.ndim and a.shape[0] == nb else a
            pb = b[lo:hi] if b.ndim == out.ndim and b.shape[0] == nb else b
            np.matmul(pa, pb, out=out[lo:hi])
    elif m >= n:  # rows of one (or a few) large GEMM(s)
        nb = m

        def part(lo, hi):
            np.matmul(a[..., lo:hi, :], b, out=out[..., lo:hi, :])
    else:
        nb = n

        def part(lo, hi):
            np.matmul(a, b[..., lo:hi], out=out[..., lo:hi])
    # pieces of at least _GEMM_MIN_PART each (a piece re-packs the shared operand)
    cuts = _cuts(nb, min(parts, nb), math.prod(batch) * m * n * k // _GEMM_MIN_PART)
    _run_parts([lambda lo=lo, hi=hi: part(lo, hi) for lo, hi in zip(cuts[:-1], cuts[1:])],
               math.prod(batch) * m * n * k, _GEMM_MIN_PART)
    return out


# A GEMM of fewer multiply-adds than this (~40 us of one core) does not repay running beside
# another one on a pool thread (a hand-off costs 20-50 us on a busy machine).
_GEMM_MIN_TASK = 1 << 20


def matmuls(pairs):
    """``[a @ b for a, b in pairs]`` for independent GEMMs (a layer's backward: the input's
    and the weight's gradient), run at the same time, one whole GEMM per pool thread with the
    single-threaded BLAS, when there are two or more of similar size (the largest at most 4x
    the smallest) and each is worth a hand-off; otherwise one after the other through
    :func:`matmul` (which splits a large one itself). Each result is bit-identical to
    ``a @ b`` computed alone. Shapes as :func:`matmul`.

    Example: ``gx, gw = matmuls([(g, w), (g.T, x)])``.
    """
    works = [a.shape[-2] * a.shape[-1] * b.shape[-1] if a.ndim == b.ndim == 2 else 0
             for a, b in pairs]
    if len(pairs) < 2 or parts_for(len(pairs), 1) < 2 or min(works) < _GEMM_MIN_TASK or \
            max(works) > 4 * min(works) or \
            any(type(a) is not np.ndarray or type(b) is not np.ndarray for a, b in pairs):
        return [matmul(a, b) for a, b in pairs]
    if not _blas_pinned:
        _pin_blas()
    out = [None] * len(pairs)

    def task(i):
        out[i] = pairs[i][0] @ pairs[i][1]

    for lo in range(0, len(pairs), _threads):  # at most one GEMM per thread at a time
        _run_parts([lambda i=i: task(i) for i in range(lo, min(lo + _threads, len(pairs)))],
                   sum(works), _GEMM_MIN_PART)
    return out


def over_parts(items, sizes, work, min_part):
    """``work(part)`` for contiguous parts of the list ``items`` of about equal total size
    (``sizes``: one per item), run at the same time on the pool when each part gets at least
    ``min_part``; else ``work(items)``. For independent work per item (an optimizer's
    per-parameter updates, NumPy releasing the GIL in each pass): results do not depend on
    the split.

    Example: ``over_parts(params, [p.size for p in params], update, COSTLY)``.
    """
    total = sum(sizes)
    parts = min(parts_for(total, min_part), len(items))
    if parts <= 1:
        work(items)
        return
    cuts, acc = [0], 0
    for i, size in enumerate(sizes[:-1]):
        acc += size
        if acc * parts >= total * len(cuts):  # this item closes part len(cuts)
            cuts.append(i + 1)
            if len(cuts) == parts:
                break
    cuts.append(len(items))
    _run_parts([lambda a=a, b=b: work(items[a:b]) for a, b in zip(cuts[:-1], cuts[1:])],
               total, min_part)


# Blocks of this many elements keep a fused kernel's temporaries in cache: a chain of ~10
# whole-array NumPy ops on a large array streams every temporary through memory (gelu ran
# about 2x faster blocked).
BLOCK = 1 << 16
BLOCKWISE_MIN_PART = 4  # blocks per thread (256 Ki elements): see COSTLY below


def blockwise(kernel, out, *arrays, finish=None):
    """``kernel(out_block, *blocks)`` over 1-d blocks of ``out`` (C-contiguous) and of
    ``arrays`` (its shape), the blocks split over the pool; then, if given,
    ``finish(out_part, *parts)`` once per thread's part (a pass over a few gathered elements
    costs Python overhead per call, so it runs on whole parts). Returns ``out``. The kernels
    run the same float operations on every element, so results do not depend on the split.

    Example: ``blockwise(lambda o, x: np.exp(x, out=o), np.empty_like(x), x)``.
    """
    flat = [a.reshape(-1) for a in arrays]
    dst = out.reshape(-1)
    n = dst.size

    def run(lo, hi):
        lo, hi = lo * BLOCK, min(hi * BLOCK, n)
        for i in range(lo, hi, BLOCK):
            kernel(dst[i:i + BLOCK], *[f[i:i + BLOCK] for f in flat])
        if finish is not None:
            finish(dst[lo:hi], *[f[lo:hi] for f in flat])

    parallel(-(-n // BLOCK), run, BLOCKWISE_MIN_PART)
    return out


# -- elementwise and reductions ------------------------------------------------------------

# Elements per part below which a split does not repay the hand-off to a pool thread. A
# memory-bound op (add, mul, compare: ~0.3 ns an element) gains little from a second core, so
# it splits only on multi-million-element arrays; a transcendental one (exp, tanh, log: 3-10 ns
# an element) from 256 Ki elements. Measured (benchmarks/bench_threads.py, docs/benchmarks.md,
# load 9-14): no memory-bound split below 4 Mi elements and no transcendental one below 1 Mi
# paid, so neither is lower.
CHEAP = 1 << 21
COSTLY = 1 << 17
SUM_MIN_PART = 1 << 19  # a sum reads once and writes nothing: it gains from 1 Mi elements


def _split_view(arr, out_shape, lo, hi, flat):
    """The part ``[lo, hi)`` of ``arr``'s broadcast against ``out_shape``: along the flat
    index (``flat``: ``arr`` is C-contiguous of that shape, or has one element) or along
    axis 0 (an operand whose axis 0 broadcasts, or that has fewer dims, is passed whole)."""
    if flat:
        return arr.reshape(-1)[lo:hi] if arr.size > 1 else arr.reshape(())
    if arr.ndim == len(out_shape) and arr.shape[0] != 1:
        return arr[lo:hi]
    return arr


def _split_plan(out, inputs, min_part):
    """(parts, flat) for splitting ``out`` and its ``inputs``; parts 1 when it does not gain."""
    parts = parts_for(out.size, min_part)
    if parts <= 1 or type(out) is not np.ndarray:
        return 1, False
    if any(type(a) is not np.ndarray for a in inputs):
        return 1, False
    if out.ndim and out.shape[0] >= parts:
        return parts, False
    flat = out.flags.c_contiguous and all(
        a.size == 1 or (a.shape == out.shape and a.flags.c_contiguous) for a in inputs)
    return (parts, True) if flat else (1, False)


def elementwise(fn, out, *inputs, min_part=None):
    """``fn(out_part, *input_parts)`` over parts of ``out`` (a NumPy array) split over the pool
    when each part has at least ``min_part`` elements (:data:`CHEAP` for memory-bound kernels,
    :data:`COSTLY` for transcendental ones). ``inputs`` broadcast against ``out``: the parts
    are rows of axis 0 (an input whose axis 0 broadcasts is shared whole) or, for arrays
    whose first axis is too short, ranges of the flat index of C-contiguous operands. ``fn``
    must compute each element from the same elements of its inputs (an elementwise kernel):
    then the result is bit-identical to ``fn(out, *inputs)``, whatever the split. Returns
    ``out``; anything but NumPy arrays (a GPU) runs unsplit.

    Example: ``elementwise(lambda o, x: np.exp(x, out=o), np.empty_like(x), x)``.
    """
    parts, flat = _split_plan(out, inputs, COSTLY if min_part is None else min_part)
    if parts <= 1:
        fn(out, *inputs)
        return out
    n = out.size if flat else out.shape[0]
    shape = out.shape

    def work(lo, hi):
        fn(_split_view(out, shape, lo, hi, flat),
           *[_split_view(a, shape, lo, hi, flat) for a in inputs])

    cuts = _cuts(n, parts, n)
    _run_parts([lambda a=a, b=b: work(a, b) for a, b in zip(cuts[:-1], cuts[1:])],
               out.size, COSTLY if min_part is None else min_part)
    return out


def ufunc(fn, *arrays, min_part=None):
    """``fn(*arrays)`` for a NumPy ufunc ``fn``, split over the pool by :func:`elementwise`
    when the arrays are large enough to gain; bit-identical to the plain call. Shapes
    broadcast as in NumPy.

    Example: ``ufunc(np.tanh, np.zeros((1024, 1024), np.float32))`` runs on both cores.
    """
    min_part = COSTLY if min_part is None else min_part
    big = max(a.size for a in arrays)
    if big < 2 * min_part or _threads == 1 or any(type(a) is not np.ndarray for a in arrays):
        return fn(*arrays)
    shape = np.broadcast_shapes(*[a.shape for a in arrays])
    # the dtype NumPy's own call would give (its loop resolution on one element of each)
    dtype = fn(*[a.reshape(-1)[:1] for a in arrays]).dtype
    out = np.empty(shape, dtype=dtype)
    return elementwise(lambda o, *xs: fn(*xs, out=o), out, *arrays, min_part=min_part)


def reduce_sum(x):
    """The sum of every element of a NumPy float array, as per-part partial sums (each NumPy's
    pairwise sum) added in part order, split over the pool above ``SUM_MIN_PART`` elements a
    part. A split sum rounds differently from ``x.sum()``: within ``n * eps * sum(|x|)`` of
    the exact sum, as NumPy's (float64 sums, which tests compare exactly, are not split).
    Returns a 0-d array of ``x``'s dtype.

    Example: ``reduce_sum(np.ones(1 << 23, np.float32))`` is ``array(8388608., float32)``.
    """
    flat = x.reshape(-1) if x.flags.c_contiguous else None
    parts = 1 if flat is None or x.dtype != np.float32 else parts_for(x.size, SUM_MIN_PART)
    if parts <= 1:
        return np.add.reduce(x, axis=None)
    sums = np.empty(parts, dtype=x.dtype)
    cuts = [x.size * i // parts for i in range(parts + 1)]

    def work(i):
        sums[i] = np.add.reduce(flat[cuts[i]:cuts[i + 1]])

    _run_parts([lambda i=i: work(i) for i in range(parts)], x.size, SUM_MIN_PART)
    return np.add.reduce(sums)
