"""numba kernels of the activations (ops/_act_fast.py, ops/activation.py), imported at the end
of ``_cpu_jit.py`` (so reachable by ``jit`` / ``jit_kernel`` by name).

Two kinds:

* exact selects (relu, hardtanh, leaky_relu, hardsigmoid, softsign): torch's formula element
  by element, written as conditional expressions that LLVM turns into vector selects (no
  branch per element); they give torch's bits, signed zeros and nan included;
* ``_act32``'s float32 bodies (sigmoid, softplus, logsigmoid, logit, glu), recompiled over
  ``_math32``'s scalar helpers as ``_cpu_jit`` does for ``_math32`` itself: the same bits as
  their NumPy form. numba's disk cache is keyed by ``_act32.py`` for those loops: after an
  edit to ``_math32`` alone, clear ``tensorix/kernels/__pycache__`` to rebuild them.
"""

import types

import numba
import numpy as np

from . import _act32, _math32

# _cpu_jit's options (it imports this module at its end, so this one cannot import it at
# module level: the two would cycle): cached, GIL-free, NumPy's float errors (no check per
# element, which would keep LLVM from vectorising)
_jit = numba.njit(boundscheck=False, cache=True, nogil=True, error_model="numpy")

__all__ = ["relu32", "hardtanh32", "leaky_relu32", "hardsigmoid32", "softsign32"] + [
    "act_" + name for name in _act32.LOOPS]


@_jit
def relu32(out, x):
    """out = 0 where x < 0, else x (torch's: -0 and nan pass through)."""
    zero = np.float32(0)
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = zero if v < zero else v


@_jit
def hardtanh32(out, x, lo, hi):
    """out = torch's clamp: lo where x < lo, then hi where above hi (-0 and nan stay)."""
    for i in range(x.shape[0]):
        v = x[i]
        v = lo if v < lo else v
        out[i] = hi if v > hi else v


@_jit
def leaky_relu32(out, x, slope):
    """out = x where x > 0, else x * slope (torch's; nan stays)."""
    zero = np.float32(0)
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v if v > zero else v * slope


@_jit
def hardsigmoid32(out, x):
    """out = min(max(x + 3, 0), 6) / 6 in float32, torch's order (nan stays)."""
    zero, three, six = np.float32(0), np.float32(3), np.float32(6)
    for i in range(x.shape[0]):
        c = x[i] + three
        c = zero if c < zero else c
        out[i] = (six if c > six else c) / six


@_jit
def softsign32(out, x):
    """out = x / (|x| + 1) (torch's formula: nan at +-inf)."""
    one = np.float32(1)
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v / (abs(v) + one)


def _namespace():
    from ._cpu_jit import _SCALAR, _scalars  # complete by now: this module is its last import

    ns = dict(vars(_act32))
    ns.update((k, _SCALAR[k]) for k in ("_sel", "_bits", "_float", "_tofloat", "_sqrt")
              + _math32.BODIES)  # _math32's scalar forms replace its NumPy ones
    return _scalars(_act32, _act32.BODIES, ns)


def _loops():
    """{"act_<name>": numba loop} for ``_act32.LOOPS``, each a numba function of its own name
    (numba's disk cache is keyed by name and by the file the code comes from)."""
    ns = _namespace()
    loops = {}
    for name in _act32.LOOPS:
        code = getattr(_act32, "_loop_" + name).__code__
        loops["act_" + name] = _jit(types.FunctionType(
            code.replace(co_name="act_" + name, co_qualname="act_" + name), ns, "act_" + name))
    return loops


# act_sigmoid32(out, x), act_softplus_bt32(out, x, beta, threshold), ...: see _act32.py
globals().update(_loops())
