"""``tensorix.export``: a whole-program graph with symbolic dimensions, as torch.export.

The trace is strict: where Python reads tensor data the export fails (:class:`GraphBreak`)
rather than specializing silently. Each dimension named in ``dynamic_shapes`` becomes a
symbol (``s0``, ``s1``, ... or the :class:`Dim`'s name). The function is traced once at the
example shapes and once more per symbol with that dimension one larger (one smaller where the
larger one takes another path); the traces must take the same path (same ops, same decisions
on sizes), and every shape in ``meta`` and
every integer argument (a reshape's target) that moved with a symbol is written as an
expression in the symbols: ``k*s0*s1`` or ``a*s0 + b``, checked against all traces. The
exported program then runs at other sizes: it binds the symbols from its inputs' shapes and
evaluates those arguments.

While it traces, sizes are :class:`~tensorix.fx.symint.SymInt` s: each decision Python takes
on one (``if x.shape[0] > 4``, ``min``) becomes a guard that every call checks, so a call on
the other side raises instead of running the traced branch. A dim whose exact value Python
used (``range`` of it, ``len``, ``int``) is specialised with a :class:`SpecializationWarning`.

Example::

    ep = tensorix.export(model, (x,), dynamic_shapes=({0: Dim("batch")},))
    print(ep.graph)            # shapes like (batch, 4)
    ep(tensorix.randn(16, 4))  # another batch size
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

from ..tensor import Tensor
from .graph import Graph, map_args
from .graph_module import GraphModule, _arg_names, _attr_paths, symbolic_trace  # noqa: F401
from .symint import Guard, resolve
from .tracer import GraphBreak, trace

__all__ = ["export", "Dim", "SymExpr", "ExportedProgram", "SpecializationWarning"]


class SpecializationWarning(UserWarning):
    """A dim named dynamic was fixed to its example size (as torch.export's constraint
    violation): the program's Python depends on its exact value."""


@dataclass(frozen=True)
class Dim:
    """A named dynamic dimension (``min``/``max`` checked when the program runs)."""

    name: str
    min: int = 0
    max: int = 1 << 62


class SymExpr:
    """``coef * prod(symbols)`` (a product term) or ``const + sum(c_i * s_i)`` (affine)."""

    def __init__(self, kind, coef, terms):
        self.kind, self.coef, self.terms = kind, coef, terms  # terms: {name: c} or (names)

    def evaluate(self, env: dict) -> int:
        if self.kind == "prod":
            return self.coef * math.prod(env[s] for s in self.terms)
        return self.coef + sum(c * env[s] for s, c in self.terms.items())

    def __repr__(self):
        if self.kind == "prod":
            head = [] if self.coef == 1 else [str(self.coef)]
            return "*".join(head + list(self.terms))
        parts = [(s if c == 1 else f"{c}*{s}") for s, c in self.terms.items()]
        if self.coef:
            parts.append(str(self.coef))
        return " + ".join(parts) if parts else "0"

    def __eq__(self, other):
        return isinstance(other, SymExpr) and repr(self) == repr(other)

    def __hash__(self):
        return hash(repr(self))


def _fit(values, base_env, probes):
    """The expression in the symbols that gives ``values[0]`` at the base sizes and
    ``values[i + 1]`` with symbol i moved by its step (``probes[i] = (name, +1 or -1)``)."""
    base = values[0]
    steps = dict(probes)
    deltas = {s: (v - base) * step for (s, step), v in zip(probes, values[1:])}  # per +1
    moved = [s for s, d in deltas.items() if d]
    if not moved:
        return base
    prod = math.prod(base_env[s] for s in moved)
    if prod and base % prod == 0:
        k = base // prod
        cand = SymExpr("prod", k, tuple(moved))
        if all(cand.evaluate({**base_env, s: base_env[s] + steps[s]}) ==
               base + deltas[s] * steps[s] for s in moved):
            return cand
    const = base - sum(deltas[s] * base_env[s] for s in moved)
    return SymExpr("affine", const, {s: deltas[s] for s in moved})


def _symbolize(values, base_env, probes, where):
    """Merge one value as seen by every trace: ints that moved become SymExprs, containers
    recurse; anything else must agree."""
    first = values[0]
    if type(first) in (tuple, list) and all(type(v) is type(first) and len(v) == len(first)
                                            for v in values):
        return type(first)(_symbolize([v[i] for v in values], base_env, probes, where)
                           for i in range(len(first)))
    if type(first) is slice and all(type(v) is slice for v in values):
        parts = _symbolize([(v.start, v.stop, v.step) for v in values], base_env, probes, where)
        return slice(*parts)
    if type(first) is int and all(type(v) is int for v in values):
        return _fit(values, base_env, probes)
    if not isinstance(first, Tensor) and any(v != first and repr(v) != repr(first)
                                             for v in values[1:]):
        raise GraphBreak(f"export: {where} changes with a dynamic dim and is not an integer "
                         "expression")
    return first


class ExportedProgram(GraphModule):
    """A GraphModule with ``dims`` (per placeholder, per dim: an int or a symbol), the
    symbols' ``ranges``, and the ``guards`` on them that Python's decisions at trace time
    make (``specialized``: dims fixed to their example size). Calls bind the symbols from
    the inputs' shapes and check the dims and the guards."""

    def __init__(self, root, graph, dims, ranges, guards=(), places=None, specialized=None):
        super().__init__(root, graph)
        self.dims, self.ranges = dims, ranges
        self.guards, self.places = list(guards), dict(places or {})
        self.specialized = dict(specialized or {})

    def __repr__(self):
        lines = [self.graph.code]
        if self.guards:
            lines.append("# guards: " + ", ".join(map(repr, self.guards)))
        for name, size in self.specialized.items():
            lines.append(f"# specialized: {name} = {size} ({self.places[name]})")
        return "ExportedProgram(\n" + "\n".join(lines) + "\n)"

    def _bind(self, inputs):
        env = {}
        for k, (x, dims) in enumerate(zip(inputs, self.dims)):
            for i, d in enumerate(dims):
                n = x.shape[i]
                if isinstance(d, SymExpr):
                    (s,) = d.terms
                    if env.setdefault(s, n) != n:
                        raise RuntimeError(f"export: input {k} dim {i} = {n}, but {s} is "
                                           f"{env[s]} from an earlier input")
                    lo, hi = self.ranges[s]
                    if not lo <= n <= hi:
                        raise RuntimeError(f"export: input {k} dim {i} = {n} is outside "
                                           f"{s}'s range [{lo}, {hi}]")
                elif n != d:
                    raise RuntimeError(f"export: input {k} dim {i} must be {d} (a static "
                                       f"dim of the exported program), got {n}")
        for g in self.guards:
            if not g.check(env):
                sizes = ", ".join(f"{self.places[s]} = {env[s]}" for s in g.symbols)
                raise RuntimeError(f"export: guard {g} failed for {sizes}; re-export for "
                                   "this size range")
        return env

    def forward(self, *inputs):
        from .graph_module import Interpreter

        env = self._bind(inputs)
        interp = Interpreter(self.graph, self.root)
        base = interp.run_node

        def run_node(node, args):
            return base(node, _resolve(args, env) if node.is_call else args)

        interp.run_node = run_node
        return interp.run(*inputs)

    __call__ = forward


def _resolve(args, env):
    if isinstance(args, SymExpr):
        return args.evaluate(env)
    if type(args) in (tuple, list):
        return type(args)(_resolve(a, env) for a in args)
    if type(args) is slice:
        return slice(*_resolve((args.start, args.stop, args.step), env))
    return args


def export(fn, args, kwargs=None, *, dynamic_shapes=None, strict: bool = True):
    """Capture ``fn(*args)`` as an :class:`ExportedProgram` whose dims named in
    ``dynamic_shapes`` (per argument: None or ``{dim: Dim | name}``) are symbolic.

    Raises :class:`~tensorix.fx.GraphBreak` where the program reads tensor data, and where it
    depends on a dynamic size in a way the two-point fit cannot express.
    """
    if kwargs:
        raise TypeError("export(): pass the arguments positionally (kwargs are not "
                        "supported)")
    args = tuple(args)
    specs = list(dynamic_shapes or [None] * len(args))
    if len(specs) != len(args):
        raise ValueError(f"export(): dynamic_shapes has {len(specs)} entries for "
                         f"{len(args)} arguments")
    symbols, where = {}, {}  # name -> Dim; name -> [(arg index, dim)]: a name may recur
    for k, spec in enumerate(specs):
        for dim, d in (spec or {}).items():
            if not isinstance(args[k], Tensor) or not -args[k].ndim <= dim < args[k].ndim:
                raise ValueError(f"export(): dynamic_shapes[{k}] names dim {dim} of an "
                                 "argument that has no such dim")
            d = d if isinstance(d, Dim) else Dim(d if isinstance(d, str) else
                                                 f"s{len(symbols)}")
            symbols.setdefault(d.name, d)
            where.setdefault(d.name, []).append((k, dim % args[k].ndim))
    attrs = _attr_paths(fn)
    names = _arg_names(fn)
    base_env = {}
    for name, places in where.items():
        sizes = {args[k].shape[dim] for k, dim in places}
        if len(sizes) != 1:
            raise ValueError(f"export(): the dims named {name!r} have different sizes "
                             f"{sorted(sizes)} in the example inputs")
        base_env[name] = sizes.pop()
    run = dict(attrs=attrs, strict=strict, names=names, symbolic=bool(where))
    base, _ = trace(fn, args, **run)
    graphs, probes, specialized = [base.graph], [], {}
    for name, places in where.items():  # one more trace per symbol, a size up or down
        probe = _probe(fn, args, base, places, base_env[name], symbols[name], run)
        if probe is None:
            specialized[name] = base_env[name]
            warnings.warn(SpecializationWarning(
                f"export: dynamic dim {name!r} ({_place(names, *places[0])}) is specialised "
                f"to {base_env[name]}: the program's Python takes another path at both "
                f"neighbouring sizes (a loop over range() of it, len(), int(), or guards "
                f"that pin it); the exported program accepts only that size"), stacklevel=2)
            continue
        probes.append((name, probe[0]))
        graphs.append(probe[1].graph)
    graph = _merge(graphs, base_env, probes)
    dims = [list(a.shape) for a in args if isinstance(a, Tensor)]
    for name, places in where.items():
        for k, dim in places:
            if name not in specialized:
                dims[sum(isinstance(a, Tensor) for a in args[:k])][dim] = SymExpr(
                    "prod", 1, (name,))
    ranges = {d.name: (d.min, d.max) for d in symbols.values()}
    places = {name: _place(names, *p[0]) for name, p in where.items()}
    return ExportedProgram(fn if attrs else None, graph, dims, ranges,
                           _guards(base.guards, graph, ranges), places, specialized)


def _place(names, k, dim):
    arg = names[k] if names and k < len(names) else f"args[{k}]"
    return f"{arg}.shape[{dim}]"


def _probe(fn, args, base, places, size, dim, run):
    """``(step, tracer)``: the trace with the symbol's dims one larger (else one smaller)
    that took the base trace's path (same ops, same decisions on sizes); None if neither."""
    from ..ops.shape import cat

    def path(tracer):
        return [n.op for n in tracer.graph.nodes], [(repr(e), o) for e, o in tracer.guards]

    for step in (1, -1):
        if not max(dim.min, 2) <= size + step <= dim.max:  # sizes 0 and 1 are special
            continue
        moved = list(args)
        for k, d in places:
            x = moved[k].detach()
            moved[k] = cat([x, x.narrow(d, 0, 1)], d) if step > 0 else \
                x.narrow(d, 0, size - 1).contiguous()
        tracer = trace(fn, tuple(moved), **run)[0]
        if path(tracer) == path(base):
            return step, tracer
    return None


def _guards(decisions, graph, ranges) -> list:
    """The traced decisions as Guards in the symbols, less those that no symbol enters and
    those that hold over the symbols' whole ranges."""
    nodes = {n.name: n for n in graph.nodes}
    out = []
    for expr, outcome in decisions:
        g = Guard.from_trace(resolve(expr, lambda n, i: nodes[n].meta["shape"][i]), outcome)
        if g.symbols and g not in out and not g.always(ranges):
            out.append(g)
    return out


def _merge(graphs, base_env, probes) -> Graph:
    """The base graph with shapes and integer arguments written in the symbols."""
    base = graphs[0]
    lists = [g.nodes for g in graphs]
    if len({len(nodes) for nodes in lists}) != 1 or any(
            [n.op for n in nodes] != [n.op for n in lists[0]] for nodes in lists[1:]):
        raise GraphBreak("export: the program takes different ops at another size of a "
                         "dynamic dim (it branches on a shape); mark that dim static")
    for i, node in enumerate(lists[0]):
        others = [nodes[i] for nodes in lists]
        if node.op == "constant" and isinstance(node.target, Tensor) and any(
                tuple(o.target.shape) != tuple(node.target.shape) for o in others):
            raise GraphBreak(f"export: constant {node.name} (made outside the dispatcher, "
                             "e.g. by arange or ones) changes shape with a dynamic dim")
        if "shape" in node.meta:
            node.meta["shape"] = tuple(_symbolize([tuple(o.meta["shape"]) for o in others],
                                                  base_env, probes, node.name))
        if node.is_call:
            plain = [map_args(o.args, lambda n: None) for o in others]
            merged = _symbolize(plain, base_env, probes, node.name)
            it = iter(node.inputs)
            node.set_args(_restore(node.args, merged, it))
    return base


def _restore(args, merged, it):
    """``merged`` (with Nodes blanked to None) with the Nodes of ``args`` put back."""
    from .graph import Node

    if type(args) is Node:
        return args
    if type(args) in (tuple, list):
        return type(args)(_restore(a, m, it) for a, m in zip(args, merged))
    return merged
