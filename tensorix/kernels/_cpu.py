"""numba kernels for the CPU (the ``jit`` extra). A primitive declares one with
``jit("name", dtypes, example)`` among its ``_kernels``: a Kernel whose callable is the compiled
function ``name`` of ``_cpu_jit.py``, or None where numba is missing, fails to import or
compile, or ``TENSORIX_JIT=0``; the op then runs its NumPy kernel, which gives the same bits.
numba is imported on the first request, never by ``import tensorix``.

``float32_math(name, x)`` runs one of ``_math32``'s float32 functions (expm1, log1p, sinh, ...)
on a float32 array: numba's one pass where it builds, else the same source on NumPy blocks;
either way split over the library's threads.
"""

from __future__ import annotations

import os
import threading
import warnings

import numpy as np

from .. import _threads
from . import _math32
from ._table import Kernel

__all__ = ["jit", "jit_kernel", "float32_math", "float32_pass", "logaddexp", "atan2",
           "sum_squares"]

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

    Example: ``jit_kernel("gelu32", out1, x1)`` with 1-element float32 arrays is callable as
    ``k(out, x)`` on 1-d float32 arrays, or None.
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

    Example: ``jit("gelu32", ("float32",), lambda: (out1, x1))`` with 1-element float32
    arrays; its callable is ``k(out, x)`` on 1-d float32 arrays.
    """
    k = _JitKernel(name, "cpu", dtypes)
    k.example = example
    return k


def _numpy_form(body):
    def kernel(out, *xs):
        with np.errstate(all="ignore"):  # per block: pool threads have their own errstate
            out[...] = body(*xs)
    return kernel


def float32_pass(compiled, name: str, *arrays):
    """``_math32.<name>(*arrays)`` for float32 NumPy arrays of one shape, as a new float32
    array: ``compiled`` (that body's numba loop, from a primitive's declared ``jit`` kernel)
    in one pass split over the pool by ``_threads.elementwise`` (parts of ``COSTLY``
    elements), or where it is None the same source on NumPy blocks (``_threads.blockwise``:
    the temporaries stay in cache). Either way the same bits, for any thread count.

    Example: ``float32_pass(None, "gelu32", np.float32([1.0]))`` is
    ``array([0.8413447], dtype=float32)``.
    """
    out = np.empty(arrays[0].shape, np.float32)
    if compiled is None:
        return _threads.blockwise(_numpy_form(getattr(_math32, name)), out, *arrays)
    # the loops take 1-d arrays: parts of contiguous arrays flatten without a copy
    flat = [np.ascontiguousarray(a) for a in arrays]
    return _threads.elementwise(
        lambda o, *xs: compiled(o.reshape(-1), *[v.reshape(-1) for v in xs]), out, *flat)


def float32_math(name: str, *xs):
    """``_math32.<name>`` (e.g. ``"expm1_32"``) of float32 NumPy arrays of one shape (one, or
    two for the binary ones such as ``"atan2_32"``), as a new float32 array of that shape,
    within that function's stated ulp bound (``_math32.ULP``); the same bits with and without
    numba, and for any thread count.

    Example: ``float32_math("log1p32", np.array([1e-10], np.float32))`` is
    ``array([1.e-10], dtype=float32)``.
    """
    key = ("math32", name)
    if key not in _state:
        _state[key] = jit_kernel(name, np.empty(1, np.float32),
                                 *[np.ones(1, np.float32) for _ in xs])
    return float32_pass(_state[key], name, *xs)


def atan2(y, x):
    """``xp.arctan2(y, x)``; for two float32 NumPy arrays of one shape ``_math32.atan2_32``
    (within ``ULP["atan2_32"]``; NumPy's calls the C library per element, 3x torch's time).

    Example: ``atan2(np.float32([1.0]), np.float32([-1.0]))`` is ``array([2.3561945],
    dtype=float32)``.
    """
    if type(y) is np.ndarray and type(x) is np.ndarray and y.dtype == x.dtype == np.float32 \
            and y.shape == x.shape:
        return float32_math("atan2_32", y, x)
    from .. import backend

    return backend.array_module(y).arctan2(y, x)


def logaddexp(fn: str, a, b):
    """``xp.logaddexp(a, b)`` (``fn="logaddexp"``) or ``xp.logaddexp2``, in float32 for two
    float32 NumPy arrays as ``max(a, b) + softplus32(-|a - b|)`` (base 2: the difference
    scaled by ln 2 and the softplus by 1 / ln 2), each term within 3 ulp (the sum cancels
    near 0, as in NumPy's and torch's formula): ``_math32.logaddexp32`` / ``logaddexp2_32`` in
    one pass (NumPy's own calls the C library's log1p per element, 20x torch's time). Equal
    inputs give ``a + log(2)`` (``a + 1`` in base 2; so inf, inf gives inf). Shapes broadcast.

    Example: ``logaddexp("logaddexp", np.float32([0.0]), np.float32([0.0]))`` is
    ``array([0.6931472], dtype=float32)``.
    """
    if not (type(a) is np.ndarray and type(b) is np.ndarray and a.dtype == np.float32
            and b.dtype == np.float32):
        from .. import backend

        return getattr(backend.array_module(a), fn)(a, b)
    if a.shape != b.shape:
        a, b = (np.ascontiguousarray(v) for v in np.broadcast_arrays(a, b))
    name = "logaddexp32" if fn == "logaddexp" else "logaddexp2_32"
    key = ("passes", name)
    if key not in _state:  # _jit_13spec's loops in passes: the same bits, faster than one
        one = np.ones(1, np.float32)
        _state[key] = jit_kernel(name + "_passes", np.empty(1, np.float32), one, one)
    return float32_pass(_state[key], name, a, b)


_CHUNK = 1 << 16


def sum_squares(x):
    """The sum of the squares of a float32 NumPy array's elements, as a float64 scalar: BLAS
    dots of 64 Ki-element chunks, added in float64 (one pass over the data; the BLAS
    accumulates in float32, about 6e-8 relative per chunk at this size, where one dot over 1M
    elements is 5e-7 and NumPy's square-then-sum makes two passes and a 4 MB temporary).

    Example: ``sum_squares(np.float32([3, 4]))`` is ``25.0``.
    """
    flat = np.ascontiguousarray(x).reshape(-1)
    total = np.float64(0)
    for i in range(0, flat.size, _CHUNK):
        part = flat[i:i + _CHUNK]
        total += np.float64(np.dot(part, part))
    return total
