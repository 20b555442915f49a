"""Equality saturation: the algebraic simplifier as an e-graph with extraction by cost.

The elementwise math of a graph (calls of the ops in ``rewrite._OPS`` whose arguments are all
tensors) is loaded into an e-graph: an *e-class* is a set of equal values, an *e-node* an op
over e-classes (or a leaf: any other graph node, or a one-element constant). Every rule of
:data:`~tensorix.fx.rewrite.RULES` and :data:`~tensorix.fx.rewrite.EQUALITIES` is matched
against every e-node and its replacement added and merged with the match's class, for a few
rounds or until nothing new appears (saturation); congruence is restored after each round
(equal children make equal parents). Rules that are not simplifications on their own, such as
commutativity, are safe here (an e-graph keeps both sides; a rewrite system would loop), and
open matches the other rules need: ``(3 * x) * 0.25`` becomes ``x * 0.75``.

Then each class's cheapest term is extracted (op costs: :data:`COST`; an original node wins a
tie, so a graph nothing improves is left as it was) and written back before the node it
replaces. As in the rewrite system, a rule applies only where every bound value has the
matched node's shape and dtype, so the extracted program has the same shapes and dtypes.

Example::

    n = saturate(gm.graph)      # x * 1 -> x, (3*x)*0.25 -> x*0.75, -(-x) -> x, ...
"""

from __future__ import annotations

from .graph import Graph, Node

__all__ = ["EGraph", "saturate", "COST"]

# relative op costs for extraction (a sign flip is cheaper than a multiply; transcendentals
# cost a few multiplies; a leaf or constant costs nothing)
COST = {"Neg": 0.5, "Add": 1.0, "Sub": 1.0, "Mul": 1.0, "Div": 2.0, "Exp": 4.0, "Log": 4.0,
        "Pow": 8.0}
_ROUNDS, _MAX_NODES = 6, 20_000


class EGraph:
    """E-classes over a union-find; e-nodes hash-consed as ``(op, child classes)``, leaves as
    ``("leaf", id(node))`` and constants as ``("const", value, dtype, shape)``."""

    def __init__(self):
        self.parent: list[int] = []
        self.nodes: dict = {}  # canonical e-node -> class
        self.classes: dict = {}  # root class -> list of e-nodes
        self.meta: dict = {}  # root class -> (shape, dtype)
        self.leaf: dict = {}  # ("leaf", id) / ("const", ...) -> the graph node or tensor
        self.original: dict = {}  # e-node -> the graph node it came from

    def find(self, c: int) -> int:
        root = c
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[c] != root:  # path compression
            self.parent[c], c = root, self.parent[c]
        return root

    def canon(self, enode):
        if enode[0] in ("leaf", "const"):
            return enode
        return (enode[0],) + tuple(self.find(c) for c in enode[1:])

    def add(self, enode, meta) -> int:
        enode = self.canon(enode)
        c = self.nodes.get(enode)
        if c is not None:
            return self.find(c)
        c = len(self.parent)
        self.parent.append(c)
        self.nodes[enode] = c
        self.classes[c] = [enode]
        self.meta[c] = meta
        return c

    def union(self, a: int, b: int) -> bool:
        a, b = self.find(a), self.find(b)
        if a == b:
            return False
        if len(self.classes[a]) < len(self.classes[b]):
            a, b = b, a
        self.parent[b] = a
        self.classes[a] += self.classes.pop(b)
        self.meta.pop(b)
        return True

    def rebuild(self) -> None:
        """Re-canonicalize every e-node; merge classes whose e-nodes became equal."""
        changed = True
        while changed:
            changed = False
            table: dict = {}
            for c in list(self.classes):
                root = self.find(c)
                for enode in self.classes.get(c, ()):
                    e = self.canon(enode)
                    other = table.get(e)
                    if other is not None and self.find(other) != self.find(root):
                        self.union(other, root)
                        changed = True
                    table[e] = self.find(root)
            self.nodes = table
            for c in list(self.classes):
                self.classes[c] = list(dict.fromkeys(self.canon(e) for e in self.classes[c]))
        original: dict = {}
        for e, n in self.original.items():
            original.setdefault(self.canon(e), n)
        self.original = original

    # -- matching -------------------------------------------------------------------------
    def match(self, pattern, c: int, env: dict):
        """Every extension of ``env`` under which class ``c`` matches ``pattern``."""
        from .rewrite import _scalar_value

        c = self.find(c)
        if isinstance(pattern, str):
            if pattern.startswith("?"):
                bound = env.get(pattern)
                if bound is None:
                    yield {**env, pattern: c}
                elif self.find(bound) == c:
                    yield env
                return
            for enode in self.classes[c]:  # "#a": a one-element constant
                if enode[0] == "const":
                    yield {**env, pattern: (self.leaf[enode], c)}
            return
        head = pattern[0]
        for enode in list(self.classes[c]):
            if head == "const":
                if enode[0] == "const" and _scalar_value(self.leaf[enode]) == pattern[1]:
                    yield env
                continue
            if enode[0] != head or len(enode) != len(pattern):
                continue
            envs = [env]
            for sub, child in zip(pattern[1:], enode[1:]):
                envs = [e2 for e in envs for e2 in self.match(sub, child, e)]
            yield from envs

    def build(self, repl, env, meta) -> int:
        """The class of replacement ``repl`` under ``env`` (e-nodes added as needed)."""
        if isinstance(repl, str):
            return env[repl] if repl.startswith("?") else env[repl][1]
        if repl[0] == "fold":
            value = repl[1](*[env[name][0] for name in repl[2:]]).detach()
            key = _const_key(value)
            self.leaf.setdefault(key, value)
            return self.add(key, (tuple(value.shape), value.dtype))
        children = [self.build(r, env, meta) for r in repl[1:]]
        return self.add((repl[0], *children), meta)

    def saturate(self, rules) -> None:
        for _ in range(_ROUNDS):
            if len(self.nodes) > _MAX_NODES:
                break
            matches = []
            for c in list(self.classes):
                for rule in rules:
                    for env in self.match(rule.pattern, c, {}):
                        # every bound value must have the matched class's shape and dtype
                        meta = self.meta[self.find(c)]
                        if rule.any_meta or all(self.meta[self.find(v)] == meta
                                                for k, v in env.items() if k[0] == "?"):
                            matches.append((c, rule, env))
            grew = False
            for c, rule, env in matches:
                new = self.build(rule.replacement, env, self.meta[self.find(c)])
                grew |= self.union(c, new)
            self.rebuild()
            if not grew:
                break

    # -- extraction -----------------------------------------------------------------------
    def extract(self) -> dict:
        """``{class: (cost, e-node)}``: each class's cheapest e-node, originals winning ties
        (costs found by iterating to a fixed point: the e-graph may have cycles)."""
        best: dict = {}
        changed = True
        while changed:
            changed = False
            for c, enodes in self.classes.items():
                for enode in enodes:
                    cost = self._cost(enode, best)
                    if cost is None:
                        continue
                    key = (cost, enode not in self.original)
                    old = best.get(c)
                    if old is None or key < (old[0], old[1] not in self.original):
                        best[c] = (cost, enode)
                        changed = True
        return best

    def _cost(self, enode, best):
        if enode[0] in ("leaf", "const"):
            return 0.0
        total = COST[enode[0]]
        for child in enode[1:]:
            got = best.get(self.find(child))
            if got is None:
                return None
            total += got[0]
        return total


def _const_key(t):
    data = t._data
    return ("const", data.reshape(-1)[0].item(), t._dtype.name, tuple(data.shape))


def saturate(graph: Graph, rules) -> int:
    """Simplify ``graph``'s elementwise math by equality saturation over ``rules``; returns
    how many nodes were replaced by a cheaper equal term (the dead ones are left to DCE)."""
    from .rewrite import _OPS, _scalar_value

    eg = EGraph()
    cls: dict = {}  # graph node -> class
    order = {n: i for i, n in enumerate(graph.nodes)}

    def class_of(node):
        c = cls.get(node)
        if c is None:  # an input of the region: a leaf (or a constant, matched by value)
            meta = (node.meta.get("shape"), node.meta.get("dtype"))
            if node.op == "constant" and not node.meta.get("live") and \
                    _scalar_value(node.target) is not None:
                key = _const_key(node.target)
                eg.leaf.setdefault(key, node.target)
            else:
                key = ("leaf", id(node))
                eg.leaf[key] = node
            c = cls[node] = eg.add(key, meta)
            eg.original.setdefault(key, node)
        return c

    region = []
    for node in graph.nodes:
        if node.is_call and node.op.__name__ in COST and node.args and \
                all(type(a) is Node for a in node.args) and node.op is _OPS[node.op.__name__]:
            enode = (node.op.__name__, *[class_of(a) for a in node.args])
            cls[node] = eg.add(enode, (node.meta.get("shape"), node.meta.get("dtype")))
            eg.original.setdefault(eg.canon(enode), node)
            region.append(node)
    if not region:
        return 0
    from .rewrite import EQUALITIES, RULES

    eg.saturate(RULES + EQUALITIES if rules is None else rules)
    best = eg.extract()
    return _write_back(graph, eg, best, cls, region, order)


def _write_back(graph, eg, best, cls, region, order) -> int:
    from .rewrite import _OPS

    built: dict = {}  # class -> (node, position) of a realization made so far
    replaced = 0

    def realize(c, before, pos):
        c = eg.find(c)
        have = built.get(c)
        if have is not None and have[1] < pos:
            return have[0]
        enode = best[c][1]
        if enode[0] in ("leaf", "const"):
            node = eg.original.get(enode)
            if isinstance(node, Node) and order.get(node, pos) < pos:
                return node
            if enode[0] == "leaf":
                return None  # defined after this point: cannot be read here
            value = eg.leaf[enode]
            with graph.inserting_before(before):
                node = graph.constant(value, shape=tuple(value.shape), dtype=value.dtype,
                                      device=value.device)
        else:
            args = [realize(ch, before, pos) for ch in enode[1:]]
            if any(a is None for a in args):
                return None
            node = eg.original.get(enode)
            if not (node is not None and order.get(node, pos) < pos and
                    list(node.args) == args):
                shape, dtype = eg.meta[c]
                device = before.meta.get("device")
                with graph.inserting_before(before):
                    node = graph.call(_OPS[enode[0]], tuple(args), shape=shape, dtype=dtype,
                                      device=device)
        built[c] = (node, pos - 0.5)
        return node

    for node in region:
        if not node.users:
            continue
        c = eg.find(cls[node])
        if best[c][1] in eg.original and eg.original[best[c][1]] is node:
            built.setdefault(c, (node, order[node]))
            continue
        new = realize(c, node, order[node])
        if new is not None and new is not node:
            node.replace_all_uses_with(new)
            replaced += 1
    return replaced
