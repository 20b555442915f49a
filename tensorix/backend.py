"""The array-module switch: the only place that knows NumPy from CuPy.

Everything above this layer asks for ``xp`` (``device.xp`` or :func:`array_module`) and never
imports numpy or cupy to mean "the array module". CuPy is imported lazily, here only, so CPU
machines never need it.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["Device", "device", "array_module", "cuda_available", "get_device", "cpu"]


@functools.cache
def _cupy():
    """Import CuPy once; ``None`` where it is not installed or no GPU is visible."""
    try:
        import cupy  # the one import of cupy in the package

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        return cupy
    except Exception:  # ImportError, or a CUDA runtime error on a machine without a GPU
        return None


def cuda_available() -> bool:
    """True where CuPy imports and sees at least one GPU."""
    return _cupy() is not None


class Device:
    """A device: its ``type`` ('cpu' or 'cuda'), ``index`` and array module ``xp``.

    Example::

        >>> tensorix.device("cpu").xp is numpy
        True
    """

    __slots__ = ("type", "index")
    _cache: dict = {}

    def __new__(cls, type: str | Device = "cpu", index: int | None = None):
        if isinstance(type, Device):
            return type
        if not isinstance(type, str):
            raise TypeError(f"device: expected a string like 'cpu' or 'cuda:0', got {type!r}")
        if ":" in type:
            type, _, idx = type.partition(":")
            if not idx.isdigit():
                raise ValueError(f"device: invalid device index in {type}:{idx!r}")
            index = int(idx)
        if type not in ("cpu", "cuda"):
            raise ValueError(f"device: expected 'cpu' or 'cuda', got {type!r}")
        if type == "cuda" and index is None:
            index = 0
        if type == "cpu":
            index = None
        key = (type, index)
        dev = cls._cache.get(key)
        if dev is None:
            dev = object.__new__(cls)
            object.__setattr__(dev, "type", type)
            object.__setattr__(dev, "index", index)
            cls._cache[key] = dev
        return dev

    @property
    def xp(self):
        if self.type == "cpu":
            return np
        cp = _cupy()
        if cp is None:
            raise RuntimeError(
                "device: CUDA was requested but CuPy with a visible GPU is not available "
                "(pip install 'tensorix[cuda]' on a machine with an NVIDIA GPU)"
            )
        return cp

    def __repr__(self):
        if self.type == "cpu":
            return "device(type='cpu')"
        return f"device(type='cuda', index={self.index})"

    def __str__(self):
        return "cpu" if self.type == "cpu" else f"cuda:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = Device(other)
        return self is other

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (Device, (str(self),))


device = Device
cpu = Device("cpu")


def array_module(array):
    """The array module (numpy or cupy) that owns ``array``."""
    if isinstance(array, np.ndarray) or np.isscalar(array):
        return np
    cp = _cupy()
    if cp is not None and isinstance(array, cp.ndarray):
        return cp
    return np


def get_device(array) -> Device:
    """The Device of a raw backend array."""
    if isinstance(array, np.ndarray):
        return cpu
    cp = _cupy()
    if cp is not None and isinstance(array, cp.ndarray):
        return Device("cuda", array.device.id)
    return cpu


def data_ptr(array) -> int:
    """The address of an array's first element."""
    if isinstance(array, np.ndarray):
        return array.__array_interface__["data"][0]
    return array.data.ptr


def to_device(array, dev: Device):
    """Copy a raw array onto ``dev`` (no copy when it is already there)."""
    if get_device(array) is dev:
        return array
    if dev.type == "cpu":
        return array.get()
    with _cupy().cuda.Device(dev.index):
        return _cupy().asarray(array)
