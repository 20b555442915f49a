"""``tensorix.compile``: torch.compile's interface over tensorix.fx and the fused kernels.

On a call, the arguments' *guard key* (per tensor: shape, dtype, device, requires_grad; other
values by value; the grad mode; a module's training flag and its parameters' metadata) picks a
compiled entry from an in-memory cache; a new key traces the function once at the dispatcher
and compiles the graph for exactly that key (a recompile, as torch's guards cause).

Where a gradient is needed (grad mode on and an input or parameter requires grad) the entry is
AOTAutograd-shaped: the trace also runs ``autograd.grad`` of the outputs with tangent inputs,
so the backward's primitives are recorded too; the joint graph is split into a forward (that
also returns what backward reads) and a backward, each optimized and fused, and wrapped as one
Function, so ``loss.backward()`` runs the compiled backward and fills ``.grad`` as eager does.
A training step is ``loss = compiled(x, y); loss.backward(); opt.step()`` (the optimizer's
update is already one fused array update per parameter).

Where Python reads tensor data during the trace (``.item()``, ``if t:``) or calls something
with effects beyond ops (``loss.backward()``, ``opt.step()``, ``opt.zero_grad()``: a whole
training step), the graph is cut there into compiled pieces (tensorix._compile.segments): the
read picks the piece traced for its value, the effect is replayed eagerly. Where an op's output
shape depends on data, random numbers are drawn outside any primitive (dropout's mask is drawn
inside one), or a tensor is written in place behind the dispatcher's back, that guard key falls
back to eager for good (``fullgraph=True`` raises at any break), and ``compiled.stats["breaks"]``
says why; ``compiled.explain()`` prints graphs and breaks.
"""

from __future__ import annotations

import time

from ..autograd.function import Function, once_differentiable
from ..autograd.grad_mode import modes
from ..fx.graph_module import _arg_names, _attr_paths, _get_attr
from ..fx.split import split_joint
from ..fx.tracer import GraphBreak, Tracer, _outputs, _placeholders, flat_tensors, trace_backward
from ..tensor import Tensor
from .dynamic import STATIC, DynamicEntry, dynamic_key
from .executor import CompiledGraph
from .segments import (
    RECOMPILE_LIMIT,
    Effect,
    Program,
    Read,
    _rng_restore,
    _rng_save,
    build,
    explain_steps,
)
from .tune import TIER_UP

__all__ = ["compile", "OptimizedModule", "CompiledFunction", "Explanation"]

_RUN = object()  # _compile's "run the entry for this call's result"

_BACKENDS = {"inductor": "fused", "tensorix": "fused", "default": "fused",
             "aot_eager": "graph", "eager": "eager"}
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor",
            mode=None, options: dict | None = None, disable: bool = False):
    """Compile a function or module: its calls run as optimized, fused graphs.

    ``backend``: "inductor" (also "tensorix"/"default": passes, fusion, numba or NumPy
    kernels on the CPU, CuPy kernels on the GPU), "aot_eager" (the captured graphs through the
    interpreter, no fusion) or "eager" (no capture). ``mode`` is accepted as in torch;
    "max-autotune" also tunes the NumPy kernels' chunk sizes. ``dynamic=True``: one program
    with symbolic sizes serves other sizes, guarded by tensorix.export's guards (a failed
    guard exports again; tensorix._compile.dynamic); otherwise each new shape is a new guard
    key, compiled once and cached.
    ``options``: ``{"kernels": "numba" | "numpy"}`` to pick the CPU kernel form;
    ``{"tier_up": n}``: with "auto" kernels and no measurement cached yet, a kernel runs as
    NumPy for ``n - 1`` calls before numba is compiled and measured (default 3; 0: at once).

    Example::

        model = tensorix.nn.Sequential(tensorix.nn.Linear(4, 8), tensorix.nn.GELU())
        fast = tensorix.compile(model)
        y = fast(tensorix.randn(2, 4))        # first call traces and compiles
        y.sum().backward()                    # the compiled backward fills .grad
    """
    if model is None:  # used as @tensorix.compile(...)
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                  mode=mode, options=options, disable=disable)
    if backend not in _BACKENDS and not callable(backend):
        raise ValueError(f"compile(): unknown backend {backend!r}; expected one of "
                         f"{sorted(_BACKENDS)}")
    if mode not in _MODES:
        raise RuntimeError(f"compile(): unrecognized mode={mode!r}; expected one of "
                           f"{[m for m in _MODES if m]}")
    if not callable(model):
        raise TypeError(f"compile(): expected a module or a function, got "
                        f"{type(model).__name__}")
    opts = dict(options or {})
    kind = "eager" if disable else _BACKENDS.get(backend, "fused")
    compiled = CompiledFunction(model, kind, fullgraph, mode, opts, dynamic=dynamic)
    if hasattr(model, "named_parameters"):
        return OptimizedModule(model, compiled)
    return compiled


class CompiledFunction:
    """The callable ``tensorix.compile`` returns for a function (see the module docstring).
    ``stats``: compiles, cache hits, graph breaks; ``entries``: guard key -> entry."""

    def __init__(self, fn, kind="fused", fullgraph=False, mode=None, options=None,
                 root=None, dynamic=None):
        self.fn, self.kind, self.fullgraph, self.mode = fn, kind, fullgraph, mode
        self.dynamic = dynamic is True
        self.options = options or {}
        self.root = root  # the module get_attr nodes read (a piece of a module's graph)
        self.entries: dict = {}
        self.stats = {"compiles": 0, "hits": 0, "breaks": [], "compile_s": 0.0,
                      "recompiles": 0}
        self.__wrapped__ = fn
        self.__doc__ = getattr(fn, "__doc__", None)

    def reset(self) -> None:
        """Forget every compiled entry (the next call compiles again)."""
        self.entries.clear()

    def __call__(self, *args, **kwargs):
        if self.kind == "eager":
            return self.fn(*args, **kwargs)
        if modes.state.tracer is not None:  # inside another trace: be traced through, inline
            return self.fn(*args, **kwargs)
        flat, call = _bind(self.fn, args, kwargs)
        if self.dynamic:
            out = self._dynamic(flat, call)
            if out is not STATIC:
                return out
        key = _guard_key(flat, self.fn)
        entry = self.entries.get(key)
        if entry is None:
            start = time.perf_counter()
            entry, result = self._compile(flat, call)
            self.entries[key] = entry
            self.stats["compiles"] += 1
            self.stats["compile_s"] += time.perf_counter() - start
            if result is not _RUN:  # the trace ran the function as eager does: its result
                return result
        else:
            self.stats["hits"] += 1
        return entry(flat, call)

    def _dynamic(self, flat, call):
        """``dynamic=True``: the call through a program with symbolic sizes
        (tensorix._compile.dynamic), or STATIC to compile it per shape."""
        key = _guard_key(flat, self.fn, dynamic=True)
        entry = self.entries.get(key)
        if entry is STATIC:
            return STATIC
        if entry is None:
            start = time.perf_counter()
            entry = self.entries[key] = DynamicEntry.make(self.fn, flat, call, self.stats) \
                or STATIC
            self.stats["compile_s"] += time.perf_counter() - start
            if entry is STATIC:
                return STATIC
            self.stats["compiles"] += 1
        else:
            self.stats["hits"] += 1
        out = entry(flat, call)
        if out is STATIC:  # the recompile limit, or sizes that cannot be exported
            self.entries[key] = STATIC
        return out

    def explain(self) -> Explanation:
        """What the calls so far compiled, as ``torch._dynamo.explain``: graphs, graph breaks
        and their reasons, per guard key (print it)."""
        return Explanation(self)

    def _module(self):
        if self.root is not None:
            return self.root
        return self.fn if hasattr(self.fn, "named_parameters") else None

    def _trace(self, flat, call):
        """Run the function once under a resumable tracer; with a gradient needed and no
        boundary, also trace its backward (the joint graph)."""
        module = self._module()
        tracer = Tracer(_attr_paths(module) if module is not None else {},
                        resumable=self.kind != "eager")
        names = _arg_names(self.fn)
        _placeholders(tracer, flat, names if names and len(names) == len(flat) else None)
        joint = None
        with tracer:
            result = call(*flat)
            outs, rebuild = _flatten(result)
            # a gradient is needed where an output requires one: through the arguments, a
            # module's parameters or tensors the function closes over
            if modes.state.enabled and any(_diff(o) for o in outs) and not tracer.boundaries:
                joint = trace_backward(tracer, outs)
        tracer.check_side_effects()
        for o in outs:  # an output written in place behind the dispatcher (setitem): a break
            tracer.node_of(o)
        return tracer, result, outs, rebuild, joint

    def _compile(self, flat, call):
        """``(entry, result)``: the guard key's compiled entry, and the call's result where
        the trace's own is it (else ``_RUN``: run the entry)."""
        rng = _rng_save()
        tracer, result, outs, rebuild, joint = self._trace(flat, call)
        if tracer.breaks:
            self.stats["breaks"].extend(tracer.breaks)
            if self.fullgraph:
                raise GraphBreak(f"compile(fullgraph=True): {tracer.breaks[0]}")
            return _Eager(tracer.breaks), result
        module = self._module()
        if tracer.boundaries:
            if self.fullgraph:
                raise GraphBreak(f"compile(fullgraph=True): graph break at "
                                 f"{tracer.boundaries[0][0]} {_what(tracer.boundaries[0])}")
            steps = build(tracer, outs, rebuild, self._piece, module)
            names = [n.name for n in tracer.graph.placeholders
                     if not n.name.startswith("effect_")][:len(flat_tensors(flat))]
            return _Pieces(Program(steps, names, module, self._retrace, self.stats)), result
        _rng_restore(rng)  # the entry runs this call again: draw the same numbers
        tracer.undo_writes()  # and move batch norm's running statistics once
        graph = tracer.graph
        out_nodes = _outputs(tracer, tuple(outs))
        if joint is None:
            graph.output(out_nodes)
            return _Forward(self._graph(graph, module), rebuild), _RUN
        tangents, grads, leaves = joint
        grad_nodes = tuple(None if g is None else tracer.node_of(g) for g in grads)
        graph.output(tuple(out_nodes) + grad_nodes)
        fwd, bwd, n_saved = split_joint(graph, tangents, len(outs))
        return _Joint(self._graph(fwd, module), self._graph(bwd, module), n_saved, leaves,
                      [i for i, o in enumerate(outs) if _diff(o)], len(outs), module,
                      rebuild, len(flat)), _RUN

    def _piece(self, fn, root):
        """A piece of a broken graph, compiled as this function is (on its first call)."""
        return CompiledFunction(fn, self.kind, False, self.mode, self.options, root=root)

    def _retrace(self, flat, call, give_up):
        """A new branch's trace: ``(steps | None, result)``; None runs eagerly from now."""
        if give_up:
            self.stats["breaks"].append(f"recompile limit ({RECOMPILE_LIMIT} branches) "
                                        "reached: eager from now")
            return None, call(*flat)
        tracer, result, outs, rebuild, _ = self._trace(flat, call)
        if tracer.breaks or not tracer.boundaries:
            self.stats["breaks"].extend(tracer.breaks)
            return None, result
        return build(tracer, outs, rebuild, self._piece, self._module()), result

    def _graph(self, graph, module):
        if self.kind == "graph":
            return CompiledGraph(graph, module, fuse=False, passes=False)
        autotune = self.mode == "max-autotune"  # measure at once: tuning is what was asked
        return CompiledGraph(graph, module, prefer=self.options.get("kernels", "auto"),
                             autotune=autotune,
                             tier_up=0 if autotune else self.options.get("tier_up", TIER_UP))


def _diff(t):
    return isinstance(t, Tensor) and t.requires_grad


class _Eager:
    """A guard key whose trace broke: run the function as written."""

    def __init__(self, reasons):
        self.reasons = reasons

    def __call__(self, flat, call):
        return call(*flat)


class _Pieces:
    """A guard key compiled as pieces around graph breaks (tensorix._compile.segments)."""

    def __init__(self, program):
        self.program = program

    def __call__(self, flat, call):
        if self.program.steps is None:  # a branch could not be grafted on: eager for good
            return call(*flat)
        return self.program(flat, call)


def _what(boundary):
    kind, _, payload = boundary
    return payload[0] if kind == "effect" else f"({payload[1]} of {payload[0].name})"


class _Forward:
    def __init__(self, graph, rebuild):
        self.graph, self.rebuild = graph, rebuild

    def __call__(self, flat, call):
        return self.rebuild(list(self.graph(*flat_tensors(flat))))


class _AOTBase(Function):
    """One compiled forward/backward pair as a primitive: apply(*inputs, *leaves)."""

    entry = None

    @classmethod
    def forward(cls, ctx, *tensors):
        e = cls.entry
        res = e.fwd(*tensors[:e.n_inputs])
        ctx.saved_values = res[e.n_out:]
        return tuple(res[:e.n_out])

    @staticmethod
    @once_differentiable
    def backward(ctx, *grads):
        e = type(ctx).entry
        tangents = [grads[i] for i in e.diff_idx]
        out = e.bwd(*ctx.saved_values, *tangents)
        result = [None] * (e.n_inputs + len(e.extra_leaves))
        for pos, g in zip(e.leaf_pos, out):
            result[pos] = g
        return tuple(result)

    def release(self):
        self._saved = None
        self.saved_values = None

    @classmethod
    def name(cls):
        return "CompiledFunctionBackward"


class _Joint:
    def __init__(self, fwd, bwd, n_saved, leaves, diff_idx, n_out, module, rebuild,
                 n_flat):
        self.fwd, self.bwd, self.n_saved, self.diff_idx = fwd, bwd, n_saved, diff_idx
        self.n_out, self.module, self.rebuild = n_out, module, rebuild
        self.n_inputs = len(fwd.placeholders)
        places = [n for n in fwd.graph.placeholders]
        names = [p.target for p in places]
        self.extra_leaves = [(n, t) for n, t in leaves if n.op != "placeholder"]
        self.leaf_pos = []
        k = 0
        for n, _ in leaves:
            if n.op == "placeholder":
                self.leaf_pos.append(names.index(n.name))
            else:
                self.leaf_pos.append(self.n_inputs + k)
                k += 1
        self.fn = type("CompiledFunction", (_AOTBase,), {"entry": self})

    def _leaf(self, node, tensor):
        if node.op == "get_attr":
            return _get_attr(self.module, node.target)
        return tensor

    def __call__(self, flat, call):
        inputs = flat_tensors(flat)
        leaves = [self._leaf(n, t) for n, t in self.extra_leaves]
        outs = self.fn.apply(*inputs, *leaves)
        return self.rebuild(list(outs))


class OptimizedModule:
    """``tensorix.compile(module)``: calls run compiled; everything else (parameters(),
    train(), state_dict(), ...) is the original module's (``_orig_mod``)."""

    def __init__(self, module, compiled):
        self.__dict__["_orig_mod"] = module
        self.__dict__["_compiled"] = compiled

    def __call__(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    forward = __call__

    def __getattr__(self, name):
        return getattr(self.__dict__["_orig_mod"], name)

    def __setattr__(self, name, value):
        setattr(self._orig_mod, name, value)

    def __repr__(self):
        return f"OptimizedModule({self._orig_mod!r})"


# -- guards and argument plumbing ----------------------------------------------------------
def _bind(fn, args, kwargs):
    """The call's arguments as one flat tuple and a function of it (keyword arguments are
    passed through by name)."""
    if not kwargs:
        return args, fn
    keys = tuple(kwargs)
    n = len(args)
    return args + tuple(kwargs[k] for k in keys), \
        lambda *flat: fn(*flat[:n], **dict(zip(keys, flat[n:])))


def _value_key(a):
    if isinstance(a, Tensor):
        return ("T", tuple(a._data.shape), a._dtype.name, str(a.device), a.requires_grad)
    if type(a) in (tuple, list):
        return (type(a).__name__,) + tuple(_value_key(x) for x in a)
    try:
        hash(a)
    except TypeError:
        return ("id", id(a))
    return (type(a).__name__, a)


def _guard_key(flat, fn, dynamic=False):
    key = [modes.state.enabled, tuple(dynamic_key(a) if dynamic and isinstance(a, Tensor)
                                      else _value_key(a) for a in flat)]
    if hasattr(fn, "named_parameters"):
        key.append(bool(getattr(fn, "training", False)))
        key.append(tuple((tuple(p.shape), p.dtype.name, str(p.device), p.requires_grad)
                         for p in fn.parameters()))
    return tuple(key)


def _flatten(result):
    """The tensors of ``result`` (a Tensor or nested tuple/list/dict) and a function that
    rebuilds the structure from new tensors."""
    flat = []

    def walk(x):
        if isinstance(x, Tensor):
            flat.append(x)
            return ("t", len(flat) - 1)
        if type(x) in (tuple, list):
            return (type(x), [walk(v) for v in x])
        if type(x) is dict:
            return (dict, {k: walk(v) for k, v in x.items()})
        return ("v", x)

    spec = walk(result)

    def rebuild(new, spec=spec):
        tag = spec[0]
        if tag == "t":
            return new[spec[1]]
        if tag == "v":
            return spec[1]
        if tag is dict:
            return {k: rebuild(new, s) for k, s in spec[1].items()}
        return tag(rebuild(new, s) for s in spec[1])

    return flat, rebuild


def _effects(steps) -> list[str]:
    """The replayed effects of a tree of steps (each branch of a read too), in order."""
    out, stack = [], [iter(steps)]
    while stack:
        s = next(stack[-1], None)
        if s is None:
            stack.pop()
        elif type(s) is Effect:
            out.append(s.what)
        elif type(s) is Read:
            stack.extend(iter(rest) for rest in reversed(list(s.branches.values())))
    return out


class Explanation:
    """``compiled.explain()``: per guard key, the graphs and the graph breaks with their
    reasons (as ``torch._dynamo.explain``'s ExplainOutput: ``graph_count``,
    ``graph_break_count``, ``break_reasons``), and apart from them the replayed effects
    (``effects``, ``effect_count``: ``backward()``, an optimizer's ``step``/``zero_grad``,
    gradient clipping, an lr scheduler's ``step``), which run eagerly between the graphs
    but do not break them: a step with effects only is still one graph.

    Example: a compiled training step ``zero_grad(); loss.backward(); opt.step()`` explains
    as ``Graph Count: 1``, ``Graph Break Count: 0``, ``Effects: 3``."""

    def __init__(self, compiled):
        self.lines, self.break_reasons, self.graph_count = [], [], 0
        self.effects: list[str] = []
        for k, entry in enumerate(compiled.entries.values()):
            self.lines.append(f"guard key {k}:")
            if type(entry) is _Eager:
                self.lines += [f"  eager (graph break: {r})" for r in entry.reasons]
                self.break_reasons += entry.reasons
            elif type(entry) is _Pieces and entry.program.steps is not None:
                body = explain_steps(entry.program.steps)
                self.graph_count += sum(ln.lstrip().startswith("graph of") for ln in body)
                self.break_reasons += [ln.strip()[len("break: "):] for ln in body
                                       if ln.lstrip().startswith("break:")]
                self.effects += _effects(entry.program.steps)
                self.lines += ["  " + ln for ln in body]
            elif type(entry) is DynamicEntry:
                self.graph_count += len(entry.programs)
                self.lines += [f"  dynamic: {ep.guards or 'no guards'}, specialized "
                               f"{ep.specialized or 'none'}" for ep in entry.programs]
            elif entry is not STATIC:
                self.graph_count += 1
                self.lines.append("  one graph, no break")
        self.graph_break_count = len(self.break_reasons)
        self.effect_count = len(self.effects)
        self.recompiles = compiled.stats["recompiles"]

    def __str__(self):
        return (f"Graph Count: {self.graph_count}\nGraph Break Count: "
                f"{self.graph_break_count}\nEffects: {self.effect_count}"
                f"{' (' + ', '.join(self.effects) + ')' if self.effects else ''}\n"
                f"Recompiles: {self.recompiles}\n" +
                "\n".join(self.lines))

    __repr__ = __str__
