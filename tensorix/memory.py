"""Memory statistics: bytes held now and at peak, on the CPU and on GPUs.

On a GPU these are the memory pool's numbers (:mod:`tensorix.cuda`). On the CPU tensors are
NumPy arrays taken from ``malloc``, which keeps no count, so the CPU numbers come from Python's
``tracemalloc``, which NumPy reports its array data to: they count the bytes allocated since
tracking began and still held (array data plus the Python objects around it, such as graph
nodes), and their peak. Tracking slows allocation down, so it is on only inside ``track()`` (or
between ``start()`` and ``stop()``); asking for CPU numbers with tracking off is an error.

Example::

    with tensorix.memory.track() as mem:
        loss = model(x).sum()
        loss.backward()
    print(mem.peak, mem.current)          # bytes
"""

from __future__ import annotations

import tracemalloc

from . import backend, cuda

__all__ = ["track", "start", "stop", "is_tracking", "memory_allocated", "max_memory_allocated",
           "reset_peak_memory_stats"]

_started_here = [False]  # whether tracemalloc was started by start() (so stop() may end it)


def start() -> None:
    """Begin tracking CPU memory (a no-op if tracemalloc is already tracing)."""
    if not tracemalloc.is_tracing():
        tracemalloc.start(1)  # one frame per trace: the cheapest tracemalloc can be
        _started_here[0] = True


def stop() -> None:
    """End tracking CPU memory, if ``start()`` began it."""
    if _started_here[0]:
        tracemalloc.stop()
        _started_here[0] = False


def is_tracking() -> bool:
    """Whether CPU memory is being tracked now."""
    return tracemalloc.is_tracing()


def _cpu(device, op):
    dev = backend.Device("cpu" if device is None else device)
    if dev.type != "cpu":
        return dev
    if not tracemalloc.is_tracing():
        raise RuntimeError(f"tensorix.memory.{op}(): CPU memory is not being tracked; wrap the "
                           "code in `with tensorix.memory.track():` or call "
                           "tensorix.memory.start() first")
    return None


def memory_allocated(device=None) -> int:
    """Bytes held now: on the CPU, allocated since tracking began and not yet freed; on a
    GPU, what live arrays hold in the pool (``tensorix.cuda.memory_allocated``)."""
    dev = _cpu(device, "memory_allocated")
    if dev is not None:
        return cuda.memory_allocated(dev)
    return tracemalloc.get_traced_memory()[0]


def max_memory_allocated(device=None) -> int:
    """The most bytes held at once since tracking began or the last reset."""
    dev = _cpu(device, "max_memory_allocated")
    if dev is not None:
        return cuda.max_memory_allocated(dev)
    return tracemalloc.get_traced_memory()[1]


def reset_peak_memory_stats(device=None) -> None:
    """Restart the peak from what is held now."""
    dev = _cpu(device, "reset_peak_memory_stats")
    if dev is not None:
        return cuda.reset_peak_memory_stats(dev)
    tracemalloc.reset_peak()


class track:  # noqa: N801 - used like a function: ``with tensorix.memory.track() as m``
    """Track CPU memory inside the block; afterwards ``.peak`` is the most bytes held at once
    above what was held on entry, ``.current`` what the block left held.

    Example: ``with tensorix.memory.track() as m: y = f(x)`` then ``m.peak``.
    """

    def __enter__(self):
        self._owner = not tracemalloc.is_tracing()
        start()
        tracemalloc.reset_peak()
        self._base = tracemalloc.get_traced_memory()[0]
        self.peak = self.current = 0
        return self

    def __exit__(self, *exc):
        now, peak = tracemalloc.get_traced_memory()
        self.current, self.peak = now - self._base, peak - self._base
        if self._owner:
            stop()
        return False
