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

Where Python reads tensor data during the trace (``.item()``, ``if t:``), an op's output shape
depends on data, random numbers are drawn outside the dispatcher (dropout in training), or a
tensor is written in place behind the dispatcher's back, the trace stands for those values only:
that guard key falls back to eager for good (``fullgraph=True`` raises instead), and
``compiled.stats["breaks"]`` says why.
"""

from __future__ import annotations

import time

from ..autograd.function import Function, once_differentiable
from ..autograd.grad_mode import modes
from ..fx.graph_module import _arg_names, _attr_paths, _get_attr
from ..fx.split import split_joint
from ..fx.tracer import GraphBreak, Tracer, _outputs, _placeholders, flat_tensors, trace_backward
from ..tensor import Tensor
from .executor import CompiledGraph
from .tune import TIER_UP

__all__ = ["compile", "OptimizedModule", "CompiledFunction"]

_BACKENDS = {"inductor": "fused", "tensorix": "fused", "default": "fused",
             "aot_eager": "graph", "eager": "eager"}
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor",
            mode=None, options: dict | None = None, disable: bool = False):
    """Compile a function or module: its calls run as optimized, fused graphs.

    ``backend``: "inductor" (also "tensorix"/"default": passes, fusion, numba or NumPy
    kernels on the CPU, CuPy kernels on the GPU), "aot_eager" (the captured graphs through the
    interpreter, no fusion) or "eager" (no capture). ``mode`` is accepted as in torch;
    "max-autotune" also tunes the NumPy kernels' chunk sizes. ``dynamic`` is accepted: shapes
    are specialized (each new shape is a new guard key, compiled once and cached).
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
    compiled = CompiledFunction(model, kind, fullgraph, mode, opts)
    if hasattr(model, "named_parameters"):
        return OptimizedModule(model, compiled)
    return compiled


class CompiledFunction:
    """The callable ``tensorix.compile`` returns for a function (see the module docstring).
    ``stats``: compiles, cache hits, graph breaks; ``entries``: guard key -> entry."""

    def __init__(self, fn, kind="fused", fullgraph=False, mode=None, options=None):
        self.fn, self.kind, self.fullgraph, self.mode = fn, kind, fullgraph, mode
        self.options = options or {}
        self.entries: dict = {}
        self.stats = {"compiles": 0, "hits": 0, "breaks": [], "compile_s": 0.0}
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
        key = _guard_key(flat, self.fn)
        entry = self.entries.get(key)
        if entry is None:
            start = time.perf_counter()
            entry = self.entries[key] = self._compile(flat, call)
            self.stats["compiles"] += 1
            self.stats["compile_s"] += time.perf_counter() - start
        else:
            self.stats["hits"] += 1
        return entry(flat, call)

    def _compile(self, flat, call):
        module = self.fn if hasattr(self.fn, "named_parameters") else None
        attrs = _attr_paths(module) if module is not None else {}
        tracer = Tracer(attrs)
        names = _arg_names(self.fn)
        _placeholders(tracer, flat, names if names and len(names) == len(flat) else None)
        rng = _rng_states()
        tangents, n_out = [], 0
        with tracer:
            result = call(*flat)
            outs, rebuild = _flatten(result)
            # a gradient is needed where an output requires one: through the arguments, a
            # module's parameters or tensors the function closes over
            needs_grad = modes.state.enabled and any(_diff(o) for o in outs)
            if needs_grad:
                tangents, grads, leaves = trace_backward(tracer, outs)
        tracer.check_side_effects()
        if _rng_states() != rng:
            tracer.graph_break("random numbers were drawn outside the dispatcher (dropout "
                               "in training mode, rand in the function)")
        if tracer.breaks:
            self.stats["breaks"].extend(tracer.breaks)
            if self.fullgraph:
                raise GraphBreak(f"compile(fullgraph=True): {tracer.breaks[0]}")
            return _Eager(tracer.breaks)
        graph = tracer.graph
        n_out = len(outs)
        out_nodes = _outputs(tracer, tuple(outs))
        if not needs_grad:
            graph.output(out_nodes)
            return _Forward(self._graph(graph, module), rebuild)
        grad_nodes = tuple(None if g is None else tracer.node_of(g) for g in grads)
        graph.output(tuple(out_nodes) + grad_nodes)
        fwd, bwd, n_saved = split_joint(graph, tangents, n_out)
        return _Joint(self._graph(fwd, module), self._graph(bwd, module), n_saved, leaves,
                      [i for i, o in enumerate(outs) if _diff(o)], len(outs), module,
                      rebuild, len(flat))

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


def _guard_key(flat, fn):
    key = [modes.state.enabled, tuple(_value_key(a) for a in flat)]
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


def _rng_states():
    from ..ops import random

    gens = [random.default_generator, *random._device_generators.values()]
    return [g._bits.state["state"]["state"] for g in gens] + \
        [g._bits.state["has_uint32"] for g in gens]
