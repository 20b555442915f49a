"""Capture: run a function once on example inputs with a :class:`Tracer` in the dispatcher's
tracer slot (``modes.state.tracer``), so that every primitive ``Function.apply`` runs becomes
one node. The trace is concrete, as torch's ``make_fx``: Python control flow is taken as it
went for the example inputs, which is why :mod:`tensorix.fx.guards` keys a trace by the
inputs' shapes, dtypes and devices, and why a read of tensor *data* by Python (``.item()``,
``bool(t)``, ``.numpy()``), an op whose output shape depends on data, or an in-place write the
dispatcher did not see is recorded as a graph break (``Tracer.breaks``): such a trace is only
valid for those inputs' values, and ``tensorix.compile`` runs that function eagerly instead.

A tensor an op reads that no traced op made is a module's parameter or buffer (a ``get_attr``
node, read live when the graph runs) or else a ``constant`` node holding the tensor itself
(so a closed-over tensor that an optimizer updates in place is also read live).
"""

from __future__ import annotations

from ..autograd.grad_mode import modes
from ..tensor import Tensor
from .graph import Graph
from .symint import SymInt

__all__ = ["Tracer", "GraphBreak", "trace", "trace_backward", "tensor_meta", "flat_tensors",
           "DATA_DEPENDENT"]

# primitives whose output *shape* depends on input values: a trace cannot stand for other
# values, so recording one is a graph break (matched by class name: they live in several
# op families, and the names are the dispatcher's)
DATA_DEPENDENT = frozenset({"Nonzero", "MaskedSelect", "Unique", "UniqueConsecutive",
                            "BooleanIndex", "IndexBool", "Bincount"})


class GraphBreak(RuntimeError):
    """Raised by a strict trace (``tensorix.export``) where Python depends on tensor data."""


def tensor_meta(t) -> dict:
    """``shape``, ``dtype``, ``device`` of a Tensor (empty for other values)."""
    if not isinstance(t, Tensor):
        return {}
    return {"shape": tuple(t._data.shape), "dtype": t._dtype, "device": t.device}


class Tracer:
    """The object the dispatcher reports to: ``record(cls, args, out)`` per primitive and
    ``read(tensor, what)`` where Python reads a traced tensor's data.

    ``attrs`` maps ``id(tensor)`` to a ``get_attr`` path (a module's parameters and buffers);
    ``strict`` makes a graph break raise :class:`GraphBreak` at once. ``symbolic`` makes
    ``Tensor.shape`` (and ``size``, ``numel``, ``len``) of traced tensors answer
    :class:`~tensorix.fx.symint.SymInt` s, whose decisions are listed in ``guards`` as
    ``(expr, outcome)`` (tensorix.export).
    """

    sizes = None  # Tensor.shape asks this when set (symbolic traces)

    def __init__(self, attrs: dict | None = None, strict: bool = False,
                 symbolic: bool = False, resumable: bool = False):
        self.guards: list[tuple] = []
        # resumable (tensorix.compile): a data read or an effect (backward(), an optimizer's
        # step) ends a piece of the graph instead of breaking it; each is listed here as
        # (kind, last node before it, payload), see tensorix._compile.segments
        self.boundaries: list | None = [] if resumable else None
        if symbolic:
            self.sizes = self._symbolic_sizes
        self.graph = Graph()
        self.attrs = attrs or {}
        self.strict = strict
        self.breaks: list[str] = []
        self._env: dict[int, tuple] = {}  # id(tensor) -> (node, array, version)
        self._keep: list = []  # the traced tensors stay alive, so their ids stay unique
        self._grads: dict = {}  # id(leaf) -> (leaf, its .grad when first seen)
        self._arrays: dict = {}  # id(array) -> the entry of the first tensor bound to it
        self._data_nodes: dict = {}  # node -> its "data" node (the raw array)
        self._written: dict = {}  # id(tensor) -> (tensor, its data before a traced op wrote it)

    # -- bookkeeping ---------------------------------------------------------------------
    def bind(self, t: Tensor, node) -> None:
        entry = (node, t._data, t._version[0])
        self._env[id(t)] = entry
        self._arrays.setdefault(id(t._data), entry)
        self._keep.append(t)
        if t.grad_fn is None and t._rg:  # a leaf: .grad written during the trace is a break
            self._grads[id(t)] = (t, t.grad)

    def check_side_effects(self) -> None:
        """A break for each leaf whose ``.grad`` the traced code wrote (``.backward()``):
        the engine's accumulation into .grad is not an op, so a graph would not redo it
        (unless it was a recorded effect), and for a parameter or closed-over tensor changed
        in place behind the dispatcher's back that no recorded effect explains."""
        self._refresh("the trace")
        if self.boundaries and any(b[0] == "effect" for b in self.boundaries):
            return  # .grad is written by the recorded backward(), replayed on every call
        for t, grad in self._grads.values():
            if t.grad is not grad:
                self.graph_break(f"{self._env[id(t)][0].name}.grad was written during the "
                                 "trace (.backward() or an optimizer); trace the gradients "
                                 "with tensorix.fx.joint_trace, or compile the loss and call "
                                 ".backward() outside")
                return

    def node_of(self, t: Tensor):
        """The node standing for tensor ``t``, made a get_attr/constant on first sight."""
        hit = self._env.get(id(t))
        if hit is not None:
            node, data, version = hit
            if t._data is data and t._version[0] == version:
                return node
            self.graph_break(f"tensor {node.name} was changed in place outside the traced "
                             "ops (an in-place op or a write through .data)")
        # a new handle on a traced array: autograd re-wraps a saved output for backward
        # (Function._unpack), sharing the array and the version counter
        alias = self._arrays.get(id(t._data))
        if alias is not None and alias[1] is t._data and alias[2] == t._version[0]:
            self.bind(t, alias[0])
            return alias[0]
        path = self.attrs.get(id(t))
        if path is not None:
            node = self.graph.get_attr(path, **tensor_meta(t))
        else:
            node = self.graph.constant(t, **tensor_meta(t))
            node.meta["live"] = bool(t._rg or t.grad_fn is None and t.requires_grad)
        self.bind(t, node)
        return node

    def _arg(self, a, op):
        if type(a) is SymInt:  # a size in an op's arguments: export writes it in symbols
            return int.__int__(a)
        if type(a) is slice:
            return slice(*self._arg((a.start, a.stop, a.step), op))
        if isinstance(a, Tensor):
            return self.node_of(a)
        if type(a) in (tuple, list):
            return type(a)(self._arg(x, op) for x in a)
        if type(a).__name__ == "ndarray":
            # a backend array an op was handed: a traced tensor's own array (embedding's
            # indices, kept for backward) is a "data" node; any other was computed outside
            # the dispatcher, likely from data (sort's indices), and the trace would freeze it
            hit = self._arrays.get(id(a))
            if hit is not None and hit[1] is a:
                node = hit[0]
                if node not in self._data_nodes:
                    self._data_nodes[node] = self.graph.create_node("data", (node,),
                                                                    meta=node.meta)
                return self._data_nodes[node]
            if getattr(a, "size", 0) > 1:
                self.graph_break(f"{op}: got a raw array argument computed outside the "
                                 "dispatcher")
        return a

    def _symbolic_sizes(self, t) -> tuple:
        """``t``'s sizes as SymInts naming its node (plain for tensors not traced)."""
        hit = self._env.get(id(t))
        shape = t._data.shape
        if hit is None or hit[1] is not t._data:
            return shape
        name = hit[0].name
        return tuple(SymInt(n, ("dim", name, i), self) for i, n in enumerate(shape))

    def guard(self, expr, outcome: bool) -> None:
        """Python decided ``outcome`` on a size expression; decisions inside a primitive (the
        hooks are off there) are the op's own, taken again when the graph runs."""
        state = modes.state
        if state.hooked and state.tracer is self:
            self.guards.append((expr, outcome))

    def graph_break(self, reason: str) -> None:
        if self.strict:
            raise GraphBreak(f"graph break: {reason}")
        self.breaks.append(reason)

    def before_write(self, cls, args) -> None:
        """``cls`` is about to write some of ``args`` in place (its ``_writes`` rule): keep
        their values from before the trace first wrote them, for :meth:`undo_writes`."""
        for i in cls._writes:
            t = args[i] if i < len(args) else None
            if isinstance(t, Tensor) and id(t) not in self._written:
                self._written[id(t)] = (t, t._data.copy())

    def undo_writes(self) -> None:
        """Put back what the traced ops wrote in place (a compiler that runs this call again
        from the graph, so that batch norm's running statistics move once, not twice)."""
        for t, data in self._written.values():
            t._data[...] = data
            t._version[0] += 1
            entry = self._env.get(id(t))
            if entry is not None:  # the restore is no write a later check should see
                self._env[id(t)] = (entry[0], t._data, t._version[0])
        self._written.clear()

    # -- the dispatcher's interface ------------------------------------------------------
    def record(self, cls, args, out) -> None:
        """One primitive ran: ``cls.apply(*args)`` returned ``out``."""
        if cls.__name__ in DATA_DEPENDENT:
            self.graph_break(f"{cls.__name__}: output shape depends on data")
        node = self.graph.call(cls, self._arg(args, cls.__name__), **tensor_meta(out))
        if not modes.state.enabled:  # replaying it under grad mode would differentiate it
            node.meta["no_grad"] = True
        if type(out) is tuple:
            node.meta["outputs"] = [tensor_meta(o) for o in out]
            for i, o in enumerate(out):
                if isinstance(o, Tensor):
                    self.bind(o, self.graph.getitem(node, i, **tensor_meta(o)))
        elif isinstance(out, Tensor):
            self.bind(out, node)

    def read(self, t, what: str) -> None:
        """Python read the data of ``t`` (``item``, ``bool``, ``numpy``): a graph break when
        ``t`` depends on the traced inputs."""
        hit = self._env.get(id(t))
        if hit is None or hit[0].op == "constant":
            return
        if self.boundaries is None or hit[1] is not t._data:
            self.graph_break(f"{what} reads the data of traced tensor {hit[0].name}")
            return
        if any(b[0] == "effect" for b in self.boundaries):
            # the call could not be resumed eagerly from here: effects already ran
            self.graph_break(f"{what} reads the data of traced tensor {hit[0].name} after "
                             "an effect (backward() or an optimizer step)")
            return
        self.boundaries.append(("read", self.graph._root._prev,
                                (hit[0], what, read_key(t, what))))

    def effect(self, what: str, fn, args=(), kwargs=None):
        """``fn(*args, **kwargs)``, a call with effects beyond ops (``backward()`` writing
        ``.grad``, an optimizer's in-place update), runs untraced; a resumable trace records
        it to replay on every call (tensors in ``args`` as their nodes), another one sees its
        writes as graph breaks (:meth:`check_side_effects`)."""
        kwargs = kwargs or {}
        if self.boundaries is not None:
            mapped = self._arg(tuple(args), what), \
                {k: self._arg(v, what) for k, v in kwargs.items()}
            last = self.graph._root._prev
        state = modes.state
        state.tracer = None
        try:
            out = fn(*args, **kwargs)
        finally:
            state.tracer = self
        if self.boundaries is None:  # not replayed: its .grad writes are breaks at the end
            return out
        self._refresh(what)
        node = None
        if isinstance(out, Tensor):  # a closure's loss: a value of the call, not a constant
            node = self.graph.placeholder(f"effect_{len(self.boundaries)}", **tensor_meta(out))
            self.bind(out, node)
        self.boundaries.append(("effect", last, (what, fn, mapped, node)))
        return out

    def _refresh(self, what: str) -> None:
        """Accept the in-place changes an effect made to parameters (read live by their
        nodes); a changed intermediate, or any change outside an effect, is a break."""
        seen = set()
        for t in self._keep:
            entry = self._env.get(id(t))
            if entry is None or id(t) in seen:
                continue
            seen.add(id(t))
            node, data, version = entry
            if t._data is data and t._version[0] == version:
                continue
            if what != "the trace" and (node.op == "get_attr" or node.meta.get("live")):
                self._env[id(t)] = (node, t._data, t._version[0])
            elif node.op in ("get_attr", "constant"):
                self.graph_break(f"{node.name} was changed in place during {what}, outside "
                                 "the traced ops and the recorded effects")
                return

    # -- running -------------------------------------------------------------------------
    def __enter__(self):
        state = modes.state
        if state.tracer is not None:
            raise RuntimeError("trace: a trace is already running in this thread")
        state.tracer = self
        return self

    def __exit__(self, *exc):
        modes.state.tracer = None
        return False


def read_key(t, what: str):
    """What Python got when it read ``t``'s data, as a hashable key: a compiled piece's
    branch is taken again only where a later call reads the same."""
    from ..tensor import _to_host

    arr = t._data if type(t._data).__module__ == "numpy" else _to_host(t)
    if what == "item()/bool()" and arr.size == 1:
        v = arr.reshape(()).item()
        return repr(v) if isinstance(v, float) else v  # NaN == NaN as a key
    return (str(arr.dtype), arr.shape, arr.tobytes())


def flat_tensors(args) -> list:
    """The tensors among ``args`` (nested in lists, tuples and dict values too), in order:
    the order of the placeholders a trace makes for them."""
    out = []

    def walk(a):
        if isinstance(a, Tensor):
            out.append(a)
        elif type(a) in (tuple, list):
            for x in a:
                walk(x)
        elif type(a) is dict:
            for x in a.values():
                walk(x)

    walk(args)
    return out


def _placeholders(tracer, args, names=None):
    """Placeholder nodes for the tensors among ``args`` (see :func:`flat_tensors`)."""
    for k, t in enumerate(flat_tensors(args)):
        name = names[k] if names and k < len(names) else f"arg{k}"
        tracer.bind(t, tracer.graph.placeholder(name, **tensor_meta(t)))


def _outputs(tracer, result):
    if isinstance(result, Tensor):
        return tracer.node_of(result)
    if type(result) in (tuple, list):
        return type(result)(_outputs(tracer, r) for r in result)
    if type(result) is dict:
        return {k: _outputs(tracer, v) for k, v in result.items()}
    return result


def trace(fn, args, attrs=None, strict=False, names=None, symbolic=False):
    """Run ``fn(*args)`` under a new Tracer; returns ``(tracer, result)`` with the graph's
    output node set. Tensors in ``args`` become placeholders (named by ``names``)."""
    tracer = Tracer(attrs, strict, symbolic)
    _placeholders(tracer, args, names)
    with tracer:
        result = fn(*args)
    tracer.check_side_effects()
    tracer.graph.output(_outputs(tracer, result))
    return tracer, result


def trace_backward(tracer, outs):
    """Record ``autograd.grad(outs, leaves, tangents, create_graph=True)`` into ``tracer``'s
    trace (it must be running): the engine's backward calls ops through the dispatcher, and
    with create_graph it also sums gradients with ops, so all of backward is recorded.
    Returns the tangent placeholders, the gradients (None where unused) and the leaves as
    ``(node, tensor)``: every placeholder, parameter or closed-over tensor that requires grad.
    """
    from ..autograd import grad as autograd_grad
    from ..ops.creation import zeros_like

    leaves, seen = [], set()
    for t in tracer._keep:
        node = tracer._env[id(t)][0]
        # an input that is not a leaf (an intermediate of the caller's graph) still gets its
        # gradient: the compiled backward returns it and autograd carries it upstream
        if node.op in ("placeholder", "get_attr", "constant") and t.requires_grad and \
                (t.grad_fn is None or node.op == "placeholder") and node not in seen:
            seen.add(node)
            leaves.append((node, t))
    diff = [o for o in outs if isinstance(o, Tensor) and o.requires_grad]
    tangents, tangent_tensors = [], []
    for i, o in enumerate(diff):
        tan = zeros_like(o)
        node = tracer.graph.placeholder(f"tangent_{i}", **tracer.node_of(o).meta)
        tracer.bind(tan, node)
        tangents.append(node)
        tangent_tensors.append(tan)
    grads = autograd_grad(diff, [t for _, t in leaves], grad_outputs=tangent_tensors,
                          create_graph=True, allow_unused=True) if diff and leaves else ()
    return tangents, list(grads) or [None] * len(leaves), leaves
