"""Arithmetic composites of the torch API: addcmul/addcdiv, float_power_, positive,
conj_physical and resolve_conj/resolve_neg (the number-level ops, gcd/lcm and ldexp/frexp/
nextafter, are in number.py).

Each is a composition of primitives, so its gradients (and higher ones) come from those;
addcmul and addcdiv also have a primitive for their float32 case (three C-contiguous operands
of one shape), one numba pass of kernels/_jit_13pw.py where the composite takes two or three
(2.5x torch's time), in torch's vectorised order: ``fma(value * t1, t2, input)`` (one
rounding: the kernel's fma instruction, or ``_one_pass.fma32`` on NumPy) and
``input + (value * t1) / t2``. The composite (other dtypes, broadcast or strided operands)
rounds the product and the sum apart.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import kernels
from ..autograd.dispatch import kernel
from ..autograd.function import Function
from ..backend import quiet
from ..tensor import Tensor
from ._common import check_tensor
from ._one_pass import example32, fast32, fma32, one_pass
from .elementwise import float_power
from .inplace import apply_inplace, make
from .unary import conj

__all__ = ["addcmul", "addcdiv", "positive", "conj_physical", "resolve_conj", "resolve_neg"]


def _three(op, input, tensor1, tensor2):
    for arg, t in (("input", input), ("tensor1", tensor1), ("tensor2", tensor2)):
        check_tensor(t, op, arg)
    return dt.result_type(input, tensor1, tensor2)


class _AddC(Function):
    """``input + value * t1 (*|/) t2`` on C-contiguous float32 NumPy operands of one shape:
    the kernel's one pass, or ``numpy_form``, with the same bits."""

    _kernels: dict = {}

    @classmethod
    def forward(cls, ctx, x, t1, t2, value):
        ctx.save_for_backward(t1, t2)
        ctx.value = value
        v = np.float32(value)
        fused = kernel(cls, "forward32", x.device)
        if fused is None:
            with quiet():
                return cls.numpy_form(x._data, t1._data, t2._data, v)
        return one_pass(fused, (x._data, t1._data, t2._data), (v,))


class Addcmul(_AddC):
    _kernels = {"forward32": (kernels.jit("addcmul32", ("float32",), example32(
        3, np.float32(1))),)}

    @staticmethod
    def numpy_form(x, t1, t2, v):
        return fma32(v * t1, t2, x)

    @staticmethod
    def backward(ctx, g):
        t1, t2 = ctx.saved_tensors
        n, n1, n2 = ctx.needs_input_grad[:3]
        v = ctx.value
        return (g if n else None, g * t2 * v if n1 else None, g * t1 * v if n2 else None,
                None)


class Addcdiv(_AddC):
    _kernels = {"forward32": (kernels.jit("addcdiv32", ("float32",), example32(
        3, np.float32(1))),)}

    @staticmethod
    def numpy_form(x, t1, t2, v):
        return x + v * t1 / t2

    @staticmethod
    def backward(ctx, g):
        t1, t2 = ctx.saved_tensors
        n, n1, n2 = ctx.needs_input_grad[:3]
        v = ctx.value
        return (g if n else None, g * v / t2 if n1 else None,
                -g * v * t1 / (t2 * t2) if n2 else None, None)


def _fast(cls, input, tensor1, tensor2, value):
    """``cls.apply(...)`` where the primitive serves (see _AddC), else None."""
    # any size (the kernel, or the NumPy fma: torch's bits either way)
    if fast32(input._data, tensor1._data, tensor2._data, min_size=1):
        return cls.apply(input, tensor1, tensor2, float(value))
    return None


def addcmul(input, tensor1, tensor2, *, value=1) -> Tensor:
    """``input + value * tensor1 * tensor2`` (all three broadcast; the result takes their
    promoted dtype, and an integral result truncates ``value`` as PyTorch does).

    Example: ``tensorix.addcmul(tensorix.zeros(3), tensorix.ones(3), tensorix.ones(3),
    value=2)`` is ``[2., 2., 2.]``.
    """
    d = _three("addcmul", input, tensor1, tensor2)
    if d.category < 2:
        value = int(value)
    fast = _fast(Addcmul, input, tensor1, tensor2, value)
    if fast is not None:
        return fast
    return input + (tensor1 if value == 1 else value * tensor1) * tensor2  # torch's order


def addcdiv(input, tensor1, tensor2, *, value=1) -> Tensor:
    """``input + value * tensor1 / tensor2`` (broadcast, promoted); ``tensor1`` and
    ``tensor2`` may not both be integral (PyTorch removed that integer division).

    Example: ``tensorix.addcdiv(x, a, b, value=0.5)``.
    """
    _three("addcdiv", input, tensor1, tensor2)
    if tensor1._dtype.category < 2 and tensor2._dtype.category < 2:
        raise RuntimeError("addcdiv(): Integer division with addcdiv is no longer supported; "
                           "use (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype)"
                           " for the historic integer behaviour, or pass floating tensors")
    fast = _fast(Addcdiv, input, tensor1, tensor2, value)
    if fast is not None:
        return fast
    return input + (tensor1 if value == 1 else value * tensor1) / tensor2  # torch's order


def positive(input) -> Tensor:
    """``+input``: the tensor itself (bool tensors are refused, as in PyTorch)."""
    check_tensor(input, "positive")
    if input._dtype is dt.bool:
        raise RuntimeError("positive(): The `+` operator, on a bool tensor is not supported.")
    return input


def conj_physical(input) -> Tensor:
    """The complex conjugate, materialised (tensorix has no lazy conjugate bit, so this is
    :func:`conj`); real tensors come back as they are."""
    check_tensor(input, "conj_physical")
    return conj(input)


def resolve_conj(input) -> Tensor:
    """``input`` itself: tensorix conjugates eagerly, so there is no conjugate bit to
    resolve (PyTorch returns ``input`` too when the bit is not set)."""
    return check_tensor(input, "resolve_conj")


def resolve_neg(input) -> Tensor:
    """``input`` itself: tensorix has no lazy negative bit (see :func:`resolve_conj`)."""
    return check_tensor(input, "resolve_neg")


def _float_power_(self, exponent):
    check_tensor(self, "float_power_")
    if self._dtype not in (dt.float64, dt.complex128):
        want = "ComplexDouble" if self._dtype.is_complex or (
            isinstance(exponent, Tensor) and exponent._dtype.is_complex) else "Double"
        raise RuntimeError(f"float_power_(): the base given to float_power_ has dtype "
                           f"{self._dtype.name} but the operation's result requires dtype "
                           f"{want}")
    return apply_inplace(self, float_power, exponent, op="float_power_")


def _methods():
    m = {"addcmul": addcmul, "addcdiv": addcdiv, "positive": positive,
         "conj_physical": conj_physical, "resolve_conj": resolve_conj,
         "resolve_neg": resolve_neg, "float_power_": _float_power_}
    for fn in (addcmul, addcdiv, conj_physical):
        m[fn.__name__ + "_"] = make(fn)
    return m


TENSOR_METHODS = _methods()
