"""The array-module switch: the only place that knows NumPy from CuPy.

Everything above this layer asks for ``xp`` (``device.xp`` or :func:`array_module`) and never
imports numpy or cupy to mean "the array module". CuPy is imported lazily, here only, so CPU
machines never need it.

Testing without a GPU: the device "cuda" can run on a CuPy stand-in that keeps its arrays in
host memory but enforces CuPy's rules (``tensorix/fakecupy/``; docs/gpu.md): set
``TENSORIX_FAKE_CUDA=1`` before importing tensorix, or use ``with backend.fake_cuda():``.
It cannot run CUDA C, so :func:`cuda_kernels_available` is False on it and the kernel table
answers None (the ops keep their ``xp`` paths). Off by default: nothing changes without it.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os

import numpy as np

__all__ = ["Device", "device", "array_module", "cuda_available", "get_device", "cpu",
           "cupy_module", "cuda_device_count", "set_tf32", "elementwise_kernel", "raw_kernel",
           "fake_cuda", "fake_cuda_active", "cuda_kernels_available", "quiet", "quiet_context",
           "as_strided"]

_FAKE = [None]  # the CuPy stand-in module while it replaces CuPy
_FAKE_ENV = os.environ.get("TENSORIX_FAKE_CUDA", "") not in ("", "0")


def _cupy():
    """The CUDA array module: the stand-in while it is on, else CuPy (None where CuPy is not
    installed or sees no GPU)."""
    if _FAKE[0] is not None:
        return _FAKE[0]
    if _FAKE_ENV:  # TENSORIX_FAKE_CUDA=1: switched on at first use (tensorix is imported by then)
        _set_fake(True)
        return _FAKE[0]
    return _real_cupy()


@contextlib.contextmanager
def fake_cuda(enabled: bool = True):
    """Run the device "cuda" on the CuPy stand-in inside the block (tests on machines without
    a GPU; ``enabled=False`` turns it off inside the block instead).

    Example::

        with tensorix.backend.fake_cuda():
            x = tensorix.ones(3, device="cuda")   # a stand-in device array
    """
    global _FAKE_ENV
    prev, prev_env, prev_peak = _FAKE[0], _FAKE_ENV, _peak[0]
    _FAKE_ENV, _peak[0] = False, 0  # the peak of memory is the stand-in's own inside
    _set_fake(enabled)
    try:
        yield
    finally:
        _FAKE[0], _FAKE_ENV, _peak[0] = prev, prev_env, prev_peak


def _set_fake(enabled):
    if not enabled:
        _FAKE[0] = None
        return
    from . import fakecupy  # the stand-in: numpy only, imports nothing from tensorix

    if _FAKE[0] is not fakecupy.cupy:
        _FAKE[0] = fakecupy.cupy
        _track_peak(fakecupy.cupy)


def fake_cuda_active() -> bool:
    """True while the device "cuda" runs on the CuPy stand-in."""
    return _FAKE[0] is not None or _FAKE_ENV


def cuda_kernels_available() -> bool:
    """True where CUDA C kernels can be compiled and run: real CuPy with a GPU (never on the
    stand-in)."""
    return _FAKE[0] is None and not _FAKE_ENV and _real_cupy() is not None


@functools.cache
def _real_cupy():
    """Import CuPy once; ``None`` where it is not installed or no GPU is visible."""
    try:
        import cupy  # the one import of cupy in the package

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        _track_peak(cupy)
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
    if _ml_byte(array.dtype):  # fp8/fp6/fp4/E8M0 (no CuPy dtype) travel as uint8 codes
        array = array.view(np.uint8)
    cp = dev.xp  # the clear "CUDA is not available" error where CuPy or a GPU is missing
    with cp.cuda.Device(dev.index):
        return cp.asarray(array)


# -- what tensorix.cuda and tensorix.kernels need from CuPy (they import it only through here).
# None of this has run on a GPU yet (no GPU where it was written): see docs/gpu.md.
_peak = [0]  # the most bytes the pool had handed out at once (tensorix.cuda.max_memory_allocated)


def _track_peak(cupy):
    """Route CuPy's allocations through its default pool and note the peak of used bytes after
    each one: the pool itself keeps no peak, and ``max_memory_allocated`` must be exact."""
    pool = cupy.get_default_memory_pool()
    used_bytes, pool_malloc = pool.used_bytes, pool.malloc

    def malloc(size):
        mem = pool_malloc(size)
        used = used_bytes()
        if used > _peak[0]:
            _peak[0] = used
        return mem

    cupy.cuda.set_allocator(malloc)


def cupy_module():
    """CuPy itself, for the modules that wrap its CUDA runtime (``tensorix.cuda``,
    ``tensorix.kernels``); raises the clear "CUDA is not available" error without it."""
    return Device("cuda").xp


def nccl_module():
    """``cupy.cuda.nccl`` (NCCL's binding, for the "nccl" backend of tensorix.distributed);
    on the CuPy stand-in, its NCCL stand-in over MPI (``fakecupy/nccl.py``)."""
    if fake_cuda_active():
        from .fakecupy import nccl
        return nccl
    cupy_module()  # the clear "CUDA is not available" error without CuPy or a GPU
    import importlib

    return importlib.import_module("cupy.cuda.nccl")


def cuda_device_count() -> int:
    """How many GPUs CuPy sees (0 without CuPy or a GPU)."""
    cp = _cupy()
    return 0 if cp is None else int(cp.cuda.runtime.getDeviceCount())


def set_tf32(enabled: bool) -> None:
    """Let cuBLAS run float32 matrix products on the TF32 tensor cores (or stop it). CuPy reads
    its ``CUPY_TF32`` variable once per dtype; this sets the same per-dtype compute type."""
    linalg = cupy_module()._core._routines_linalg
    kind = linalg.COMPUTE_TYPE_TF32 if enabled else linalg.COMPUTE_TYPE_DEFAULT
    linalg.set_compute_type(np.float32, kind)
    linalg.set_compute_type(np.complex64, kind)


@functools.cache
def elementwise_kernel(in_params: str, out_params: str, operation: str, name: str,
                       preamble: str = ""):
    """A ``cupy.ElementwiseKernel`` (compiled on its first call, then cached by CuPy)."""
    return cupy_module().ElementwiseKernel(in_params, out_params, operation, name,
                                           preamble=preamble)


@functools.cache
def raw_kernel(code: str, name: str, options: tuple = ("--std=c++17",)):
    """A ``cupy.RawKernel`` for function ``name`` in the CUDA source ``code``."""
    return cupy_module().RawKernel(code, name, options=options)


# -- floating-point warnings ------------------------------------------------------------------
# PyTorch computes inf/nan silently (1/0, inf - inf) where NumPy warns (CuPy never does).
# np.errstate costs about 2 us, ten times a small add, so `quiet` sets NumPy's floating-point
# error state (a context variable since NumPy 2) directly; older NumPy gets the same set/reset
# protocol from np.seterr. The one way to silence them in the package.
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _FPE

    with np.errstate(all="ignore"):
        _FPE_IGNORE = _FPE.get()
except ImportError:  # pragma: no cover - NumPy < 2
    class _Seterr:
        @staticmethod
        def set(_):
            return np.seterr(all="ignore")

        @staticmethod
        def reset(token):
            np.seterr(**token)

    _FPE, _FPE_IGNORE = _Seterr(), None


class quiet:  # noqa: N801 - used like np.errstate
    """``with quiet():`` silences NumPy's floating-point warnings (like
    ``np.errstate(all="ignore")``, at a tenth of the cost); re-entrant and thread-safe; a
    no-op for CuPy arrays, which do not warn."""

    __slots__ = ("_token",)

    def __enter__(self):
        self._token = _FPE.set(_FPE_IGNORE)

    def __exit__(self, *exc):
        _FPE.reset(self._token)


def quiet_context():
    """A ``contextvars.Context`` whose NumPy error state is "ignore", or None on NumPy < 2:
    ``ctx.run(fn, *args)`` is the cheapest quiet call (~0.05 us), for the hottest forwards. A
    Context can be entered by one thread at a time (``run`` raises RuntimeError otherwise)."""
    if _FPE_IGNORE is None:  # pragma: no cover
        return None
    token = _FPE.set(_FPE_IGNORE)
    try:
        return contextvars.copy_context()
    finally:
        _FPE.reset(token)


def _ml_byte(dtype) -> bool:
    """A one-byte ml_dtypes type (fp8/fp6/fp4/E8M0): a user dtype (number >= 256) that NumPy
    helpers and CuPy do not always understand; its bytes are its codes."""
    return dtype.num >= 256 and dtype.itemsize == 1


def as_strided(array, shape, strides):
    """A view of ``array`` with ``shape`` and byte ``strides`` (NumPy's or CuPy's as_strided).
    One-byte ml_dtypes go through a uint8 view: float8_e5m2 reports the typestr '<f1', which
    NumPy's as_strided cannot parse back."""
    if _ml_byte(array.dtype):
        return as_strided(array.view(np.uint8), shape, strides).view(array.dtype)
    return array_module(array).lib.stride_tricks.as_strided(array, shape, strides)
