"""One-pass primitives for the activations whose composites made several passes over a large
float32 array, and the helpers through which ops/activation.py's primitives reach their numba
kernels (``kernels/_jit_13act.py``). activation.py's public functions call them (it is full).

* sigmoid (moved here from activation.py): float32 in one pass, ``_act32.sigmoid32`` (3 ulp),
  where the formula ``where(x >= 0, 1 / (1 + e), e / (1 + e))`` took seven NumPy passes (7x
  torch's time at 1M elements); float64 keeps that formula (``_sigmoid_kernel``);
* hardsigmoid and softsign: a select pass in torch's order of operations, so torch's bits
  (they were three passes: 5.4x and 2.3x torch);
* logsigmoid and logit: one float32 pass each (``_act32``; 4 and 3 ulp) for composites of
  four to six passes;
* glu: one pass over the two halves (the composite made views, a sigmoid and a product: 18x).

Every fast path is the float32 CPU case of a contiguous array; the NumPy fallback (numba
absent, ``TENSORIX_JIT=0``) runs the same ``_act32`` body on NumPy blocks, or the same select
in NumPy ufuncs: the same bits. Backwards are tensorix ops on the saved tensors, with torch's
derivative formulas, so ``tensorix.compile``'s joint graphs record them and double backward
works.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _threads, backend, kernels
from .. import dtypes as dt
from ..autograd.dispatch import kernel, widened
from ..autograd.function import Function
from ..backend import quiet
from ..kernels import _act32
from ..tensor import _make
from ._one_pass import example32, one_pass
from .pointwise import where

__all__ = ["Sigmoid", "Hardsigmoid", "Softsign", "LogSigmoid", "Logit", "Glu", "select32",
           "float32_act", "jit32", "cpu32"]


def jit32(name, *params):
    """Declare the float32 kernel ``name`` of ``_jit_13act.py`` taking ``k(out, x, *params)``
    on 1-d arrays (float32 scalars ``params`` in its example)."""
    return kernels.jit(name, ("float32",), example32(1, *(np.float32(p) for p in params)))


def cpu32(cls, role, x):
    """``cls``'s declared kernel for ``role`` when ``x`` is a float32 NumPy array (the one case
    the kernels serve), else None; the cheap test first (it runs on every call)."""
    if type(x) is np.ndarray and x.dtype == np.float32:
        return kernel(cls, role, backend.cpu, dt.float32)
    return None


def select32(fused, x, *params):
    """``fused(out, x, *params)`` (a select kernel: about a nanosecond an element, memory
    bound) over a new array like ``x``: ``_one_pass.one_pass`` on ``x`` made C-contiguous,
    split over the pool only from ``CHEAP`` elements a part."""
    # np.require, not ascontiguousarray, which makes a 0-d array 1-d
    return one_pass(fused, (np.require(x, requirements="C"),), params)


def float32_act(compiled, name, x, *params):
    """``_act32.<name>(x, *params)`` on a float32 NumPy array, as a new array: ``compiled``
    (its numba loop) in one pass split over the pool from ``COSTLY`` elements a part, or where
    it is None the same body on NumPy blocks: the same bits either way, for any split."""
    out = np.empty(x.shape, np.float32)
    if compiled is None:
        body = getattr(_act32, name)

        def block(o, v):
            with np.errstate(all="ignore"):  # per block: pool threads have their own errstate
                o[...] = body(v, *params)
        return _threads.blockwise(block, out, x)
    x = np.require(x, requirements="C")
    return _threads.elementwise(lambda o, v: compiled(o.reshape(-1), v.reshape(-1), *params),
                                out, x)


# -- sigmoid ----------------------------------------------------------------------------------
def _sigmoid_kernel(out, x):
    """out = where(x >= 0, 1 / (1 + e), e / (1 + e)) with e = exp(-|x|): Sigmoid's GPU
    formula op for op, in cache-sized blocks (``_threads.blockwise``), so the same bits."""
    e = np.abs(x)
    np.negative(e, out=e)
    np.exp(e, out=e)
    d = e + 1
    np.divide(e, d, out=out)
    np.divide(1, d, out=d)
    # where(x >= 0, d, out) as a blend of bits: a masked copy (np.copyto(where=)) mispredicts a
    # branch per element on inputs of mixed sign, 4-5 ns an element against 0.1 for this
    u = np.uint32 if out.itemsize == 4 else np.uint64
    m = np.greater_equal(x, 0, out=np.empty(x.shape, u))  # 1 where x >= 0 (nan: 0)
    np.negative(m, out=m)  # all bits set where x >= 0
    ob, db = out.view(u), d.view(u)
    np.bitwise_xor(db, ob, out=db)
    np.bitwise_and(db, m, out=db)
    np.bitwise_xor(ob, db, out=ob)  # out ^ ((d ^ out) & m): d where m, out elsewhere


def sigmoid_array(x):
    """The logistic function of a float32 or float64 array (NumPy or CuPy), without overflow:
    float32 NumPy ``_act32.sigmoid32`` in one pass, float64 the blocked formula, a GPU's the
    formula in ``xp`` ops."""
    if type(x) is not np.ndarray:
        xp = backend.array_module(x)
        with quiet():
            e = xp.exp(-xp.abs(x))
            return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))
    if x.dtype == np.float32:
        return float32_act(kernel(Sigmoid, "forward32", backend.cpu, dt.float32), "sigmoid32",
                           x)
    with quiet():
        return _threads.blockwise(_sigmoid_kernel, np.empty(x.shape, x.dtype), x)


class Sigmoid(Function):
    # torch's recipe, measured: the forward in float32, rounded once; the backward from the
    # 16-bit output in float32 for bfloat16, in float16 ops for float16 (its Half kernel). Not
    # ``_widen16``, which cannot tell the two apart.
    _kernels = {"forward32": (jit32("act_sigmoid32"),)}

    @staticmethod
    def forward(ctx, a):
        x = a._data
        if x.dtype.itemsize < 4:  # the formula's float32 bits, rounded once: torch's, measured
            with quiet():
                wide = x.astype(np.float32)
                out = _threads.blockwise(_sigmoid_kernel, np.empty_like(wide), wide) \
                    if type(x) is np.ndarray else sigmoid_array(wide)
        else:
            out = sigmoid_array(x)
        out = _make(out.astype(x.dtype, copy=False))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        if out._dtype is dt.float16:
            return g * (1 - out) * out
        return widened(lambda g, y: g * (y * (1 - y)), g, out)


# -- exact selects ----------------------------------------------------------------------------
class Hardsigmoid(Function):
    """``min(max(x + 3, 0), 6) / 6`` (torch's order: its bits, nan propagating)."""

    _widen16 = True  # torch's CPU kernel: float32 math, rounded once
    _kernels = {"forward32": (jit32("hardsigmoid32"),)}

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        x = a._data
        fused = cpu32(Hardsigmoid, "forward32", x)
        if fused is not None:
            return select32(fused, x)
        t = x.dtype.type
        with quiet():  # maximum/minimum: nan propagates
            return a.xp.minimum(a.xp.maximum(x + t(3), t(0)), t(6)) / t(6)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        # torch: g / 6 on (-3, 3), else 0 (nan: 0)
        return where((a > -3).logical_and(a < 3), g / 6, 0)


class Softsign(Function):
    """``x / (|x| + 1)`` (torch's formula: its bits; nan at +-inf, as inf / inf)."""

    _widen16 = True
    _kernels = {"forward32": (jit32("softsign32"),)}

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        x = a._data
        fused = cpu32(Softsign, "forward32", x)
        if fused is not None:
            return select32(fused, x)
        with quiet():
            return x / (a.xp.abs(x) + x.dtype.type(1))

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        d = a.abs() + 1
        return g / (d * d)  # 1 / (1 + |x|)^2


# -- float32 one-pass math --------------------------------------------------------------------
class LogSigmoid(Function):
    """``log(sigmoid(x)) = -softplus(-x)``, float32 in one pass (``_act32.logsigmoid32``),
    other dtypes by the stable formula ``min(x, 0) - log1p(exp(-|x|))``."""

    _widen16 = True  # torch's CPU kernel: float32 math, rounded once
    _kernels = {"forward32": (jit32("act_logsigmoid32"),)}

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        x = a._data
        if type(x) is np.ndarray and x.dtype == np.float32:
            return float32_act(kernel(LogSigmoid, "forward32", backend.cpu, dt.float32),
                               "logsigmoid32", x)
        xp = a.xp
        with quiet():
            return xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * Sigmoid.apply(-a)  # torch: g (1 - sigmoid(x))


class Logit(Function):
    """``log(z) - log1p(-z)`` for ``z`` = the input clamped to [lo, hi] (logit's eps; -inf,
    inf without): float32 in one pass (``_act32.logit32``)."""

    _widen16 = True  # torch's CPU kernel: float32 math, rounded once
    _kernels = {"forward32": (jit32("act_logit32", 0, 1),)}

    @staticmethod
    def forward(ctx, a, lo, hi):
        ctx.save_for_backward(a)
        ctx.bounds = lo, hi
        x = a._data
        if type(x) is np.ndarray and x.dtype == np.float32:
            return float32_act(kernel(Logit, "forward32", backend.cpu, dt.float32), "logit32",
                               x, np.float32(lo), np.float32(hi))
        xp = a.xp
        with quiet():
            z = xp.clip(x, lo, hi) if math.isfinite(lo) else x
            return xp.log(z) - xp.log1p(-z)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        lo, hi = ctx.bounds
        d = g / (a * (1 - a))  # torch's: 1 / (x (1 - x)); 0 outside [eps, 1 - eps]
        if math.isfinite(lo):
            d = where((a < lo).logical_or(a > hi), 0, d)
        return d, None, None


class Glu(Function):
    """``a * sigmoid(b)`` for the halves ``a, b`` of the input along ``dim``: float32 in one
    pass over both halves (``_act32.glu32``), other dtypes by the formula."""

    _widen16 = True  # torch's CPU kernel: float32 math, rounded once
    _kernels = {"forward32": (kernels.jit("act_glu32", ("float32",), lambda: (
        np.empty((1, 1, 1), np.float32), np.ones((1, 2, 1), np.float32))),)}

    @staticmethod
    def forward(ctx, x, dim):
        ctx.save_for_backward(x)
        ctx.dim = dim
        d = x._data
        shape = d.shape
        outer, inner = math.prod(shape[:dim]), math.prod(shape[dim + 1:])
        half = shape[dim] // 2
        out_shape = shape[:dim] + (half,) + shape[dim + 1:]
        if type(d) is np.ndarray and d.dtype == np.float32:
            # (outer, 2, half * inner): the two halves of each outer row, contiguous
            x3 = np.ascontiguousarray(d).reshape(outer, 2, half * inner)
            out = np.empty((outer, 1, half * inner), np.float32)
            fused = kernel(Glu, "forward32", backend.cpu, dt.float32)
            if fused is None:
                def block(o, v):
                    with np.errstate(all="ignore"):
                        o[...] = _act32.glu32(v[:, 0:1], v[:, 1:2])
                fn = block
            else:
                fn = fused
            return _threads.elementwise(fn, out, x3).reshape(out_shape)
        x3 = d.reshape(outer, 2, half * inner)
        with quiet():
            return (x3[:, 0] * sigmoid_array(x3[:, 1])).reshape(out_shape)

    @staticmethod
    def backward(ctx, g):
        from .shape import cat

        (x,) = ctx.saved_tensors
        a, b = x.chunk(2, ctx.dim)
        s = Sigmoid.apply(b)
        ga = g * s
        return cat([ga, ga * a * (1 - s)], ctx.dim), None  # torch: g s, g a s (1 - s)
