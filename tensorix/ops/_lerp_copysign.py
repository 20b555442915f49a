"""lerp and copysign, the primitives (their public functions live in ops/elementwise.py, which
re-exports these classes): here with a float32 fast path each, one numba pass of
kernels/_jit_13pw.py (NumPy's lerp takes three passes, or a where over both formulas for a
tensor weight; its copysign does not vectorise), giving the same bits as the NumPy forms.

float32 lerp on NumPy arrays is torch's vectorised formula, bit for bit: a fused multiply-add,
``fma(w, end - start, start)`` where ``|w| < 0.5``, else ``fma(w - 1, end - start, end)``
(the kernel's fma instruction, or ``_one_pass.fma32`` on NumPy).
"""

from __future__ import annotations

import numpy as np

from .. import backend, kernels
from ..autograd.dispatch import kernel
from ..autograd.function import Function
from ..backend import quiet
from ..tensor import _make
from ._one_pass import example32, fast32, fma32, one_pass

__all__ = ["Lerp", "Copysign"]


class Lerp(Function):
    _kernels = {"forward32": (kernels.jit("lerp32", ("float32",), example32(3)),)}

    @classmethod
    def forward(cls, ctx, start, end, weight):
        ctx.save_for_backward(start, end, weight)
        s, e, w = start._data, end._data, weight._data
        xp = backend.array_module(s)
        # the kernel at any size: the NumPy form of the fused rounding costs more
        if fast32(s, e, min_size=1) and (fast32(s, w, min_size=1) or type(w) is np.ndarray
                                         and w.ndim == 0 and w.dtype == np.float32) \
                and (fused := kernel(cls, "forward32", start.device)) is not None:
            if w.ndim == 0:  # one weight: the kernel reads its one element
                return one_pass(fused, (s, e), (w.reshape(1),))
            return one_pass(fused, (s, e, w))
        if type(s) is np.ndarray and s.dtype == e.dtype == w.dtype == np.float32:
            small = np.abs(w) < 0.5
            with quiet():
                return fma32(np.where(small, w, w - np.float32(1)), e - s, np.where(small, s, e))
        with quiet():  # PyTorch's two-sided form: exact at both ends
            diff = e - s
            if (type(w) is np.ndarray and w.shape == () and s.shape == e.shape
                    and s.dtype == e.dtype == w.dtype):  # (a GPU would sync on the test)
                # one weight: only its branch (the where below computes both), same bits
                if abs(w) < 0.5:
                    diff *= w
                    return xp.add(s, diff, out=diff)
                return xp.subtract(e, xp.multiply(diff, 1 - w, out=diff), out=diff)
            return xp.where(xp.abs(w) < 0.5, s + w * diff, e - diff * (1 - w))

    @staticmethod
    def backward(ctx, g):
        start, end, weight = ctx.saved_tensors
        ns, ne, nw = ctx.needs_input_grad
        return (g * (1 - weight).conj() if ns else None, g * weight.conj() if ne else None,
                g * (end - start).conj() if nw else None)


class Copysign(Function):
    _kernels = {"forward32": (kernels.jit("copysign32", ("float32",), example32(2)),)}

    @classmethod
    def forward(cls, ctx, a, b):
        x, y = a._data, b._data
        if fast32(x, y) and (fused := kernel(cls, "forward32", a.device)) is not None:
            out = _make(one_pass(fused, (x, y)))
        else:
            out = _make(a.xp.copysign(x, y))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        ga = g * (out / a).where(a != 0, 0) if na else None
        return ga, (g.new_zeros(tuple(g.shape)) if nb else None)
