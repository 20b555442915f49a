"""The GPU memory pool: what tensors hold now, the peak, and giving cached blocks back.

Tensors on a GPU take their memory from CuPy's default memory pool, which keeps freed blocks
for reuse (like PyTorch's caching allocator). ``memory_allocated`` counts the bytes handed out
to live arrays, ``memory_reserved`` what the pool holds from the driver, and
``max_memory_allocated`` the peak of the former: backend routes every allocation through a
small wrapper that notes it (CuPy's pool keeps no peak). The peak is one number for the
process, not one per GPU.
"""

from __future__ import annotations

from .. import backend
from ._device import device_index

__all__ = ["memory_allocated", "max_memory_allocated", "reset_peak_memory_stats",
           "memory_reserved", "empty_cache"]


def _pool_bytes(device, what, op):
    if not backend.cuda_available():
        return 0  # PyTorch, too, reports 0 bytes where CUDA was never initialised
    cp = backend.cupy_module()
    with cp.cuda.Device(device_index(device, op)):
        pool = cp.get_default_memory_pool()
        return int(pool.used_bytes() if what == "used" else pool.total_bytes())


def memory_allocated(device=None) -> int:
    """Bytes of GPU memory that live arrays (tensors) hold now."""
    return _pool_bytes(device, "used", "memory_allocated")


def memory_reserved(device=None) -> int:
    """Bytes the memory pool holds from the driver (live arrays plus cached free blocks)."""
    return _pool_bytes(device, "total", "memory_reserved")


def max_memory_allocated(device=None) -> int:
    """The most bytes live arrays held at once since start or ``reset_peak_memory_stats``."""
    if not backend.cuda_available():
        return 0  # as memory_allocated (a stand-in's peak outlives the stand-in otherwise)
    return max(backend._peak[0], memory_allocated(device))


def reset_peak_memory_stats(device=None) -> None:
    """Start the peak afresh from what is allocated now."""
    backend._peak[0] = memory_allocated(device)


def empty_cache() -> None:
    """Give the pool's cached free blocks (and pinned host blocks) back to the driver; live
    tensors keep their memory. ``memory_reserved`` drops, ``memory_allocated`` does not."""
    if not backend.cuda_available():
        return
    cp = backend.cupy_module()
    cp.get_default_memory_pool().free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()
