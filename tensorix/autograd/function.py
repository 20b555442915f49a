"""The one Function base: every op, built-in or user-defined, is a subclass.

A subclass writes ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)`` as static
methods, side by side. ``forward`` receives the call's arguments (Tensors stay Tensors, with
recording off) and returns raw backend arrays or Tensors; ``backward`` receives Tensor
gradients and returns one gradient per forward argument (``None`` for non-tensors), written
with tensorix ops so that it is itself differentiable.

The instance made by ``apply`` is both the ``ctx`` and the graph node (``grad_fn``).
Gradients are unbroadcast and cast to their input's dtype by the engine, not by each op.

Example (a custom op)::

    class Cube(tensorix.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.data ** 3          # raw arrays or Tensors
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    y = Cube.apply(tensorix.randn(3, requires_grad=True))
"""

from __future__ import annotations

import functools
import itertools
import traceback

from ..backend import array_module
from ..tensor import Tensor, _wrap
from .grad_mode import state

__all__ = ["Function", "once_differentiable", "FunctionCtx"]

_seq = itertools.count()


class Function:
    """Base class of ops and graph nodes (see the module docstring)."""

    # graph bookkeeping; user attributes set on ctx live in the instance __dict__
    next_edges: tuple = ()
    needs_input_grad: tuple = ()
    _in_meta: tuple = ()
    _out_meta: tuple | None = None
    _saved: tuple = ()
    _hooks: dict | None = None
    _freed = False
    _trace = None
    _non_diff: frozenset = frozenset()
    materialize_grads = True
    _differentiable = True
    _view = False  # a view op: its output shares memory and the version counter with input 0

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(f"{type(ctx).__name__}: backward is not implemented")

    # -- ctx API ---------------------------------------------------------------------------
    def save_for_backward(self, *tensors):
        """Keep Tensors for backward; modifying one in place afterwards makes backward fail."""
        self._saved = tuple(None if t is None else (t, t._version[0]) for t in tensors)

    @property
    def saved_tensors(self):
        if self._freed:
            raise RuntimeError(
                f"{self.name()}: trying to backward through the graph a second time (or to "
                "access saved tensors after they were freed). Pass retain_graph=True to "
                "backward() or autograd.grad() the first time.")
        out = []
        for i, item in enumerate(self._saved):
            if item is None:
                out.append(None)
                continue
            t, v = item
            if t._version[0] != v:
                raise RuntimeError(
                    f"{self.name()}: one of the variables needed for gradient computation has "
                    f"been modified by an inplace operation: saved tensor {i} of shape "
                    f"{tuple(t.shape)} is at version {t._version[0]}; expected version {v}. "
                    "Hint: clone() it before modifying it in place.")
            out.append(t)
        return tuple(out)

    def mark_non_differentiable(self, *outputs):
        self._non_diff = frozenset(id(o) for o in outputs)

    def set_materialize_grads(self, value: bool):
        self.materialize_grads = bool(value)

    # -- node API ------------------------------------------------------------------------------
    @classmethod
    def name(cls):
        return cls.__name__ + "Backward"

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    @property
    def next_functions(self):
        """(node or AccumulateGrad-like leaf tensor, output index) per input, like PyTorch."""
        return tuple((None, 0) if e is None else e for e in self.next_edges)

    def register_hook(self, output_nr, fn):
        """Call ``fn(grad)`` on the gradient of output ``output_nr`` before it is used."""
        if self._hooks is None:
            self._hooks = {}
        self._hooks.setdefault(output_nr, []).append(fn)

    def release(self):
        self._saved = ()
        self._freed = True
        for k in [k for k in self.__dict__ if not k.startswith("_")]:
            if isinstance(self.__dict__[k], Tensor):
                del self.__dict__[k]

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward and, where grad mode is on and an input requires grad, record a node."""
        ctx = cls()
        record = False
        if state.enabled and cls._differentiable:
            for a in args:
                if type(a) is Tensor and a._rg:
                    record = True
                    break
        if record:
            ctx.needs_input_grad = tuple(type(a) is Tensor and a._rg for a in args)
        prev = state.enabled
        state.enabled = False
        try:
            raw = cls.forward(ctx, *args, **kwargs)
        finally:
            state.enabled = prev
        if type(raw) is tuple:
            outs = tuple(_output(r, args) for r in raw)
        else:
            outs = None
            out = _output(raw, args)
            if cls._view:
                _mark_view(out, args[0])
        if not record:
            return out if outs is None else outs
        ctx.next_edges = tuple(_edge(a) if type(a) is Tensor and a._rg else None for a in args)
        ctx._in_meta = tuple((a._data.shape, a._dtype) if type(a) is Tensor else None
                             for a in args)
        ctx._seq = next(_seq)
        if state.anomaly:
            ctx._trace = "".join(traceback.format_stack()[:-1])
        if outs is None:
            if out._dtype.category >= 2 and id(out) not in ctx._non_diff:
                out._rg, out.grad_fn, out._output_nr = True, ctx, 0
            return out
        ctx._out_meta = tuple((o._data.shape, o._dtype) for o in outs)
        for i, o in enumerate(outs):
            if o._dtype.category >= 2 and id(o) not in ctx._non_diff:
                o._rg, o.grad_fn, o._output_nr = True, ctx, i
        return outs


FunctionCtx = Function  # the ctx passed to forward/backward is the node itself


def _output(raw, args):
    """Wrap a forward result; a Tensor made inside forward is kept (so ctx may save it as an
    output), one of the inputs is aliased instead, never given a grad_fn."""
    if type(raw) is Tensor:
        for a in args:
            if a is raw:
                return _wrap(raw)
        return raw
    return _wrap(raw)


def _mark_view(out, src):
    if array_module(out._data).may_share_memory(out._data, src._data):
        out._version = src._version
        out._base = src._base if src._base is not None else src


def _edge(t):
    """Where a gradient for ``t`` goes: its producer node and output slot, or the leaf."""
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    return (t, 0)


def once_differentiable(backward):
    """Mark a backward as not differentiable: it runs with recording off, and a double
    backward through it raises instead of silently returning zeros."""

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        create = state.enabled
        prev = state.enabled
        state.enabled = False
        try:
            out = backward(ctx, *grads)
        finally:
            state.enabled = prev
        if create:
            outs = out if isinstance(out, tuple) else (out,)
            outs = tuple(_poison(o, ctx) if isinstance(o, Tensor) else o for o in outs)
            out = outs if isinstance(out, tuple) else outs[0]
        return out

    return wrapper


class _OnceDifferentiableError(Function):
    @staticmethod
    def forward(ctx, g, name):
        ctx.op_name = name
        return g._data

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError(f"{ctx.op_name}: this backward is marked once_differentiable and "
                           "cannot be differentiated again (no double backward)")


def _poison(t, ctx):
    prev = state.enabled
    state.enabled = True
    try:
        return _OnceDifferentiableError.apply(t.requires_grad_() if t.is_leaf else t, ctx.name())
    finally:
        state.enabled = prev
