"""The thread pool of the CPU numerics kernels (MX quantize/dequantize, Philox).

Work is split into contiguous ranges, one per thread; NumPy passes and the compiled kernels
release the GIL, so the ranges run in parallel. Results never depend on the thread count.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading

__all__ = ["set_num_threads", "get_num_threads", "parallel"]

_env = os.environ.get("TENSORIX_NUMERICS_THREADS", "")
_threads = int(_env) if _env.isdigit() and int(_env) > 0 else min(4, os.cpu_count() or 1)
_pool = None
_pool_lock = threading.Lock()


def set_num_threads(n: int) -> None:
    """Threads the CPU numerics kernels (MX quantize/dequantize, ``random_bits``) split their
    work over (default: the CPU count, at most 4; environment ``TENSORIX_NUMERICS_THREADS``).
    Results do not depend on it: the parts are independent and every element is computed the
    same way.

    Example::

        >>> numerics.set_num_threads(1)   # e.g. beside a data loader that uses the other cores
    """
    global _threads, _pool
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads(): expected a positive int, got {n!r}")
    with _pool_lock:
        _threads = n
        if _pool is not None:
            _pool.shutdown(wait=False)
            _pool = None


def get_num_threads() -> int:
    """See :func:`set_num_threads`."""
    return _threads


def _forget_pool():
    # a forked child (a DataLoader worker) inherits the pool object but not its threads: work
    # submitted to it would wait forever
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX only; there is no fork elsewhere
    os.register_at_fork(after_in_child=_forget_pool)


def parallel(n: int, work, min_part: int) -> None:
    """``work(a, b)`` over ``[0, n)``: one contiguous part per thread, each at least
    ``min_part`` long, or all in this thread when ``n`` is small."""
    global _pool
    parts = min(_threads, n // min_part)
    if parts <= 1:
        work(0, n)
        return
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(_threads, "tensorix-numerics")
        pool = _pool
    cuts = [n * i // parts for i in range(parts + 1)]
    for fut in [pool.submit(work, a, b) for a, b in zip(cuts[:-1], cuts[1:])]:
        fut.result()
