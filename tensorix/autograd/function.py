"""The one Function base: every op, built-in or user-defined, is a subclass.

A subclass writes ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)`` as static
methods, side by side. ``forward`` receives the call's arguments (Tensors stay Tensors, with
recording off) and returns raw backend arrays or Tensors; ``backward`` receives Tensor
gradients and returns one gradient per forward argument (``None`` for non-tensors), written
with tensorix ops so that it is itself differentiable.

The instance made by ``apply`` is both the ``ctx`` and the graph node (``grad_fn``). Its
``next_edges`` hold four fields per forward argument, ``target, slot, shape, dtype``: the
producer node (or the leaf Tensor) the gradient goes to (None where no gradient goes), and the
input's shape and dtype, which the engine uses to unbroadcast and cast the gradient - no op's
backward does that itself. The fields sit in one flat list rather than a tuple per argument: a
graph stays alive from forward to backward, and every container in it is one more object for
Python's cyclic garbage collector to scan, which measurably slows building long graphs.

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

import numpy as np

from .. import dtypes as _dt
from ..backend import array_module, data_ptr, get_device
from ..tensor import Tensor, _Handle, _make, _wrap
from .dispatch import route, widen16
from .grad_mode import modes
from .graph import _Packed, pack_saved

__all__ = ["Function", "once_differentiable", "FunctionCtx", "binary"]

_seq = itertools.count(1)
_ndarray = np.ndarray
_by_np = _dt._BY_NP
_new_tensor = Tensor.__new__
_PYTHON_VALUES = (int, float, bool, str)
EDGE = 4  # fields per argument in next_edges: target, slot, shape, dtype
_NO_EDGE = (None, 0, None, None)
_NO_EDGES = tuple(_NO_EDGE * n for n in range(4))
_FREED_MSG = ("{}: trying to backward through the graph a second time (or to directly access "
              "saved tensors after they have already been freed). Saved intermediate values of "
              "the graph are freed when you call .backward() or autograd.grad(). Specify "
              "retain_graph=True if you need to backward through the graph a second time or "
              "if you need to access saved tensors after calling backward.")


class Function:
    """Base class of ops and graph nodes (see the module docstring)."""

    # What apply sets on every call lives in slots (a slot store is several times cheaper than
    # an instance-dict one); the rest are class defaults that a node overrides only when used.
    # User attributes set on ctx go to the instance __dict__ every subclass has.
    __slots__ = ("next_edges", "_saved", "_seq")
    _out_meta: tuple | None = None  # per output (shape, dtype, device); multi-output nodes only
    _hooks: dict | None = None  # tensor hooks on this node's outputs: {output_nr: [fn]}
    _pre_hooks: list | None = None
    _post_hooks: list | None = None
    _trace = None
    _non_diff: frozenset = frozenset()
    materialize_grads = True
    _differentiable = True
    _view = False  # a view op: its output shares memory and the version counter with input 0
    # the dispatch rules (autograd/dispatch.py): how the op runs on storage codes, how a GEMM
    # policy computes it (None: not a GEMM), whether 16-bit inputs compute in float32, its
    # kernels per device
    _codes = None
    _gemm = None
    _widen16 = False
    _kernels: dict | None = None
    _eager = None
    _writes: tuple = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("_widen16"):  # declared here: apply casts 16-bit inputs around it
            cls.apply = classmethod(widen16(Function.apply.__func__, cls._widen16))

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(f"{type(ctx).__name__}: backward is not implemented")

    # -- ctx API ---------------------------------------------------------------------------
    def save_for_backward(self, *tensors):
        """Keep Tensors for backward; modifying one in place afterwards makes backward fail."""
        saved = []
        for t in tensors:
            if type(t) is Tensor or t is not None and isinstance(t, Tensor):
                saved.append((t, t._version[0], -1))  # (tensor, version, output slot or -1)
            elif t is None:
                saved.append(None)
            else:
                raise TypeError(f"{self.name()}: save_for_backward can only save Tensors or "
                                f"None, got {type(t).__name__} at position {len(saved)}")
        self._saved = saved

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward``, checked against in-place changes."""
        if self._saved is None:
            raise RuntimeError(_FREED_MSG.format(self.name()))
        return tuple([None if item is None else self._unpack(i, *item)
                      for i, item in enumerate(self._saved)])

    def _unpack(self, i, t, version, output_nr):
        if type(t) is _Packed:  # kept by a pack hook: its unpack gives the tensor back
            t = t.unpack(t.obj)
            if not isinstance(t, Tensor):
                raise TypeError(f"{self.name()}: the unpack hook of saved_tensors_hooks must "
                                f"return a Tensor, got {type(t).__name__}")
        elif t._version[0] != version:
            what = f"output {output_nr} of {self.name()}" if output_nr >= 0 else \
                f"saved tensor {i} of {self.name()}"
            raise RuntimeError(
                f"{self.name()}: one of the variables needed for gradient computation has been "
                f"modified by an inplace operation: [{t._dtype.name} tensor of shape "
                f"{list(t._data.shape)}], which is {what}, is at version {t._version[0]}; "
                f"expected version {version} instead. Hint: clone() it before modifying it in "
                "place, or use the out-of-place op.")
        if output_nr < 0:
            return t
        # a saved output is kept without its grad_fn (which is this node: a reference cycle)
        # and re-attached here, so double backward flows through this node again
        out = _make(t._data, t._dtype)
        out._version = t._version
        out._rg, out.grad_fn, out._output_nr = True, self, output_nr
        return out

    @property
    def needs_input_grad(self) -> tuple:
        """Per forward argument, whether its gradient is needed (also readable in forward)."""
        return tuple([target is not None for target in self.next_edges[::EDGE]])

    def mark_non_differentiable(self, *outputs):
        """Outputs that never require grad (indices, masks); their gradient is zeros/None."""
        self._non_diff = frozenset(id(o) for o in outputs)

    def set_materialize_grads(self, value: bool):
        """With False, backward may receive None for outputs that got no gradient."""
        self.materialize_grads = bool(value)

    # -- node API ------------------------------------------------------------------------------
    @classmethod
    def name(cls) -> str:
        """The node's readable name, e.g. ``MulBackward``."""
        return cls.__name__ + "Backward"

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    @property
    def next_functions(self) -> tuple:
        """``(node, output_nr)`` per forward argument, like PyTorch: a leaf shows as an
        ``AccumulateGrad`` whose ``variable`` is the leaf; ``(None, 0)`` where no grad flows."""
        edges = self.next_edges
        return tuple((AccumulateGrad(t) if type(t) is Tensor else t, nr if t is not None else 0)
                     for t, nr in zip(edges[::EDGE], edges[1::EDGE]))

    @property
    def metadata(self) -> dict:
        """A dict for user annotations on this node."""
        return self.__dict__.setdefault("_metadata", {})

    def register_prehook(self, fn):
        """``fn(grad_outputs) -> tuple | None`` runs before this node's backward; a returned
        tuple replaces the gradients."""
        if self._pre_hooks is None:
            self._pre_hooks = []
        self._pre_hooks.append(fn)
        return _Handle(self._pre_hooks, fn)

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs) -> tuple | None`` runs after this node's backward; a
        returned tuple replaces the gradients sent on to the inputs."""
        if self._post_hooks is None:
            self._post_hooks = []
        self._post_hooks.append(fn)
        return _Handle(self._post_hooks, fn)

    def _register_tensor_hook(self, output_nr, fn, last=False):
        """A hook on the gradient of output ``output_nr`` (Tensor.register_hook on a non-leaf).
        retain_grad's hook goes ``last``, so .grad sees what the user hooks made of it."""
        if self._hooks is None:
            self._hooks = {}
        hooks = self._hooks.setdefault(output_nr, [])
        if last:
            hooks.append(fn)
        else:
            n = sum(1 for h in hooks if getattr(h, "_retains_grad", False))
            hooks.insert(len(hooks) - n, fn)
        return _Handle(hooks, fn)

    def release(self):
        """Free what forward saved with save_for_backward (the engine calls this unless
        retain_graph). Other ctx attributes stay, as in PyTorch: keep tensors that backward
        needs in save_for_backward, which also checks them for in-place changes."""
        self._saved = None

    @classmethod
    def apply(cls, *args):
        """Run forward and, where grad mode is on and an input requires grad, record a node.

        Arguments are positional: backward returns one gradient per argument. The rules of
        ``cls`` (storage codes, GEMM policy) and the tracer are consulted only where this
        thread has a hook set or storage codes exist (``autograd/dispatch.py``): one flag read
        here. This is the per-op hot path, so it is written flat: one scan of the arguments
        that builds the edges as it goes, the forward with recording off, and the rest of the
        node bookkeeping only when something requires grad.
        """
        state = modes.state  # this thread's modes: one thread-local lookup per op
        if state.hooked:
            return route(cls, args, state)
        ctx = cls()
        ctx._saved = ()  # None once released
        enabled = state.enabled
        record = False
        n = len(args)
        if enabled and cls._differentiable:
            if n == 2 and type(a := args[0]) is Tensor and type(b := args[1]) is Tensor \
                    and a._rg and b._rg and a._base is None and b._base is None:
                # the commonest case, a binary op on two non-view tensors that require grad:
                # the loop's result as one list display (~60 ns, 4% of a small op, less)
                record = True
                edges = [a.grad_fn or a, a._output_nr, a._data.shape, a._dtype,
                         b.grad_fn or b, b._output_nr, b._data.shape, b._dtype]
            else:
                record, edges = _edges(args)
        # needs_input_grad reads it; the no-edge lists for 1-3 arguments are made once
        ctx.next_edges = edges if record else (_NO_EDGES[n] if n < 4 else _NO_EDGE * n)
        # forward is called with its arguments spelled out for one or two of them: Python runs
        # such a call in the same interpreter frame loop, while a ``*args`` call builds a new
        # tuple and goes through C (~0.1-0.3 us, a tenth of a small op)
        try:
            if enabled:  # forward never records, whatever it calls
                state.enabled = False
                try:
                    raw = cls.forward(ctx, args[0], args[1]) if n == 2 else \
                        cls.forward(ctx, args[0]) if n == 1 else cls.forward(ctx, *args)
                finally:
                    state.enabled = enabled
            else:  # under no_grad nothing to switch off or back (the per-op cost torch has)
                raw = cls.forward(ctx, args[0], args[1]) if n == 2 else \
                    cls.forward(ctx, args[0]) if n == 1 else cls.forward(ctx, *args)
        except ValueError as e:  # an array library's error; torch's type where it has one
            raise _as_torch_error(cls, args, e) from None
        fresh = type(raw) is _ndarray and not cls._view
        if fresh:  # the common case, wrapped inline (tensor._init's stores, without the call)
            out = _new_tensor(Tensor)
            out._data = raw
            out._dtype = _by_np[raw.dtype]
            out._rg = out._retains_grad = False
            out.grad = out.grad_fn = out._base = out._hooks = None
            out._output_nr = 0
            out._version = [0]
        else:
            out = _outputs(cls, raw, args)
        if not record:
            return out
        ctx._seq = next(_seq)
        if state.anomaly:
            ctx._trace = "".join(traceback.format_stack()[:-1])
        if type(out) is tuple:
            return _attach_many(ctx, out, state)
        # a fresh output did not exist when forward ran, so forward cannot have marked it
        if out._dtype.category >= 2 and (fresh or id(out) not in ctx._non_diff):
            out._rg, out.grad_fn = True, ctx
        if ctx._saved and (not fresh or state.saved_hooks is not None):
            _finish_saved(ctx, (out,), state)
        return out

FunctionCtx = Function  # the ctx passed to forward/backward is the node itself


def binary(cls, a, b):
    """``cls.apply(a, b)`` for a binary primitive that declares an ``_eager`` rule, on two
    Tensors of one dtype and array type (its wrapper has promoted them): the shared fast path
    of the arithmetic operators (add, sub, mul, div call it).

    Where ``apply`` would record no node (grad mode off, or neither input requires grad) and
    this thread has no dispatch hook set (tracer, GEMM policy, storage codes: ``hooked``), the
    op's ``_eager`` rule (autograd/dispatch.py), its forward on the two raw arrays, runs alone
    and the result is wrapped as ``apply`` wraps a forward's: the same result, without the
    ctx, edges and ``*args`` call that ``apply`` makes and then drops (about 0.3 us, a quarter
    of a tiny ``a + b`` under no_grad). Anything else is ``apply``, unchanged.

    Example: ``binary(Add, a, b)`` is ``Add.apply(a, b)``.
    """
    state = modes.state
    if state.enabled and (a._rg or b._rg) or state.hooked:  # the recording case first
        return _apply(cls, a, b)
    try:
        raw = cls._eager(a._data, b._data)
    except ValueError as e:  # as in apply: torch's error for shapes that do not broadcast
        raise _as_torch_error(cls, (a, b), e) from None
    if type(raw) is not _ndarray:  # a NumPy scalar (from 0-d inputs), a CuPy array
        return _wrap(raw)
    out = _new_tensor(Tensor)  # apply's inline wrap (tensor._init's stores, without the call)
    out._data = raw
    out._dtype = _by_np[raw.dtype]
    out._rg = out._retains_grad = False
    out.grad = out.grad_fn = out._base = out._hooks = None
    out._output_nr = 0
    out._version = [0]
    return out


_apply = Function.apply.__func__  # binary calls it unbound: no method object per op


def _edges(args):
    """(whether any argument requires grad, the flat next_edges of ``args``)."""
    record, edges = False, []
    for a in args:
        if type(a) is Tensor and a._rg:
            record = True
            if a._base is not None and a._base.grad_fn is not a._base_fn:
                refresh_view(a)
            edges += (a.grad_fn or a, a._output_nr, a._data.shape, a._dtype)
        else:
            edges += _NO_EDGE
    return record, edges



def _as_torch_error(cls, args, err):
    """A ValueError of the array library, as the error torch raises: code written for torch
    catches RuntimeError for shapes that do not broadcast. Translated here, in the one dispatch
    point, so every op that broadcasts gets torch's error at no cost to calls that succeed."""
    msg = str(err)
    if "broadcast" not in msg:
        return err
    shapes = [a._data.shape for a in args if isinstance(a, Tensor)]
    return RuntimeError(f"{cls.__name__.lower()}(): {_broadcast_mismatch(shapes) or msg}")


def _broadcast_mismatch(shapes):
    """torch's wording for the first pair of ``shapes`` that do not broadcast (None if all
    do): dims are counted from the left of the broadcast result."""
    nd = max((len(s) for s in shapes), default=0)
    for i, a in enumerate(shapes):
        for b in shapes[i + 1:]:
            for k in range(1, min(len(a), len(b)) + 1):
                if a[-k] != b[-k] and 1 not in (a[-k], b[-k]):
                    return (f"The size of tensor a ({a[-k]}) must match the size of tensor b "
                            f"({b[-k]}) at non-singleton dimension {nd - k}")
    return None


class AccumulateGrad:
    """What ``next_functions`` shows for a leaf: the node that accumulates into ``.grad``."""

    __slots__ = ("variable",)
    next_functions = ()

    def __init__(self, variable):
        self.variable = variable

    @staticmethod
    def name() -> str:
        return "AccumulateGrad"

    def __repr__(self):
        return f"<AccumulateGrad object at {hex(id(self))}>"


def _outputs(cls, raw, args):
    if type(raw) is tuple:
        return tuple(_output(r, args) for r in raw)
    out = _output(raw, args)
    if cls._view:
        _mark_view(out, args[0])
    return out


def _output(raw, args):
    """Wrap a forward result; a Tensor made inside forward is kept (so ctx may save it as an
    output), one of the inputs is aliased instead, never given a grad_fn; None and Python
    values pass through."""
    if type(raw) is Tensor:
        for a in args:
            if a is raw:
                return _wrap(raw)
        return raw
    if raw is None or type(raw) in _PYTHON_VALUES:  # exact types: np.float64 is a float
        return raw
    return _wrap(raw)


def _attach_many(ctx, outs, state):
    ctx._out_meta = tuple((o._data.shape, o._dtype, get_device(o._data))
                          if type(o) is Tensor else None for o in outs)
    for i, o in enumerate(outs):
        if type(o) is Tensor and o._dtype.category >= 2 and id(o) not in ctx._non_diff:
            o._rg, o.grad_fn, o._output_nr = True, ctx, i
    if ctx._saved:
        _finish_saved(ctx, outs, state)
    return outs


def _finish_saved(ctx, outs, state):
    """Store saved outputs without their grad_fn (see Function._unpack), then hand what was
    saved to the pack hook of autograd.graph.saved_tensors_hooks, if one is on."""
    saved = ctx._saved
    for i, item in enumerate(saved):
        if item is None:
            continue
        for nr, o in enumerate(outs):
            if item[0] is o and o.grad_fn is ctx:
                alias = _make(o._data, o._dtype)
                alias._version = o._version
                saved[i] = (alias, item[1], nr)
    hooks = state.saved_hooks
    if type(hooks) is tuple:
        pack_saved(ctx, hooks)


def _mark_view(out, src):
    if array_module(out._data).may_share_memory(out._data, src._data):
        base = src._base if src._base is not None else src
        out._version, out._base, out._base_fn = src._version, base, base.grad_fn


def refresh_view(t):
    """Re-derive a view's grad_fn from its base when the base's graph changed since it was
    made (an in-place write to the base or to another view of it), as PyTorch does; without
    this the view's gradient would silently skip the write."""
    base = t._base
    if base.grad_fn is t._base_fn or not modes.state.enabled:
        return
    fresh = base.as_strided(*view_geometry(t, base))  # an op, reached as a Tensor method
    t.grad_fn, t._output_nr, t._rg = fresh.grad_fn, fresh._output_nr, fresh._rg
    t._base_fn = base.grad_fn


def view_geometry(view, base) -> tuple:
    """``(size, stride, storage_offset)`` in elements of ``view``'s window over the contiguous
    ``base``: what ``as_strided`` needs to rebuild the view (in-place on views replays it)."""
    if not base._data.flags.c_contiguous:
        raise RuntimeError("in-place on a view: the base tensor must be contiguous to rebase "
                           "its gradient; call .contiguous() on it first")
    item = base._dtype.itemsize
    offset = (data_ptr(view._data) - data_ptr(base._data)) // item
    stride = tuple(s // item for s in view._data.strides)
    if any(s < 0 for s in stride):
        raise RuntimeError("in-place on a view with negative strides is not supported")
    return view._data.shape, stride, offset


def once_differentiable(backward):
    """Mark a backward as not differentiable: it runs with recording off, and when the graph
    is being built (``create_graph=True``) its results are routed through a node whose own
    backward raises, so a double backward fails clearly instead of returning wrong zeros."""

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        state = modes.state
        create = state.enabled
        state.enabled = False
        try:
            out = backward(ctx, *grads)
        finally:
            state.enabled = create
        if not create:
            return out
        if type(out) is not tuple:
            return _poison(out, ctx)
        return tuple(_poison(o, ctx) for o in out)

    return wrapper


class _OnceDifferentiable(Function):
    """Identity whose backward refuses: marks the output of a once_differentiable backward."""

    @staticmethod
    def forward(ctx, g, name):
        ctx.op_name = name
        return g._data

    @staticmethod
    def backward(ctx, gg):
        raise RuntimeError(f"{ctx.op_name}: trying to differentiate twice a function that was "
                           "marked with @once_differentiable (its backward is not itself "
                           "differentiable)")

    @classmethod
    def name(cls) -> str:
        return "OnceDifferentiableBackward"


def _poison(g, ctx):
    if type(g) is not Tensor or g._dtype.category < 2:
        return g
    # a fresh leaf alias that requires grad, so the node is recorded; the caller's tensor (it
    # may be a saved input) is left untouched
    alias = _make(g._data, g._dtype)
    alias._rg = True
    out = _OnceDifferentiable.apply(alias, ctx.name())
    # the true dependencies of g (the once-differentiable node's inputs) become edges too, so
    # that autograd.grad with respect to them reaches this node and raises, not "unused"
    node = out.grad_fn
    node.next_edges = list(node.next_edges) + list(ctx.next_edges)
    return out
