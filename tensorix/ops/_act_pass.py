"""One-pass primitives for the activations whose composites made several passes: hardswish
(four: add, clip, multiply, divide; 3.6x torch's CPU time at 1M float32) and the ELU family,
elu / selu / celu (an expm1 pass, two wheres and scalings; 2.2x). ops/activation.py's public
functions call them (it is full).

Each forward is one pass over the input: numba's kernel (``kernels/_cpu_jit.py``) where it
builds, else the NumPy form with the same float32 operations in the same order, so the same
bits. The float32 ELU runs ``_math32.expm1_32`` (2 ulp) on its negative side, in torch's
formula: ``x * scale`` for x > 0, else ``expm1(x * input_scale) * (alpha * scale)``.
Backwards are tensorix ops on the saved input (so ``tensorix.compile`` records them, and double
backward works), with torch's derivative formulas.
"""

from __future__ import annotations

import numpy as np

from .. import _threads, kernels
from ..autograd.dispatch import kernel
from ..autograd.function import Function
from ..backend import quiet
from .pointwise import where

__all__ = ["Hardswish", "Elu"]


def _one_pass(fused, x, *params):
    """``fused(out, x, *params)`` on the flat parts of a new array like ``x`` (C order), split
    over the pool from ``CHEAP`` elements (these are a few operations per element)."""
    x = np.require(x, requirements="C")  # (ascontiguousarray makes 0-d 1-d)
    return _threads.elementwise(lambda o, v: fused(o.reshape(-1), v.reshape(-1), *params),
                                np.empty(x.shape, x.dtype), x, min_part=_threads.CHEAP)


def _example32(*params):
    return lambda: (np.empty(1, np.float32), np.ones(1, np.float32)) + tuple(
        np.float32(p) for p in params)


class Hardswish(Function):
    """``x * clip(x + 3, 0, 6) / 6`` (torch's order of operations; nan propagates)."""

    _widen16 = True  # torch's CPU kernel: float32 math, rounded once
    _kernels = {"forward": (kernels.jit("hardswish", ("float32", "float64"),
                                        _example32(0, 3, 6)),)}

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        x = a._data
        t = x.dtype.type
        fused = kernel(Hardswish, "forward", a.device, a._dtype)
        if fused is not None and x.size:
            return _one_pass(fused, x, t(0), t(3), t(6))
        with quiet():  # -inf * 0 is nan, quietly (as torch)
            c = x + t(3)
            a.xp.clip(c, t(0), t(6), out=c)
            c *= x
            c /= t(6)
        return c

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        # torch 2.13: 0 up to -3, x / 3 + 1/2 on (-3, 3), 1 from 3 on (and at nan)
        return g * where(a <= -3, 0.0, where(a < 3, a / 3 + 0.5, 1.0))


class Elu(Function):
    """``x * scale`` where x > 0, else ``expm1(x * input_scale) * (alpha * scale)`` (torch's
    ELU kernel, with its coefficients rounded to the input's dtype as torch's ``opmath``:
    elu is (alpha, 1, 1), selu its constants, celu (alpha, 1, 1 / alpha))."""

    _widen16 = True  # torch's CPU kernel: float32 math, rounded once
    _kernels = {"forward32": (kernels.jit("elu32", ("float32",), _example32(1, 1, 1)),)}

    @staticmethod
    def forward(ctx, a, alpha, scale, input_scale):
        ctx.save_for_backward(a)
        ctx.coef = (alpha, scale, input_scale)
        x = a._data
        t = x.dtype.type
        pos, neg, ipt = t(scale), t(alpha) * t(scale), t(input_scale)
        fused = kernel(Elu, "forward32", a.device, a._dtype)
        if fused is not None and x.size:
            return _one_pass(fused, x, pos, neg, ipt)
        with quiet():
            v = x * ipt
            e = kernels.float32_math("expm1_32", v) if type(v) is np.ndarray and \
                v.dtype == np.float32 else a.xp.expm1(v)
            e *= neg
            return a.xp.where(x > 0, x * pos, e)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        alpha, scale, ipt = ctx.coef
        # torch: g * scale for x > 0, else g * input_scale * alpha * scale * exp(x input_scale)
        # (the inner where keeps exp finite on the unused side: no inf * 0 in the gradient)
        neg = (where(a > 0, 0.0, a) * ipt).exp() * (ipt * alpha * scale)
        return g * where(a > 0, scale, neg), None, None, None
