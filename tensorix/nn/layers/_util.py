"""Shared helpers of the layer files: parameter creation with ``device``/``dtype`` and the
tuple normalisers (``_pair`` etc.) PyTorch's modules use."""

from __future__ import annotations

import collections.abc
import itertools

from ...ops.creation import empty
from ..parameter import Parameter


def new_param(*shape, device=None, dtype=None, requires_grad=True):
    """An uninitialised Parameter (reset_parameters fills it)."""
    return Parameter(empty(*shape, device=device, dtype=dtype), requires_grad)


def optional_param(enabled, *shape, device=None, dtype=None):
    """``new_param(*shape)`` when ``enabled``, else None: ``register_parameter(name, ...)``
    then keeps the slot as PyTorch does for ``bias=False`` / ``affine=False``."""
    return new_param(*shape, device=device, dtype=dtype) if enabled else None


def _ntuple(n):
    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(itertools.repeat(x, n))

    return parse


single, pair, triple = _ntuple(1), _ntuple(2), _ntuple(3)


def inplace_repr(inplace, first=False):
    """PyTorch's ``inplace`` suffix of extra_repr."""
    if not inplace:
        return ""
    return "inplace=True" if first else ", inplace=True"
