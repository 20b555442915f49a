"""Partial graphs around graph breaks, and training steps inside ``tensorix.compile``.

A resumable trace (``Tracer(resumable=True)``) does not give up where Python reads tensor
data (``if x.sum() > 0:``) or calls something with effects beyond ops (``loss.backward()``,
``opt.step()``, ``opt.zero_grad()``): it records a *boundary* there and goes on. The trace is
then cut at its boundaries into pieces (:func:`build`), each compiled on its own as a
``CompiledFunction`` over the piece's subgraph (so a piece that needs a gradient gets its
own compiled forward and backward, and autograd chains the pieces), and a call runs them as
a list of steps:

* ``Piece``: run one compiled subgraph on values computed earlier;
* ``Effect``: replay the call eagerly (``backward()`` runs the pieces' compiled backwards
  and fills ``.grad`` as eager does; an optimizer updates the parameters the pieces read live);
* ``Read``: compute what Python read (a bool, a number, an array) and take the branch traced
  for that value; a value not seen yet traces the function again for it (a recompile,
  counted in ``stats["recompiles"]``), so a result is never another branch's.

This is what Dynamo's graph breaks do with bytecode: the code before the break is one graph,
the break runs in Python, the code after it another graph. Here the Python between pieces is
not run again on a later call; only the recorded boundaries are. So a trace is valid when the
function's effects are its ops and the recorded calls (as for every trace-based compiler). A
read after an effect cannot be resumed (the effect already ran when the read would need a new
trace): that guard key runs eagerly.

Values are keyed by node name: traces of the same function agree on the names of what they
share (a new branch's trace starts as the first one did), so branches attach to one tree.
"""

from __future__ import annotations

from ..autograd.grad_mode import no_grad
from ..fx.graph import Node, map_args
from ..fx.graph_module import Interpreter, _get_attr
from ..fx.passes import is_pure
from ..fx.split import extract
from ..fx.tracer import read_key
from .optim_kernels import fused_effect

__all__ = ["build", "Program", "explain_steps", "RECOMPILE_LIMIT"]

RECOMPILE_LIMIT = 8  # new branch traces per guard key before it runs eagerly (torch's limit)


class _PieceInterpreter(Interpreter):
    """Runs a piece's subgraph, each node under the grad mode it was traced in."""

    def run_node(self, node, args):
        if node.meta.get("no_grad"):
            with no_grad():
                return super().run_node(node, args)
        return super().run_node(node, args)


class _PieceFn:
    """A piece as a function of its inputs (what ``CompiledFunction`` compiles)."""

    def __init__(self, graph, root):
        self.graph, self.root = graph, root

    def __call__(self, *inputs):
        return tuple(_PieceInterpreter(self.graph, self.root).run(*inputs))


class Piece:
    def __init__(self, graph, inputs, outputs, compiled):
        self.graph, self.inputs, self.outputs, self.compiled = graph, inputs, outputs, compiled

    def sig(self):
        return ("piece", tuple(n.name for n in self.graph.nodes))

    def describe(self):
        calls = [n for n in self.graph.nodes if n.is_call]
        return f"graph of {len(calls)} ops ({', '.join(n.name for n in calls[:6])}" + \
            (", ...)" if len(calls) > 6 else ")")


class Effect:
    def __init__(self, what, fn, args, out):
        self.what, self.fn, self.args, self.out = what, fn, args, out

    def sig(self):
        return ("effect", self.what)

    def describe(self):  # not a break: the graph goes on after it (explain lists effects apart)
        return f"effect: {self.what} replayed eagerly between graphs"


class Read:
    def __init__(self, node, what, key, rest):
        self.node, self.what, self.branches = node, what, {key: rest}

    def sig(self):
        return ("read", self.node, self.what)

    def describe(self):
        return f"break: {self.what} reads {self.node} (data-dependent Python); " \
            f"{len(self.branches)} branch(es) traced"


class Output:
    def __init__(self, result, rebuild):
        self.result, self.rebuild = result, rebuild

    def sig(self):
        return ("output",)

    def describe(self):
        return "return"


def build(tracer, outs, rebuild, make_compiled, root):
    """The steps of a resumable trace whose function returned the tensors ``outs``
    (``rebuild`` makes its result from them). ``make_compiled(fn, root)`` compiles a piece."""
    result = [tracer.node_of(o) for o in outs]
    pieces, cuts = _cut(tracer)
    # what each piece must hand on: inputs of other pieces, the boundaries' nodes, the result
    needed = {n for n in result if type(n) is Node}
    for kind, _, payload in cuts:
        needed.update([payload[0]] if kind == "read" else _nodes(payload[2]))
    members = [set(p) for p in pieces]
    for k, p in enumerate(pieces):
        for n in p:
            needed.update(i for i in n.inputs if i not in members[k])
    head = steps = []
    for k, p in enumerate(pieces):
        outs_k = [n for n in p if n in needed]
        if outs_k or any(not is_pure(n) for n in p):  # a draw runs even if unread
            ins = list(dict.fromkeys(i for n in p for i in n.inputs if i not in members[k]
                                     and i.op not in ("constant", "get_attr")))
            sub = extract(p, ins, tuple(outs_k))
            steps.append(Piece(sub, [i.name for i in ins], [n.name for n in outs_k],
                               make_compiled(_PieceFn(sub, root), root)))
        if k < len(cuts):
            kind, _, payload = cuts[k]
            if kind == "effect":
                what, fn, args, out = payload
                # an optimizer's step replays as one fused update (tensorix._compile.optim_kernels)
                steps.append(Effect(what, fused_effect(fn) or fn, args,
                                    out.name if out is not None else None))
            else:
                node, what, key = payload
                rest: list = []
                steps.append(Read(node.name, what, key, rest))
                steps = rest  # what follows runs on this branch
    steps.append(Output(result, rebuild))
    return head


def _cut(tracer):
    """The trace's op nodes in pieces, and its boundaries in order (boundary k after piece
    k): a boundary names the last node made before it."""
    by_last: dict = {}
    for b in tracer.boundaries:
        by_last.setdefault(b[1], []).append(b)
    cuts = list(by_last.get(tracer.graph._root, ()))  # boundaries before any node
    pieces = [[] for _ in range(len(cuts) + 1)]
    for n in tracer.graph.nodes:
        if n.is_call or n.op in ("getitem", "data"):
            pieces[-1].append(n)
        for b in by_last.get(n, ()):
            cuts.append(b)
            pieces.append([])
    return pieces, cuts


def _nodes(args):
    return [n for n in _flat(args) if type(n) is Node]


def _flat(args):
    out = []
    map_args(args, lambda n: out.append(n) or n)
    return out


class Program:
    """A guard key's tree of steps (see the module docstring); ``retrace(flat, call)`` traces
    the function again for a branch not seen yet and returns ``(steps, result)``."""

    def __init__(self, steps, placeholders, root, retrace, stats):
        self.steps, self.placeholders, self.root = steps, placeholders, root
        self.retrace, self.stats = retrace, stats
        self.recompiles = 0

    def __call__(self, flat, call):
        from ..fx.tracer import flat_tensors

        env = dict(zip(self.placeholders, flat_tensors(flat)))
        rng = _rng_save() if self._has_reads(self.steps) else None
        steps, i = self.steps, 0
        while True:
            step = steps[i]
            if type(step) is Piece:
                outs = step.compiled(*[env[n] for n in step.inputs])
                env.update(zip(step.outputs, outs))
            elif type(step) is Effect:
                args, kwargs = map_args(step.args, lambda n: self._value(env, n))
                out = step.fn(*args, **kwargs)
                if step.out is not None:
                    env[step.out] = out
            elif type(step) is Read:
                key = read_key(env[step.node], step.what)
                rest = step.branches.get(key)
                if rest is None:
                    return self._new_branch(flat, call, rng)
                steps, i = rest, 0
                continue
            else:
                return step.rebuild([self._value(env, n) for n in step.result])
            i += 1

    def _value(self, env, n):
        if type(n) is not Node:
            return n
        if n.op == "constant":
            return n.target
        if n.op == "get_attr":
            return _get_attr(self.root, n.target)
        return env[n.name]

    def _new_branch(self, flat, call, rng):
        """A read took a value no trace has: trace again (the function runs eagerly, from
        the generator state this call started with) and graft the new branch on."""
        _rng_restore(rng)
        self.recompiles += 1
        self.stats["recompiles"] += 1
        steps, result = self.retrace(flat, call, self.recompiles > RECOMPILE_LIMIT)
        if steps is None or not _graft(self.steps, steps):
            self.steps = None  # the caller's entry turns eager
        return result

    @staticmethod
    def _has_reads(steps):
        return any(type(s) is Read for s in steps)


def _graft(old, new) -> bool:
    """Attach ``new``'s branch to the tree ``old`` (they must agree up to the new read)."""
    while True:
        for a, b in zip(old, new):
            if a.sig() != b.sig():
                return False
            if type(a) is Read:
                (key, rest), = b.branches.items()
                if key not in a.branches:
                    a.branches[key] = rest
                    return True
                old, new = a.branches[key], rest
                break
        else:
            return len(old) == len(new)


def explain_steps(steps, depth=0) -> list[str]:
    """Lines describing a tree of steps (pieces, breaks and their branches)."""
    lines = []
    pad = "  " * depth
    for s in steps:
        lines.append(pad + s.describe())
        if type(s) is Read:
            for key, rest in s.branches.items():
                lines.append(f"{pad}  when {s.what} = {_short(key)}:")
                lines += explain_steps(rest, depth + 2)
    return lines


def _short(key):
    return key if not isinstance(key, tuple) else f"<{key[0]} array {key[1]}>"


def _rng_save():
    from ..ops import random

    gens = [random.default_generator, *random._device_generators.values()]
    return [(g, g._bits.state) for g in gens]


def _rng_restore(saved):
    if saved:
        for g, state in saved:
            g._bits.state = state
