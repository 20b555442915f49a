"""Comparisons, where and sign: the selection primitives.

Comparisons return bool tensors and are not differentiable; ``where`` routes the gradient to
the branch each element came from.
"""

from __future__ import annotations

from .. import backend
from .. import dtypes as dt
from ..autograd.function import Function
from ..tensor import Tensor
from ._common import check_tensor, promote

__all__ = ["eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
           "less_equal", "not_equal", "where", "sign", "sgn"]


def _xp(t):
    return backend.array_module(t._data)


class _Compare(Function):
    _differentiable = False
    fn = "equal"

    @classmethod
    def forward(cls, ctx, a, b):
        return getattr(_xp(a), cls.fn)(a._data, b._data)


def _compare(fn_name, public):
    cls = type(fn_name.title().replace("_", ""), (_Compare,), {"fn": fn_name})

    def op(input, other) -> Tensor:
        a, b = promote(input, other, public)
        return cls.apply(a, b)

    op.__name__ = public
    op.__doc__ = f"Elementwise ``{public}`` comparison with broadcasting; returns a bool tensor."
    return cls, op


Eq, eq = _compare("equal", "eq")
Ne, ne = _compare("not_equal", "ne")
Lt, lt = _compare("less", "lt")
Le, le = _compare("less_equal", "le")
Gt, gt = _compare("greater", "gt")
Ge, ge = _compare("greater_equal", "ge")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


class Where(Function):
    @staticmethod
    def forward(ctx, cond, a, b):
        ctx.cond = cond
        return _xp(a).where(cond._data, a._data, b._data)

    @staticmethod
    def backward(ctx, g):
        na, nb = ctx.needs_input_grad[1:]
        zero = g.new_zeros(())
        ga = where(ctx.cond, g, zero) if na else None
        gb = where(ctx.cond, zero, g) if nb else None
        return None, ga, gb


def where(condition, input=None, other=None) -> Tensor:
    """``input`` where ``condition`` holds, else ``other`` (broadcast together).
    With only ``condition``, the same as ``nonzero(condition, as_tuple=True)``.

    Example: ``tensorix.where(x > 0, x, 0.0)``.
    """
    check_tensor(condition, "where", "condition")
    if input is None and other is None:
        from .indexing import nonzero

        return nonzero(condition, as_tuple=True)
    if condition._dtype is not dt.bool:
        if condition._dtype is dt.uint8:
            condition = condition.to(dt.bool)
        else:
            raise RuntimeError(f"where(): expected condition to be a bool tensor, got "
                               f"{condition._dtype.name}")
    a, b = promote(input, other, "where")
    return Where.apply(condition, a, b)


class Sign(Function):
    @staticmethod
    def forward(ctx, a):
        xp = _xp(a)
        if a._dtype.is_complex:
            mag = xp.abs(a._data)
            return xp.where(mag == 0, 0, a._data / xp.where(mag == 0, 1, mag)).astype(
                a._data.dtype)
        if a._dtype is dt.bool:
            return a._data.copy()
        return xp.sign(a._data)

    @staticmethod
    def backward(ctx, g):
        return g * 0


def sign(input) -> Tensor:
    """-1, 0 or 1 by the sign of each element (zero gradient)."""
    check_tensor(input, "sign")
    if input._dtype.is_complex:
        raise RuntimeError("sign(): unsupported for complex tensors; use sgn()")
    return Sign.apply(input)


def sgn(input) -> Tensor:
    """``sign`` for reals; ``z / |z|`` for complex."""
    return Sign.apply(check_tensor(input, "sgn"))


def _new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    from .creation import zeros

    return zeros(*size, dtype=dtype or self.dtype, device=device or self.device,
                 requires_grad=requires_grad)


def _new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    from .creation import ones

    return ones(*size, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


def _new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    from .creation import full

    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


def _new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    from .creation import tensor

    return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)


def _new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    from .creation import empty

    return empty(*size, dtype=dtype or self.dtype, device=device or self.device,
                 requires_grad=requires_grad)


TENSOR_METHODS = {
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "greater": gt,
    "greater_equal": ge, "less": lt, "less_equal": le, "not_equal": ne,
    "__eq__": eq, "__ne__": ne, "__lt__": lt, "__le__": le, "__gt__": gt, "__ge__": ge,
    "where": lambda self, condition, other: where(condition, self, other),
    "sign": sign, "sgn": sgn, "new_zeros": _new_zeros, "new_ones": _new_ones,
    "new_full": _new_full, "new_tensor": _new_tensor, "new_empty": _new_empty,
}
