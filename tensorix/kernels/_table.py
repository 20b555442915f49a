"""The kernel table: fused kernels keyed by (op, device type), with the dtypes each serves.

An op asks ``lookup(name, device, dtype)``; it gets a callable on raw arrays, or None, and then
keeps its own ``xp`` path. Nothing is registered for the CPU, so CPU ops never change
behaviour; the CUDA entries (``_cuda.py``) compile their CuPy kernels on first call, so they
are served only where CUDA C can run (``backend.cuda_kernels_available``): on the CuPy
stand-in, which cannot, every CUDA lookup answers None and the ops' generic paths run.
"""

from __future__ import annotations

from .. import backend

__all__ = ["register", "lookup", "entries"]

_TABLE: dict = {}  # (op, device type) -> (callable, frozenset of NumPy dtype names)


def register(op: str, device_type: str, dtypes=("float32", "float64")):
    """Decorator: ``fn`` serves ``op`` on devices of ``device_type`` for ``dtypes``."""
    def deco(fn):
        _TABLE[(op, device_type)] = (fn, frozenset(dtypes))
        return fn
    return deco


def lookup(op: str, device, dtype=None):
    """The fused kernel for ``op`` on ``device`` (a Device) and ``dtype`` (a tensorix dtype,
    a NumPy dtype or None for any), or None where there is none: then the op runs its ``xp``
    composite."""
    entry = _TABLE.get((op, device.type))
    if entry is None or device.type == "cuda" and not backend.cuda_kernels_available():
        return None
    if dtype is not None and getattr(dtype, "name", str(dtype)) not in entry[1]:
        return None
    return entry[0]


def entries() -> dict:
    """A copy of the table: {(op, device type): (callable, dtype names)}."""
    return dict(_TABLE)
