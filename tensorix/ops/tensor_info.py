"""torch's top-level questions about a tensor (``torch.is_tensor(x)``, ``torch.numel(x)``, ...)
and its functional spellings of a few Tensor methods (``torch.detach(x)``, ``torch.fill(x, v)``):
each is a one-line call of the Tensor method, which holds the behaviour.

Example::

    >>> tensorix.is_floating_point(tensorix.ones(2)), tensorix.numel(tensorix.ones(2, 3))
    (True, 6)
"""

from __future__ import annotations

from ..tensor import Tensor
from ._common import check_tensor

__all__ = ["is_tensor", "is_floating_point", "is_complex", "is_nonzero", "is_same_size",
           "is_signed", "is_conj", "is_neg", "is_inference", "numel", "detach", "fill"]
TENSOR_METHODS: dict = {}  # the methods themselves live on Tensor


def is_tensor(obj) -> bool:
    """Whether ``obj`` is a tensorix Tensor (Parameters included)."""
    return isinstance(obj, Tensor)


def is_floating_point(input) -> bool:
    """Whether ``input``'s dtype is a floating-point type (float16/bfloat16/float32/64 and the
    8/6/4-bit float formats)."""
    return check_tensor(input, "is_floating_point").is_floating_point()


def is_complex(input) -> bool:
    """Whether ``input``'s dtype is complex."""
    return check_tensor(input, "is_complex").is_complex()


def is_nonzero(input) -> bool:
    """Whether the single element of a one-element ``input`` is nonzero (RuntimeError for
    more or fewer elements)."""
    return check_tensor(input, "is_nonzero").is_nonzero()


def is_same_size(input, other) -> bool:
    """Whether ``input`` and ``other`` have the same shape."""
    check_tensor(other, "is_same_size", "other")
    return check_tensor(input, "is_same_size").is_same_size(other)


def is_signed(input) -> bool:
    """Whether ``input``'s dtype can hold negative values."""
    return check_tensor(input, "is_signed").is_signed()


def is_conj(input) -> bool:
    """Whether ``input`` is a lazily conjugated view (always False: tensorix conjugates
    eagerly)."""
    return check_tensor(input, "is_conj").is_conj()


def is_neg(input) -> bool:
    """Whether ``input`` is a lazily negated view (always False in tensorix)."""
    return check_tensor(input, "is_neg").is_neg()


def is_inference(input) -> bool:
    """Whether ``input`` was created under ``inference_mode``."""
    return check_tensor(input, "is_inference").is_inference()


def numel(input) -> int:
    """The number of elements of ``input`` (the product of its shape)."""
    return check_tensor(input, "numel").numel()


def detach(input) -> Tensor:
    """``input.detach()``: the same data, cut from the autograd graph."""
    return check_tensor(input, "detach").detach()


def fill(input, value) -> Tensor:
    """A tensor shaped like ``input`` filled with ``value`` (``torch.fill``; out of place)."""
    return check_tensor(input, "fill").clone().detach().fill_(value)
