"""The rules that ``Function.apply``, the one dispatch point, consults besides ``forward``.

Every primitive declares its rules as class attributes, beside its forward and backward
(``Function`` holds the defaults); nothing patches another module to attach them:

================  =========  ==================================================================
rule              default    meaning
================  =========  ==================================================================
``_codes``        None       how the op runs on storage-only formats held as uint8 codes on a
                             device (fp8/fp6/fp4/E8M0; CuPy has no such dtypes): ``"move"``
                             runs on the codes and re-tags the result (views, indexing, cat),
                             ``"math"`` computes on the values decoded to float32 and encodes
                             the result (the CPU rounds once too, so the bits match), ``"own"``
                             lets the op handle codes itself; a staticmethod ``(args) -> rule``
                             decides per call; None refuses with a clear error
``_gemm``         None       the op is a GEMM a precision or quantization policy applies to: a
                             staticmethod ``(matmul, *args) -> Tensor`` writing the op with the
                             policy's ``matmul(a, b, bias=None)`` (reduction over a's last axis
                             and b's second last, as a tensor core computes)
``_widen16``      False      16-bit and narrower float inputs (float16, bfloat16, fp8, ...)
                             compute in float32 and the float32 results round back once: True
                             for every Tensor argument, or a tuple of argument positions.
                             Applied by casts around the op (so gradients of any order flow),
                             set up once when the class is made: the other ops pay nothing.
                             The backward then runs in float32 too and rounds once, reading
                             a saved output as its 16-bit value (torch's CPU recipe)
``_kernels``      None       fused kernels per device: ``{role: (kernel, ...)}`` with the
                             Kernel objects of ``tensorix.kernels`` (``cuda.gelu``, a numba
                             ``jit(...)``), at most one per device type for a role, all of a
                             role taking the same arguments. The op asks ``kernel(cls, role,
                             device, dtype)`` in forward/backward and keeps its ``xp`` path
                             where that answers None (no kernel for the device or dtype, no CUDA C,
                             no numba)
``_writes``       ()         positions of Tensor arguments the forward writes in place (batch
                             norm's running statistics and batch count): a trace keeps their
                             values from before the op (``tracer.before_write(cls, args)``), so
                             a compiler that runs the traced call again restores them first
                             and the writes happen once
``_eager``        None       a binary op's forward on its two Tensor arguments' raw arrays, a
                             staticmethod ``(x, y) -> array`` that its forward calls too:
                             where no node is recorded (grad mode off, or neither input
                             requires grad) and no hook is set, ``autograd.function.binary``
                             (the call of the op's wrapper) runs it alone and wraps the
                             result, making no ctx; else that is ``apply`` (add, sub, mul, div)
================  =========  ==================================================================

And per thread (``grad_mode.modes.state``), two hooks, None unless in use:

* ``state.gemm``: a callable ``(cls, args) -> Tensor | None`` that computes the GEMM
  primitives (``tensorix.numerics.autocast`` installs its policy here); None lets the op run;
* ``state.tracer``: graph capture. ``apply`` runs the op, then calls
  ``tracer.record(cls, args, out)`` with the Function subclass, the positional arguments as
  given and the result; ops called inside a forward (or inside a policy's GEMM) are not
  reported, and ``cls.apply(*args)`` with new tensors reproduces the op. Python reading a
  tensor's data (``item``, ``bool``, ``numpy``, ``__array__``) calls
  ``tracer.read(tensor, what)``: the tracer decides whether that is a graph break. Two
  optional methods, looked up with ``getattr``: ``graph_break(reason)`` (a random draw outside
  any primitive) and ``effect(what, fn, args, kwargs)`` (``backward()``, an optimizer's
  ``step``/``zero_grad``: a call the tracer replays rather than records).

The cost where nothing is in use is one attribute read per op (``state.hooked``). Storage
codes cost nothing until the process first makes a tensor of uint8 codes (``tensor._make``
notes it, ``grad_mode.codes_exist``); from then on an op whose first argument is not a CPU
tensor has its arguments checked. A primitive is the unit: ops called inside its forward run
with the hooks off (not reported, not rerouted).

Example (count the ops of a step)::

    class Count:
        n = 0
        def record(self, cls, args, out):
            Count.n += 1

    modes.state.tracer = Count()
    y = (x @ w).sum()          # two records: MatMul, Sum
    modes.state.tracer = None
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from .. import _codec
from .. import dtypes as dt
from ..kernels import select
from ..tensor import Tensor, _make
from .grad_mode import _CODES, modes

__all__ = ["route", "codes_route", "on_codes", "gemm_hook", "widen16", "widened", "kernel",
           "NARROW"]

_ndarray = np.ndarray


def route(cls, args, state):
    """``cls.apply(*args)`` where this thread has a hook set or storage codes exist: storage
    codes first, then a GEMM policy, else the op as usual; the tracer sees the result."""
    out = None
    if cls._writes and state.tracer is not None:
        before = getattr(state.tracer, "before_write", None)
        if before is not None:
            before(cls, args)
    if _CODES[0] and args and (type(a0 := args[0]) is not Tensor or
                               type(a0._data) is not _ndarray):
        out = _untraced(state, codes_route, cls, args)  # "math" reruns the op: report it once
    if out is None and cls._gemm is not None and state.gemm is not None:
        out = _policy_gemm(cls, args, state)
    if out is None:
        out = _plain(cls, args, state)
    tracer = state.tracer
    if tracer is not None:
        tracer.record(cls, args, out)
    return out


def _untraced(state, fn, *args):
    """``fn(*args)`` with this thread's tracer off (the caller reports the op)."""
    tracer = state.tracer
    if tracer is None:
        return fn(*args)
    state.tracer = None
    try:
        return fn(*args)
    finally:
        state.tracer = tracer


def _plain(cls, args, state):
    """The op as usual, with this thread's hooks off while it runs: ops called inside its
    forward are parts of this primitive, not reported or rerouted on their own."""
    state.hooked = False
    try:
        return cls.apply(*args)
    finally:
        state._rehook()


def _policy_gemm(cls, args, state):
    """The GEMM under the thread's policy, with the hooks off while it runs: the policy's own
    products are plain GEMMs, and the tracer records this op, not its parts."""
    gemm, tracer = state.gemm, state.tracer
    state.gemm = state.tracer = None
    try:
        return gemm(cls, args)
    finally:
        state.gemm, state.tracer = gemm, tracer


@contextlib.contextmanager
def gemm_hook(hook):
    """Install ``hook`` (or None) as this thread's GEMM hook inside the block (the policy's
    backward uses ``gemm_hook(None)``: its products are plain GEMMs, whatever is current)."""
    state = modes.state
    prev = state.gemm
    state.gemm = hook
    try:
        yield hook
    finally:
        state.gemm = prev


def kernel(cls, role, device, dtype=None):
    """The callable of the kernel that primitive ``cls`` declares (``_kernels``) for ``role``
    on ``device`` (a Device) and ``dtype`` (None: any), or None: then the op runs its ``xp``
    path. Example: ``fused = kernel(Gelu, "forward", a.device, a.dtype)`` in Gelu.forward."""
    return select(cls._kernels[role], device, dtype)


# -- 16-bit inputs computed in float32 ----------------------------------------------------------
# The float dtypes that compute in float32: float16 and the formats NumPy has no arithmetic for
# (bfloat16, fp8, fp6, fp4, E8M0). The one truth for ``_widen16`` and for the few ops that
# still widen by hand (each says why there).
NARROW = frozenset(d for d in dt.ALL if d.low_precision or d is dt.float16)
_HALF = NARROW


def widen16(apply, which):
    """``apply`` (Function.apply's function) for a primitive declaring ``_widen16 = which``:
    its 16-bit (and narrower) float Tensor arguments (all, or those at the positions in
    ``which``) are cast to float32, and its float32 results back to their dtype (rounded
    once). The float32 results also take the rounded values in place: an output the op saved
    for its backward (sigmoid's, tanh's, softmax's) is then the 16-bit output widened, which
    is what torch's CPU backward kernels read (they save the 16-bit output, compute in float32
    and round once)."""
    def wide_apply(cls, *args):
        d = None
        for i, a in enumerate(args):
            if type(a) is Tensor and a._dtype in _HALF and (which is True or i in which):
                d = a._dtype
                break
        if d is None:
            return apply(cls, *args)
        wide = [a.to(dt.float32) if type(a) is Tensor and a._dtype in _HALF and
                (which is True or i in which) else a for i, a in enumerate(args)]
        outer, _widening.dtype = getattr(_widening, "dtype", None), d
        try:
            return _narrow(apply(cls, *wide), d)
        finally:
            _widening.dtype = outer

    wide_apply.__doc__ = apply.__doc__
    return wide_apply


_widening = threading.local()


def widened_from():
    """The 16-bit dtype that the primitive now computing was widened from by its
    ``_widen16`` rule, or None. A float32 fast path whose bits differ from the plain
    path's asks it, so 16-bit results keep the plain path's rounding (torch's bits)."""
    return getattr(_widening, "dtype", None)


def _narrow(out, d):
    if type(out) is tuple:
        return tuple(_narrow(o, d) for o in out)
    if type(out) is not Tensor or out._dtype is not dt.float32:
        return out
    low = out.to(d)
    # the grid values back into the float32 result (saved outputs see them); low's cast from
    # them is exact, so its bits are unchanged. A read-only result (a broadcast view) is left.
    if getattr(getattr(out._data, "flags", None), "writeable", True):
        out._data[...] = _codec.cast_array(low._data, dt.float32, d) if d.storage_only else \
            low._data.astype(np.float32)
    return low


def widened(fn, *tensors):
    """``fn(*tensors)`` computed in float32 where the first tensor is 16-bit or narrower (a
    ``NARROW`` dtype), the result rounded once back to its dtype: the ``_widen16`` rule for a
    composite, which has no class to declare it on. Its backward runs in float32 through the
    casts and rounds once, as torch's fused kernels (silu, mish, elu) do. Example:
    ``widened(lambda x: x * sigmoid(x), x)`` is silu, for a bfloat16 x rounded once."""
    d = tensors[0]._dtype
    if d not in _HALF:
        return fn(*tensors)
    wide = [t.to(dt.float32) if type(t) is Tensor and t._dtype in _HALF else t for t in tensors]
    return fn(*wide).to(d)


# -- storage-only formats held as uint8 codes on a device ------------------------------------
def on_codes(t) -> bool:
    """True for a tensor of a storage-only format held as uint8 codes (on CUDA)."""
    return t._dtype.storage_only and type(t._data) is not np.ndarray


def _tensors(args):
    for a in args:
        if type(a) is Tensor or isinstance(a, Tensor):
            yield a
        elif type(a) in (list, tuple):
            yield from (x for x in a if isinstance(x, Tensor))


def codes_route(cls, args):
    """None where ``cls.apply(*args)`` may run as usual; else its result, computed on codes
    or on decoded values per ``cls._codes``, or a clear error."""
    found = [t for t in _tensors(args) if on_codes(t)]
    if not found:
        return None
    rule = cls._codes
    if callable(rule):
        rule = rule(args)
    d, op = found[0]._dtype, cls.__name__.lower() + "()"
    where = f"{d.name} tensors on {found[0].device}"
    if rule == "own":
        return None
    state = modes.state
    if state.enabled and any(t._rg for t in found):
        raise RuntimeError(f"{op}: autograd is not supported for {where} (they are held as "
                           "uint8 codes); cast first, e.g. x.float(), or use no_grad()")
    if any(t._dtype is not d for t in found):
        raise TypeError(f"{op}: expected one storage-only dtype, got "
                        f"{', '.join(sorted({t._dtype.name for t in found}))}")
    if rule == "move":
        return _retag(_plain(cls, args, state), d)
    if rule == "math":
        return _encode_outputs(cls.apply(*_decoded(args)), d)
    raise TypeError(f"{op}: not supported for {where} (CuPy has no {d.name} dtype: they are "
                    "held as uint8 codes, and this op would compute on the codes); cast first, "
                    f"e.g. x.float(), or compute on the CPU")


def _retag(out, d):
    if type(out) is tuple:
        return tuple(_retag(o, d) for o in out)
    if type(out) is Tensor and out._dtype is dt.uint8 and type(out._data) is not np.ndarray:
        out._dtype = d
    return out


def _decoded(args):
    def dec(a):
        if isinstance(a, Tensor) and on_codes(a):
            return _make(_codec.cast_array(a._data, dt.float32, a._dtype), dt.float32)
        if type(a) in (list, tuple):
            return type(a)(dec(x) for x in a)
        if type(a) is dt.dtype and a.storage_only:  # e.g. sum's result dtype: computed in f32
            return dt.float32
        return a
    return [dec(a) for a in args]


def _encode_outputs(out, d):
    if type(out) is tuple:
        return tuple(_encode_outputs(o, d) for o in out)
    if type(out) is Tensor and out._dtype is dt.float32:
        return _make(_codec.cast_array(out._data, d), d)
    return out
