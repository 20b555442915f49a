"""numba kernels for the CPU (the ``jit`` extra). A primitive declares one with
``jit("name", dtypes, example)`` among its ``_kernels``: a Kernel whose callable is the compiled
function ``name`` of ``_cpu_jit.py``, or None where numba is missing, fails to import or
compile, or ``TENSORIX_JIT=0``; the op then runs its NumPy kernel, which gives the same bits.
numba is imported on the first request, never by ``import tensorix``.
"""

from __future__ import annotations

import os
import threading
import warnings

from ._table import Kernel

__all__ = ["jit", "jit_kernel"]

_state: dict = {}
_lock = threading.Lock()


def _module():
    if "m" not in _state:
        with _lock:
            if "m" not in _state:
                _state["m"] = _load()
    return _state["m"]


def _load():
    if os.environ.get("TENSORIX_JIT", "1") == "0":
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from . import _cpu_jit
    except Exception:  # noqa: BLE001 - numba absent, or built for another NumPy
        return None
    return None if _cpu_jit.numba.config.DISABLE_JIT else _cpu_jit


def jit_kernel(name: str, *example):
    """The numba kernel ``name``, compiled (once, here, so that pool threads never compile) by
    a call on the small arguments ``example``; or None where it cannot run: then the caller
    keeps its NumPy kernel.

    Example: ``jit_kernel("gelu_erf32", out1, w1, p, q, s)`` with 1-element float32 arrays is
    callable as ``k(out, w, p, q, s)`` on 1-d float32 arrays, or None.
    """
    key = ("k", name)
    if key in _state:
        return _state[key]
    mod = _module()
    if mod is None:
        return None
    fn = getattr(mod, name)
    if key not in _state:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fn(*example)
            _state[key] = fn
        except Exception:  # noqa: BLE001 - no compiler target: the NumPy path still works
            _state[key] = None
    return _state[key]


class _JitKernel(Kernel):
    """A numba kernel of ``_cpu_jit.py``: compiled on the first ``load``, by a call on the
    small arguments ``example()`` gives (a callable, so that declaring it costs nothing)."""

    __slots__ = ("example",)

    def load(self):
        fn = _state.get(("k", self.name), _state)  # _state itself: not tried yet
        return jit_kernel(self.name, *self.example()) if fn is _state else fn


def jit(name: str, dtypes, example) -> Kernel:
    """Declare the CPU kernel ``name`` of ``_cpu_jit.py`` for ``dtypes``, compiled on first use
    by a call on ``example()``.

    Example: ``jit("gelu_erf32", ("float32",), lambda: (out1, w1, p, q, s))`` with 1-element
    float32 arrays; its callable is ``k(out, w, p, q, s)`` on 1-d float32 arrays.
    """
    k = _JitKernel(name, "cpu", dtypes)
    k.example = example
    return k
