"""Running an optimized graph: a flat schedule of steps over a slot array.

Planning (once per guard set): the passes of tensorix.fx (simplify, movement elimination,
constant folding, CSE, DCE), fusion into groups, one kernel per group, and the memory plan.
Running: each step reads its input slots, writes its output slot(s), and the slots whose
value no later step reads are cleared right after, so a buffer goes back to the allocator as
soon as it is dead (the plan's reuse, as the allocator's). Unfused nodes run through their
primitive's ``apply`` with recording off; a fused group runs its kernel on raw arrays.
"""

from __future__ import annotations

import operator

from ..autograd.grad_mode import modes
from ..fx.graph import Graph, Node, map_args
from ..fx.graph_module import _get_attr
from ..fx.memory import last_uses, plan_memory
from ..fx.passes import optimize
from ..nn.functional._core import Linear
from ..ops.linalg import MatMul
from ..ops.movement import Permute, Reshape
from ..ops.shape import Cat
from ..tensor import _make
from .cat_into import cat_pieces, cat_step, gemm_into, scale_into
from .codegen import KernelPlan
from .decompose import decompose
from .fusion import partition
from .gemm_steps import linear_step, matmul_step
from .kernels import build
from .layouts import matmul_into, permute_view, permuted_reader, reshape_view
from .rewrites import scatters_to_cat, sums_through_reshapes
from .tune import choose

__all__ = ["CompiledGraph"]

# steps whose closure a function of their own makes from the step's fields
_DIRECT = {"matmul_into": matmul_into, "reshape": reshape_view, "permute": permute_view,
           "gemm_into": gemm_into, "scale_into": scale_into, "cat_step": cat_step,
           "matmul": matmul_step, "linear": linear_step}
_VIEWS = {Reshape: "reshape", Permute: "permute"}  # their steps by op, for static dims


class CompiledGraph:
    """``CompiledGraph(graph, root)(*inputs)`` runs the optimized graph; ``report`` says what
    the passes, fusion and memory plan did."""

    def __init__(self, graph: Graph, root=None, *, fuse: bool = True, passes: bool = True,
                 prefer: str = "auto", chunks: dict | None = None, autotune: bool = False,
                 tier_up: int = 0):
        self.graph, self.root, self.prefer, self.autotune = graph, root, prefer, autotune
        self.tier_up = tier_up  # see tensorix._compile.tune: numba after this many calls
        self.report = {"nodes_before": len(graph.nodes)}
        if passes:
            self.report["cat"] = scatters_to_cat(graph)  # before DCE: the pieces die there
            self.report["sum_reshape"] = sums_through_reshapes(graph)
            if fuse:  # whole layer norms and softmaxes into ops the fusion makes row kernels
                self.report["decomposed"] = decompose(graph)
            self.report["passes"] = optimize(graph)
        self.groups = partition(graph) if fuse else []
        self.plans = [KernelPlan(g) for g in self.groups]
        self.chunks = chunks or {}
        self.memory = plan_memory(graph.nodes)
        self.report.update(nodes_after=len(graph.nodes), groups=len(self.groups),
                           fused_nodes=sum(len(g.nodes) for g in self.groups),
                           peak_bytes=self.memory.peak_bytes,
                           no_reuse_bytes=self.memory.no_reuse_bytes)
        self._schedule()
        self._kernels = [None] * len(self.plans)
        self._runs = self._closures()

    def _schedule(self):
        """Steps in program order; a group's step sits at its last member."""
        member = {}
        for gi, g in enumerate(self.groups):
            for n in g.nodes:
                member[n] = gi
        slot = {}
        steps = []
        placeholders = []
        for n in self.graph.nodes:
            if n.op == "output":
                continue
            gi = member.get(n)
            if gi is not None:
                g = self.groups[gi]
                if n is g.nodes[-1]:
                    for o in self.plans[gi].outputs:
                        slot[o] = len(slot)
                    steps.append(("group", gi, g.inputs))
                continue
            slot[n] = len(slot)
            if n.op == "placeholder":
                placeholders.append(slot[n])
            else:
                steps.append(("node", n, n.inputs))
        self.slot, self.placeholders = slot, placeholders
        out = self.graph.output_node.args[0]
        outs = [n for n in _flat_nodes(out)]
        last = last_uses(steps, lambda s: s[2], outs)
        self._free = [[] for _ in steps]
        for v, i in last.items():
            if i < len(steps):
                self._free[i].append(slot[v])
        # GEMMs written into the Cat that joins them (tensorix._compile.cat_into)
        self._cat = cat_pieces(self.graph)
        self._steps = [self._compile_step(s) for s in steps]
        self._out = out

    def _compile_step(self, step):
        kind, what, _ = step
        slot = self.slot
        if kind == "group":
            ins = [slot[i] for i in self.groups[what].inputs]
            plan = self.plans[what]
            outs = [slot[o] for o in plan.outputs]
            dtypes = [o.meta["dtype"] for o in plan.outputs]
            return ("group", what, ins, outs, dtypes)
        node = what
        if node.op == "constant":
            return ("const", slot[node], node.target)
        if node.op == "get_attr":
            return ("attr", slot[node], node.target)
        if node.op == "getitem":
            return ("getitem", slot[node], slot[node.args[0]], node.target)
        if node.op == "data":
            return ("data", slot[node], slot[node.args[0]])
        entry = self._cat.get(node)
        if entry is not None:
            if node.op is Cat:
                return ("cat_step", slot[node], node.args[0], [slot[p] for p in node.args[1:]],
                        entry, node.meta["dtype"])
            return ("gemm_into" if node.op is MatMul else "scale_into", slot[node],
                    slot[node.args[0]], slot[node.args[1]], entry, node.meta["dtype"])
        perm = permuted_reader(node)
        if perm is not None and len(node.args) == 2 and all(type(a) is Node for a in node.args):
            # readers permute it: the GEMM writes that layout (tensorix._compile.layouts)
            return ("matmul_into", slot[node], slot[node.args[0]], slot[node.args[1]], perm,
                    node.meta["dtype"])
        if node.op is MatMul and len(node.args) == 2 and all(type(a) is Node for a in node.args):
            return ("matmul", slot[node], slot[node.args[0]], slot[node.args[1]],
                    node.meta["dtype"])  # raw GEMM steps (tensorix._compile.gemm_steps)
        if node.op is Linear and len(node.args) == 3 and \
                all(type(a) is Node for a in node.args[:2]) and \
                (node.args[2] is None or type(node.args[2]) is Node):
            bias = node.args[2]
            return ("linear", slot[node], slot[node.args[0]], slot[node.args[1]],
                    None if bias is None else slot[bias], node.meta["dtype"])
        if node.op in _VIEWS and len(node.args) == 2 and type(node.args[0]) is Node \
                and type(node.args[1]) in (tuple, list) \
                and all(type(d) is int for d in node.args[1]):  # a view of static dims
            return (_VIEWS[node.op], slot[node], slot[node.args[0]], tuple(node.args[1]))
        args = map_args(node.args, lambda n: _Slot(slot[n]))
        flat = all(type(a) is _Slot or type(a) not in (tuple, list, dict) for a in args)
        return ("call", slot[node], node.op.apply, args, flat)

    def _kernel(self, gi, device, arrays):
        k = self._kernels[gi]
        if k is None:
            plan = self.plans[gi]
            if self.prefer == "auto":  # numba or NumPy blocks: measured (tensorix._compile.tune)
                k = choose(plan, device, arrays, chunks=self.autotune, tier_up=self.tier_up)
            else:
                k = build(plan, device, self.prefer, self.chunks.get(plan.key))
            self._kernels[gi] = k
        return k

    def __call__(self, *inputs):
        env = [None] * len(self.slot)
        if len(inputs) != len(self.placeholders):
            raise TypeError(f"compiled graph: expected {len(self.placeholders)} inputs, got "
                            f"{len(inputs)}")
        for s, x in zip(self.placeholders, inputs):
            env[s] = x
        state = modes.state
        enabled = state.enabled
        state.enabled = False  # the compiled graph records nothing (autograd wraps it)
        try:
            for run in self._runs:
                run(env)
            return map_args(self._out, lambda n: env[self.slot[n]])
        finally:
            state.enabled = enabled

    def _closures(self):
        """Each step as one closure over its slots (and the slots it frees after), made once:
        a call then costs one Python call per step, no dispatch on the step's kind, no tuple
        unpacking and no loop over an empty free list (~400 steps per GPT training step)."""
        runs = []
        for step, free in zip(self._steps, self._free):
            run = self._closure(step)
            if free:
                run = _freeing(run, tuple(free))
            runs.append(run)
        return runs

    def _closure(self, step):
        kind = step[0]
        if kind == "call":
            return _call_closure(*step[1:])
        if kind in _DIRECT:
            return _DIRECT[kind](*step[1:])
        if kind == "group":
            _, gi, ins, outs, dtypes = step
            pairs = list(zip(outs, dtypes))
            kernel = self._kernels  # the run of group gi once chosen (self._kernel)

            def run(env):
                arrays = [env[i]._data for i in ins]
                k = kernel[gi] or self._kernel(gi, env[ins[0]].device, arrays)
                for (s, dt), arr in zip(pairs, k(arrays)):
                    env[s] = _make(arr, dt)
            return run
        if kind == "const":
            _, out, value = step

            def run(env):
                env[out] = value
            return run
        if kind == "attr":
            _, out, target = step
            root = self.root

            def run(env):
                env[out] = _get_attr(root, target)
            return run
        if kind == "data":
            _, out, src = step

            def run(env):
                env[out] = env[src]._data
            return run
        _, out, src, index = step

        def run(env):
            env[out] = env[src][index]
        return run

    def kernel_kinds(self) -> list:
        """Which code each group ran as ("numba", "numpy", "cuda"; None before the first
        run)."""
        return [getattr(k, "kind", None) for k in self._kernels]


class _Slot:
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


def _call_closure(out, apply, args, flat):
    """A call step as a closure: its argument slots unpacked once (one or two tensors, a
    tensor and a constant: the common calls, spelled out)."""
    if not flat:  # tensors inside tuples or lists (Cat's list): resolvers made once
        get = _resolver(args)

        def run(env):
            env[out] = apply(*get(env))
        return run
    slots = [a.i for a in args if type(a) is _Slot]
    if len(slots) == len(args) == 1:
        a, = slots

        def run(env):
            env[out] = apply(env[a])
        return run
    if len(slots) == len(args) == 2:
        a, b = slots

        def run(env):
            env[out] = apply(env[a], env[b])
        return run
    if len(args) == 2 and type(args[0]) is _Slot:  # a tensor and a constant
        a, c = args[0].i, args[1]

        def run(env):
            env[out] = apply(env[a], c)
        return run
    pos = [(k, a.i) for k, a in enumerate(args) if type(a) is _Slot]
    template = list(args)

    def run(env):
        vals = template.copy()
        for k, i in pos:
            vals[k] = env[i]
        env[out] = apply(*vals)
    return run


def _freeing(run, free):
    """``run`` then clear the slots whose value no later step reads (back to the allocator)."""
    if len(free) == 1:
        s, = free

        def run_free(env):
            run(env)
            env[s] = None
        return run_free

    def run_free(env):
        run(env)
        for s in free:
            env[s] = None
    return run_free


def _resolver(args):
    """A function ``env -> args`` with each _Slot replaced by its value: slots gathered by one
    C ``itemgetter``, constants (no slot inside) returned as they are, nested tuples and lists
    rebuilt; a dict goes through :func:`_resolve`."""
    if type(args) is _Slot:
        return operator.itemgetter(args.i)
    if not _has_slot(args):
        return lambda env: args
    if type(args) in (tuple, list):
        typ = type(args)
        if all(type(a) is _Slot for a in args):
            get = operator.itemgetter(*[a.i for a in args])
            if len(args) == 1:
                return lambda env: typ((get(env),))
            return get if typ is tuple else lambda env: list(get(env))
        parts = [_resolver(a) for a in args]
        return lambda env: typ([f(env) for f in parts])
    return lambda env: _resolve(args, env)


def _has_slot(args):
    if type(args) is _Slot:
        return True
    if type(args) in (tuple, list):
        return any(_has_slot(a) for a in args)
    if type(args) is dict:
        return any(_has_slot(a) for a in args.values())
    return False


def _resolve(args, env):
    if type(args) is _Slot:
        return env[args.i]
    if type(args) in (tuple, list):
        return type(args)(_resolve(a, env) for a in args)
    if type(args) is dict:
        return {k: _resolve(v, env) for k, v in args.items()}
    return args


def _flat_nodes(x):
    if type(x) is Node:
        return [x]
    if type(x) in (tuple, list):
        return [n for a in x for n in _flat_nodes(a)]
    if type(x) is dict:
        return [n for a in x.values() for n in _flat_nodes(a)]
    return []
