"""Parameter and Buffer markers.

A Parameter *is* a plain :class:`tensorix.Tensor` (leaf, ``requires_grad=True``) recorded in a
weak set, not a subclass: the op hot path tests ``type(x) is Tensor``, and a subclass would
either slow every op or fall off it. ``isinstance(t, Parameter)`` consults the set, so user
code reads exactly as in PyTorch.
"""

from __future__ import annotations

import weakref

from ..tensor import TENSOR_KINDS, Tensor

__all__ = ["Parameter", "Buffer", "is_parameter"]

# id -> weak reference; not a WeakSet, whose lookups would call Tensor.__eq__ (elementwise)
_PARAMS: dict = {}


def _mark(t):
    key = id(t)
    _PARAMS[key] = weakref.ref(t, lambda _, key=key: _PARAMS.pop(key, None))


def is_parameter(t) -> bool:
    ref = _PARAMS.get(id(t))
    return ref is not None and ref() is t


# deepcopy and pickle keep a parameter a parameter
TENSOR_KINDS["tensorix.nn.parameter.Parameter"] = (is_parameter, "tensorix.nn.parameter:_mark")


class _ParameterMeta(type):
    def __instancecheck__(cls, obj):
        return is_parameter(obj)


class Parameter(metaclass=_ParameterMeta):
    """Mark a tensor as a module parameter: ``nn.Parameter(tensorix.zeros(3))``.

    Returns a leaf Tensor sharing ``data``'s memory with ``requires_grad`` set (default True).
    """

    def __new__(cls, data=None, requires_grad: bool = True):
        if data is None:
            from ..ops.creation import empty

            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): expected a Tensor, got {type(data).__name__}")
        t = data.detach()
        t._version = [0]
        if requires_grad:
            t.requires_grad_(True)
        _mark(t)
        return t


class Buffer:
    """Mark a tensor as a buffer when assigned to a module attribute (like ``torch.nn.Buffer``):
    ``self.running_mean = nn.Buffer(tensorix.zeros(3))``."""

    def __init__(self, data, persistent: bool = True):
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer(): expected a Tensor, got {type(data).__name__}")
        self.data, self.persistent = data, persistent
