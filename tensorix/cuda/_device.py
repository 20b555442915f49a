"""Which GPUs there are, which one is current, and waiting for them."""

from __future__ import annotations

from .. import backend

__all__ = ["is_available", "device_count", "current_device", "set_device", "device",
           "synchronize", "get_device_name", "get_device_capability"]


def is_available() -> bool:
    """True where CuPy imports and sees a GPU. Example: ``tensorix.cuda.is_available()``."""
    return backend.cuda_available()


def device_count() -> int:
    """The number of GPUs (0 without CuPy or a GPU)."""
    return backend.cuda_device_count()


def _cp():
    return backend.cupy_module()  # raises the clear "CUDA is not available" error


def current_device() -> int:
    """The index of the current GPU (where ``'cuda'`` without an index allocates)."""
    return int(_cp().cuda.runtime.getDevice())


def device_index(device=None, op: str = "cuda") -> int:
    """A GPU index from None (the current one), an int, ``'cuda:1'`` or a Device."""
    if device is None:
        return current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        index = device
    else:
        dev = backend.Device(device)
        if dev.type != "cuda":
            raise ValueError(f"{op}(): expected a CUDA device, got {dev}")
        index = dev.index
    count = device_count()
    if count == 0:
        _cp()  # no GPU at all: backend's clear "CUDA is not available" error
    if not 0 <= index < count:
        raise ValueError(f"{op}(): invalid device index {index} (this machine has {count} "
                         f"GPU{'s' if count != 1 else ''})")
    return index


def set_device(device) -> None:
    """Make ``device`` (an index, ``'cuda:i'`` or a Device) the current GPU."""
    _cp().cuda.Device(device_index(device, "set_device")).use()


class device:
    """Context manager that makes a GPU current inside its block (``torch.cuda.device``).

    Example::

        with tensorix.cuda.device(1):
            x = tensorix.zeros(3, device="cuda")   # on cuda:1
    """

    def __init__(self, device):
        self.index = device_index(device, "device")
        self._prev = None

    def __enter__(self):
        self._prev = current_device()
        _cp().cuda.Device(self.index).use()
        return self

    def __exit__(self, *exc):
        _cp().cuda.Device(self._prev).use()
        return False


def synchronize(device=None) -> None:
    """Wait until every kernel queued on ``device`` (default: the current GPU) has finished."""
    _cp().cuda.Device(device_index(device, "synchronize")).synchronize()


def get_device_name(device=None) -> str:
    """The GPU's name, e.g. ``'NVIDIA H200'``."""
    props = _cp().cuda.runtime.getDeviceProperties(device_index(device, "get_device_name"))
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def get_device_capability(device=None) -> tuple:
    """The GPU's compute capability as ``(major, minor)``, e.g. ``(9, 0)`` on Hopper."""
    props = _cp().cuda.runtime.getDeviceProperties(
        device_index(device, "get_device_capability"))
    return int(props["major"]), int(props["minor"])
