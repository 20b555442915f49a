"""Kernels as objects a primitive declares: each knows its device type, the dtypes it serves
and whether it can run here.

A primitive lists its kernels on its class (``_kernels = {role: (kernel, ...)}``, one kernel
per device type for each role, all of one role taking the same arguments) and asks the one
dispatcher for the one serving a tensor (``autograd.dispatch.kernel(cls, t, role)``); it gets a
callable on raw arrays, or None, and then keeps its own ``xp`` path. The CUDA kernels
(``_cuda.py``) compile their CuPy kernels on first call, so they serve only where CUDA C can run
(``backend.cuda_kernels_available``): on the CuPy stand-in, which cannot, none serves and the
ops' generic paths run. The CPU kernels (``_cpu.py``) are numba's, compiled on first use.
"""

from __future__ import annotations

from .. import backend

__all__ = ["Kernel", "cuda_kernel", "select", "declared"]

_DECLARED: list = []  # every kernel made, in declaration order (for tests and reports)


class Kernel:
    """A kernel for one device type: ``get(dtype)`` is the callable, or None where it does not
    serve ``dtype`` (a tensorix or NumPy dtype; None for any) or cannot run here."""

    __slots__ = ("name", "device_type", "dtypes", "_fn")

    def __init__(self, name: str, device_type: str, dtypes, fn=None):
        self.name, self.device_type, self.dtypes, self._fn = name, device_type, \
            frozenset(dtypes), fn
        _DECLARED.append(self)

    def runnable(self) -> bool:
        """True where this kernel can run on this machine (CUDA: CUDA C compiles here)."""
        return self.device_type != "cuda" or backend.cuda_kernels_available()

    def load(self):
        """The callable (CPU kernels compile here, once)."""
        return self._fn

    def get(self, dtype=None):
        if dtype is not None and getattr(dtype, "name", str(dtype)) not in self.dtypes:
            return None
        return self.load() if self.runnable() else None

    def __call__(self, *args, **kwargs):  # the launcher itself (tests call it directly)
        return self._fn(*args, **kwargs)

    def __repr__(self):
        return f"<kernel {self.name} on {self.device_type} for {', '.join(sorted(self.dtypes))}>"


def cuda_kernel(dtypes=("float32", "float64")):
    """Decorator: ``fn`` (a launcher over CuPy arrays) as the CUDA kernel for ``dtypes``."""
    def deco(fn):
        return Kernel(fn.__name__, "cuda", dtypes, fn)
    return deco


def select(declared, device, dtype=None):
    """The callable of the kernel in ``declared`` for ``device`` (a Device) and ``dtype``, or
    None where none serves: then the caller runs its ``xp`` composite."""
    for k in declared:
        if k.device_type == device.type:
            return k.get(dtype)
    return None


def declared() -> tuple:
    """Every kernel declared so far (those of ``_cuda.py`` once this package is imported)."""
    return tuple(_DECLARED)
