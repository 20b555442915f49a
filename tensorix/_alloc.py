"""Keep freed array memory in the process for reuse (glibc only; done once, at import).

A training step allocates and frees the same large temporaries every iteration (activations,
im2col buffers, gradients). NumPy takes each from ``malloc``; glibc serves blocks above its
mmap threshold (128 KiB at start, adapting upwards only after such a block is freed) with a
fresh ``mmap`` and gives them back with ``munmap``, and it returns the top of the heap to the
system once more than the trim threshold is free. Each fresh page then costs a page fault when
first written: measured here, that was 40% of a small CNN's training step and a third of a
small GPT's, all of it in the kernel. Raising both thresholds makes freed blocks up to 32 MiB
come back from the heap already mapped.

The cost is that the process keeps up to ``_TRIM`` bytes of freed memory mapped. Set the
environment variable ``TENSORIX_MALLOC_TUNING=0`` to leave the C allocator alone; glibc's own
``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_`` variables, when set, win as well.
"""

from __future__ import annotations

import ctypes
import os
import sys

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
_MMAP = 32 << 20  # glibc's largest allowed mmap threshold on 64-bit systems
_TRIM = 512 << 20


def tune() -> bool:
    """Raise glibc's mmap and trim thresholds (see the module docstring); True if done."""
    if sys.platform != "linux" or os.environ.get("TENSORIX_MALLOC_TUNING", "1") == "0":
        return False
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return False  # the user tuned glibc already
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    if not hasattr(libc, "gnu_get_libc_version"):  # musl's mallopt does nothing
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP)) and bool(mallopt(_M_TRIM_THRESHOLD, _TRIM))
