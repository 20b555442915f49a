"""``tensorix.accelerator``: torch's device-agnostic accelerator API, answered from tensorix's
backend. The one accelerator tensorix has is CUDA through CuPy; where no GPU is visible there is
none (``current_accelerator()`` is None, ``device_count()`` is 0).

Example::

    dev = tensorix.accelerator.current_accelerator() or tensorix.device("cpu")
    x = tensorix.ones(3, device=dev)
"""

from __future__ import annotations

from . import backend
from .backends.cuda import is_built

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "set_device_index", "synchronize"]


def is_available() -> bool:
    """Whether an accelerator (a CUDA GPU that CuPy sees) is available."""
    return backend.cuda_available()


def device_count() -> int:
    """The number of accelerator devices (0 where there is none)."""
    return backend.cuda_device_count()


def current_accelerator(check_available: bool = False):
    """The accelerator's device type as a Device (``device(type='cuda')``), or None where
    tensorix has none. tensorix is built for CUDA wherever CuPy is installed; torch answers
    the same way for a CUDA build, so ``check_available`` only matters without a GPU."""
    if is_available() or (is_built() and not check_available):
        return backend.Device("cuda")
    return None


def _need(op):
    if not is_available():
        raise RuntimeError(f"accelerator.{op}: no accelerator is available (tensorix's "
                           "accelerator is CUDA through CuPy; none is visible here)")


def current_device_index() -> int:
    """The index of the current accelerator device."""
    _need("current_device_index")
    from .cuda import current_device

    return current_device()


def set_device_index(device) -> None:
    """Make ``device`` (an index, ``"cuda:1"`` or a Device) the current accelerator device."""
    _need("set_device_index")
    from .cuda import set_device

    set_device(device)


def synchronize(device=None) -> None:
    """Wait for all work queued on the accelerator device to finish."""
    _need("synchronize")
    from .cuda import synchronize as sync

    sync(device)
