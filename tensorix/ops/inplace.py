"""In-place ops, through one mechanism.

``x.op_(...)`` runs the out-of-place ``op`` and writes the result into ``x``'s memory, bumping
the version counter that ``x`` shares with its views (so a backward that saved ``x`` fails
clearly). Under autograd ``x`` then takes the new node as its ``grad_fn``; when ``x`` is a view,
its base is rebased too (PyTorch's CopySlices), so ``base.sum().backward()`` sees the write.

Rules, as in PyTorch: a leaf that requires grad may not be modified in place while grad mode is
on; the result dtype must be castable to ``x``'s dtype (same-kind); shapes must broadcast to
``x``'s shape without growing it.

Other views of the same base keep their old ``grad_fn`` until they are next used; then
``refresh_view`` (autograd/function.py) re-derives it from the rebased base, so they see the
write too.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..autograd.function import Function, refresh_view
from ..autograd.grad_mode import is_grad_enabled, modes
from ..tensor import Tensor, _make
from .movement import _strided_view

__all__: list = []


def _check(self, op):
    enabled = is_grad_enabled()
    if enabled and self._rg and self.grad_fn is None:
        raise RuntimeError(f"{op}(): a leaf Variable that requires grad is being used in an "
                           "in-place operation (wrap it in tensorix.no_grad() or use "
                           ".data / .detach())")
    if self._base is not None and enabled and self._base._rg and \
            self._base.grad_fn is None:
        raise RuntimeError(f"{op}(): a view of a leaf Variable that requires grad is being "
                           "used in an in-place operation")


_OVERLAP_MSG = ("{}(): unsupported operation: more than one element of the written-to tensor "
                "refers to a single memory location. Please clone() the tensor before "
                "performing the operation.")


def _check_overlap(self, op):
    """torch's error for a write into a tensor whose elements share memory (a dim of stride 0
    and size > 1, as ``expand`` makes), checked before anything is computed. Filling with one
    value is well defined there, so fill_ and zero_ pass, as in torch; setitem writes a window
    of ``self``, which may not overlap (torch checks the window)."""
    if op in ("fill_", "zero_", "setitem"):
        return
    if any(n > 1 and s == 0 for n, s in zip(self._data.shape, self._data.strides)):
        raise RuntimeError(_OVERLAP_MSG.format(op))


def _alias_old(t):
    """A new handle on t's current value and graph position (its data copied, since t's
    memory is about to be overwritten and the op's backward may need the old value)."""
    old = _make(t._data.copy(), t._dtype)
    old._rg, old.grad_fn, old._output_nr = t._rg, t.grad_fn, t._output_nr
    return old


def _graph_alias(t):
    """A handle on t's graph position sharing its memory (nothing reads its old value)."""
    alias = _make(t._data, t._dtype)
    alias._rg, alias.grad_fn, alias._output_nr = t._rg, t.grad_fn, t._output_nr
    return alias


def _write(self, result, op):
    if result._dtype is not self._dtype:
        if not dt.can_cast(result._dtype, self._dtype):
            raise RuntimeError(f"{op}(): result type {result._dtype.name} can't be cast to the "
                               f"desired output type {self._dtype.name}")
        result = result.to(self._dtype)
    if result._data.shape != self._data.shape:
        try:  # shape arithmetic on the host (np.broadcast_shapes serves any array module)
            shape = np.broadcast_shapes(result._data.shape, self._data.shape)
        except ValueError:
            shape = None
        if shape != self._data.shape:
            raise RuntimeError(f"{op}(): output with shape {list(self._data.shape)} doesn't "
                               f"match the broadcast shape {list(result._data.shape)}")
        result = result.expand(self._data.shape)
    try:
        self._data[...] = result._data
    except ValueError as e:  # NumPy's read-only broadcast views (expand) refuse any write
        if "read-only" not in str(e):
            raise
        raise RuntimeError(f"{op}(): cannot write into an expanded tensor (its elements share "
                           "memory); clone() it before writing") from None
    self._version[0] += 1
    return result


class CopySlices(Function):
    """``base`` with the window ``view_fn`` selects replaced by ``value``: the graph side of
    an in-place write to a view (PyTorch's CopySlices). The gradient is ``g`` with the window
    zeroed for ``base`` and ``g``'s window for ``value``; both are written with ops (a
    CopySlices of zeros and a strided view), so double backward works."""

    @staticmethod
    def forward(ctx, base, value, view_fn):
        ctx.view_fn = view_fn
        out = _make(base._data.copy(), base._dtype)
        view_fn(out)._data[...] = value._data
        return out

    @classmethod
    def name(cls) -> str:
        return "CopySlices"  # PyTorch's name for this node

    @staticmethod
    def backward(ctx, g):
        from .creation import zeros

        window = ctx.view_fn(g)
        empty = zeros(tuple(window.shape), dtype=g.dtype, device=g.device)
        return CopySlices.apply(g, empty, ctx.view_fn), window, None


def _view_chain(view, base):
    """A function replaying ``view``'s indexing from ``base`` (by strides, via as_strided)."""
    return _strided_view(view, base)


def _fresh_output(result, args):
    """A result that is an input (``copy_`` of a same-dtype tensor returns ``src`` itself) or a
    leaf gets its own node, so the written tensor's gradient flows to it."""
    if result._rg and (result.grad_fn is None or any(result is a for a in args)):
        from .movement import clone

        return clone(result)
    return result


def apply_inplace(self, fn, *args, op=None, **kwargs):
    """``self <- fn(self, *args, **kwargs)`` in place, with autograd and version bookkeeping."""
    op = op or getattr(fn, "__name__", "inplace") + "_"
    if not isinstance(self, Tensor):
        raise TypeError(f"{op}(): expected a Tensor, got {type(self).__name__}")
    _check(self, op)
    _check_overlap(self, op)
    state = modes.state
    record = state.enabled and (self._rg or any(isinstance(a, Tensor) and a._rg for a in args)
                                or (self._base is not None and self._base._rg))
    if not record:
        prev = state.enabled
        state.enabled = False
        try:
            _write(self, fn(self, *args, **kwargs), op)
        finally:
            state.enabled = prev
        return self
    if self._base is not None:
        refresh_view(self)
    result = _fresh_output(fn(_alias_old(self), *args, **kwargs), args)
    result = _write(self, result, op)
    if self._base is not None:
        base = self._base
        view_fn = _view_chain(self, base)
        new_base = CopySlices.apply(_graph_alias(base), result, view_fn)
        base.grad_fn, base._output_nr, base._rg = new_base.grad_fn, 0, True
        fresh = view_fn(base)
        self.grad_fn, self._output_nr, self._rg = fresh.grad_fn, fresh._output_nr, True
        self._base_fn = base.grad_fn
        return self
    self.grad_fn, self._output_nr, self._rg = result.grad_fn, result._output_nr, result._rg
    return self


def make(fn, name=None):
    """The in-place method ``name`` (default ``fn.__name__ + '_'``) for out-of-place ``fn``."""
    op = name or fn.__name__ + "_"

    def method(self, *args, **kwargs):
        return apply_inplace(self, fn, *args, op=op, **kwargs)

    method.__name__ = op
    method.__doc__ = f"In-place version of :func:`{fn.__name__}`."
    return method


def _fill(self, value):
    from .creation import full

    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"fill_(): only supports 0-dimension value tensor but got "
                               f"tensor with {value.ndim} dimensions")
        return value.to(self._dtype).expand(tuple(self.shape)) if is_grad_enabled() else \
            full(tuple(self.shape), value.item(), dtype=self._dtype, device=self.device)
    return full(tuple(self.shape), value, dtype=self._dtype, device=self.device)


def _zero(self):
    return _fill(self, 0)


def _copy(self, src, non_blocking=False):
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be a Tensor, not {type(src).__name__}")
    return src.to(device=self.device, dtype=self._dtype)


def _setitem_value(self, index, value):
    from .indexing import index_put_value

    return index_put_value(self, index, value)


def _setitem(self, index, value):
    apply_inplace(self, _setitem_value, index, value, op="setitem")


def _requires_write(name, fn):
    return make(fn, name)


def _methods():
    from .elementwise import add, div, mul, pow, sub

    m = {
        "add_": make(add), "sub_": make(sub), "mul_": make(mul), "div_": make(div),
        "pow_": make(pow), "zero_": make(_zero, "zero_"), "fill_": make(_fill, "fill_"),
        "copy_": make(_copy, "copy_"), "__setitem__": _setitem,
        "__iadd__": make(add, "add_"), "__isub__": make(sub, "sub_"),
        "__imul__": make(mul, "mul_"), "__itruediv__": make(div, "div_"),
        "__ipow__": make(pow, "pow_"),
    }
    return m


TENSOR_METHODS = _methods()
