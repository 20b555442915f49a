"""``torch.Tensor``'s surface that is about the tensor handle rather than math: in-place
shape changes (``squeeze_``, ``unsqueeze_``, ``t_``, ``transpose_``, ``swapaxes_``,
``as_strided_``), ``type_as``, ``new``, ``resize_``, layout and device queries,
predicates (``is_signed``, ``is_nonzero``, ...), Python-callable maps (``apply_``, ``map_``,
``map2_``; CPU only, like torch) and ``register_post_accumulate_grad_hook``.

An in-place shape change runs the out-of-place view op (recorded by autograd as usual) and
then moves the tensor handle onto the result: its array, ``grad_fn`` and version, as torch
changes a tensor's metadata in place.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..autograd import engine
from ..tensor import Tensor, _Handle, _make
from ._common import check_tensor
from .inplace import _check
from .movement import _sizes, as_strided, squeeze, swapaxes, t, transpose, unsqueeze

__all__ = ["layout", "strided"]


class layout:  # noqa: N801 - torch.layout's name
    """A memory layout (``tensorix.strided``, the only one: tensorix has no sparse or mkldnn
    tensors)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"tensorix.{self.name}"

    def __reduce__(self):
        return (_layout, (self.name,))


def _layout(name):
    return strided


strided = layout("strided")


# -- in-place shape changes -------------------------------------------------------------------
def _inplace_view(fn, name):
    def method(self, *args, **kwargs):
        check_tensor(self, name)
        _check(self, name)
        out = fn(self, *args, **kwargs)
        if out is not self:
            self._data = out._data
            if out.grad_fn is not None:
                self.grad_fn, self._output_nr, self._rg = out.grad_fn, out._output_nr, True
            self._version[0] += 1
        return self

    method.__name__ = name
    method.__doc__ = (f"In-place :func:`{fn.__name__}`: this tensor's shape and strides "
                      "change (its memory does not); recorded by autograd like the "
                      "out-of-place view.")
    return method


# -- handle methods -----------------------------------------------------------------------------
def _type_as(self, other):
    """This tensor converted to ``other``'s dtype (and device)."""
    check_tensor(other, "type_as", "other")
    return self.to(other.device).to(other.dtype)


def _new(self, *args, device=None):
    """Legacy ``Tensor.new``: ``x.new()`` is empty, ``x.new(2, 3)`` or ``x.new(Size)`` is an
    uninitialised tensor of that shape, ``x.new(data)`` a tensor of ``x``'s dtype holding the
    data (``x.new(tensor)`` shares its memory)."""
    if not args:
        return self.new_empty((0,), device=device)
    if len(args) == 1 and isinstance(args[0], Tensor):
        src = args[0]
        if src._dtype is not self._dtype:
            raise TypeError(f"new(): expected {self._dtype.name} tensor (got "
                            f"{src._dtype.name})")
        out = _make(src._data, src._dtype)
        out._version = src._version
        return out
    if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args) or (
            len(args) == 1 and type(args[0]).__name__ == "Size"):
        return self.new_empty(args[0] if len(args) == 1 and not isinstance(
            args[0], (int, np.integer)) else tuple(args), device=device)
    if len(args) == 1:
        return self.new_tensor(args[0], device=device)
    raise TypeError(f"new(): expected sizes or data, got {args!r}")


def _new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor with the given ``size`` and element ``stride`` (over fresh
    memory just large enough), of this tensor's dtype and device unless given."""
    size, stride = tuple(int(n) for n in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"new_empty_strided(): mismatch in length of strides and shape "
                           f"({len(stride)} and {len(size)})")
    need = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    flat = self.new_empty((need,), dtype=dtype, device=device)
    out = as_strided(flat, size, stride) if need else flat.reshape(size)
    out = _make(out._data, out._dtype)
    return out.requires_grad_() if requires_grad else out


def _resize_(self, *sizes):
    """Change the shape in place to ``sizes``, keeping the first elements (row-major) and
    leaving new ones uninitialised (zeros here); not for tensors that require grad."""
    if self._rg:
        raise RuntimeError("resize_(): cannot resize variables that require grad")
    shape = _sizes(sizes, "resize_")
    if any(n < 0 for n in shape):
        raise RuntimeError(f"resize_(): Trying to create tensor with negative dimension: "
                           f"{list(shape)}")
    n = int(np.prod(shape, dtype=np.int64))
    old = self._data.reshape(-1)
    if n <= old.size and self._data.flags.c_contiguous:
        self._data = old[:n].reshape(shape)  # same memory, as torch keeps its storage
    else:
        xp = self.xp
        fresh = xp.zeros(n, dtype=self._data.dtype)
        k = min(n, old.size)
        fresh[:k] = old[:k]
        self._data = fresh.reshape(shape)
    self._version[0] += 1
    return self


def _dim_order(self) -> tuple:
    """The dims from outermost to innermost in memory (by decreasing stride; ties keep their
    order), ``(0, 1, ..., n-1)`` for a contiguous tensor."""
    st = self.stride()
    return tuple(sorted(range(self.ndim), key=lambda d: -st[d]))


def _get_device(self) -> int:
    """-1 for a CPU tensor, else the GPU's index."""
    dev = self.device
    return -1 if dev.type == "cpu" else (dev.index or 0)


def _chalf(self, memory_format=None):
    raise RuntimeError("chalf(): tensorix has no complex32 (ComplexHalf) dtype; use "
                       ".cfloat() for complex64")


def _is_nonzero(self) -> bool:
    """The truth value of a one-element tensor (error for more or fewer elements)."""
    if self.numel() != 1:
        raise RuntimeError(f"is_nonzero(): Boolean value of Tensor with "
                           f"{'no values' if self.numel() == 0 else 'more than one value'} is "
                           "ambiguous")
    return bool(self.item())


def _is_signed(self) -> bool:
    d = self._dtype
    return d is not dt.bool and not (d.category == 1 and np.dtype(d.np).kind == "u")


def _check_map(self, op):
    """apply_/map_/map2_ run Python per element: CPU tensors outside autograd only."""
    check_tensor(self, op)
    if self._rg:
        raise RuntimeError(f"{op}(): Can't call {op}() on Variable that requires grad. Use "
                           f"var.detach().{op}() instead.")
    if self.device.type != "cpu":
        raise TypeError(f"{op}(): {op} is only implemented on CPU tensors")


def _no_grad_write(self, op, values):
    """Write a Python-computed result into ``self`` (no autograd, like torch)."""
    self._data[...] = np.asarray(values, dtype=object).astype(self._data.dtype)
    self._version[0] += 1
    return self


def _elements(t, shape):
    data = t._data if t.device.type == "cpu" else t.cpu()._data
    return np.broadcast_to(data, shape).ravel().tolist()


def _apply_(self, callable):  # noqa: A002 - torch's name
    """Replace each element ``v`` by ``callable(v)`` in place (Python numbers; CPU only)."""
    _check_map(self, "apply_")
    out = [callable(v) for v in _elements(self, self._data.shape)]
    return _no_grad_write(self, "apply_", np.reshape(np.array(out, dtype=object),
                                                     self._data.shape))


def _map_(self, tensor, callable):  # noqa: A002
    """``self[i] = callable(self[i], tensor[i])`` in place, ``tensor`` broadcast to ``self``
    and of the same dtype (CPU only)."""
    _check_map(self, "map_")
    check_tensor(tensor, "map_", "tensor")
    if tensor._dtype is not self._dtype:
        raise TypeError(f"map_(): expected {self._dtype.name} for 'other' (got "
                        f"{tensor._dtype.name})")
    shape = self._data.shape
    out = [callable(a, b) for a, b in zip(_elements(self, shape), _elements(tensor, shape))]
    return _no_grad_write(self, "map_", np.reshape(np.array(out, dtype=object), shape))


def _map2_(self, x, y, callable):  # noqa: A002
    """``self[i] = callable(self[i], x[i], y[i])`` in place (broadcast; CPU only)."""
    _check_map(self, "map2_")
    for arg, t_ in (("x", x), ("y", y)):
        check_tensor(t_, "map2_", arg)
        if t_._dtype is not self._dtype:
            raise TypeError(f"map2_(): expected {self._dtype.name} for '{arg}' (got "
                            f"{t_._dtype.name})")
    shape = self._data.shape
    out = [callable(a, b, c) for a, b, c in zip(_elements(self, shape), _elements(x, shape),
                                                _elements(y, shape))]
    return _no_grad_write(self, "map2_", np.reshape(np.array(out, dtype=object), shape))


def _register_post_accumulate_grad_hook(self, hook):
    """Call ``hook(tensor)`` after ``backward()`` has accumulated this leaf's ``.grad`` (the
    place for an optimizer step per parameter); returns a handle with ``remove()``."""
    if not self._rg:
        raise RuntimeError("register_post_accumulate_grad_hook(): cannot register a hook on "
                           "a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        raise RuntimeError("register_post_accumulate_grad_hook(): post accumulate grad hooks "
                           "cannot be registered on non-leaf tensors")
    engine.POST_ACCUMULATE[0] = True
    hooks = getattr(self, "_post_acc_hooks", None)
    if hooks is None:
        hooks = self._post_acc_hooks = []
    hooks.append(hook)
    return _Handle(hooks, hook)


def _methods():
    m = {
        "squeeze_": _inplace_view(squeeze, "squeeze_"),
        "unsqueeze_": _inplace_view(unsqueeze, "unsqueeze_"),
        "t_": _inplace_view(t, "t_"), "transpose_": _inplace_view(transpose, "transpose_"),
        "swapaxes_": _inplace_view(swapaxes, "swapaxes_"),
        "swapdims_": _inplace_view(swapaxes, "swapdims_"),
        "as_strided_": _inplace_view(as_strided, "as_strided_"),
        "type_as": _type_as, "new": _new,
        "get_device": _get_device, "chalf": _chalf, "is_nonzero": _is_nonzero,
        "is_signed": _is_signed, "is_same_size": lambda self, other: tuple(self.shape) == tuple(
            other.shape),
        "is_conj": lambda self: False, "is_neg": lambda self: False,
        "is_inference": lambda self: False,  # inference_mode does not mark tensors here
        "dense_dim": lambda self: self.ndim, "sparse_dim": lambda self: 0,
        "to_dense": lambda self, dtype=None, *, masked_grad=None: self if dtype is None else
        self.to(dtype),
        "apply_": _apply_, "map_": _map_, "map2_": _map2_,
        "register_post_accumulate_grad_hook": _register_post_accumulate_grad_hook,
        "new_empty_strided": _new_empty_strided,
        "resize_": _resize_, "resize_as_": lambda self, other: _resize_(self, tuple(
            other.shape)), "dim_order": _dim_order,
        "const_data_ptr": lambda self: self.data_ptr(),
        "output_nr": property(lambda self: self._output_nr,
                              doc="Which output of its grad_fn this tensor is (0 for leaves)."),
        "layout": property(lambda self: strided, doc="Always tensorix.strided."),
    }
    for name, test in (("is_cpu", lambda self: self.device.type == "cpu"),
                       ("is_meta", lambda self: False), ("is_sparse", lambda self: False),
                       ("is_sparse_csr", lambda self: False),
                       ("is_quantized", lambda self: False), ("is_nested", lambda self: False),
                       ("is_mkldnn", lambda self: False)):
        m[name] = property(test)
    return m


TENSOR_METHODS = _methods()
