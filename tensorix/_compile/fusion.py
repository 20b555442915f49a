"""Elementwise + reduction fusion: partition a graph's call nodes into fused groups.

A group is a set of elementwise nodes of one output shape and dtype (their inputs broadcast
to it) and reductions of its members over a leading (*outer*: per column) or trailing
(*inner*: per row) block of its dims, all split at the same dim ``k``; it runs as one kernel
at the position of its last member. A node joins the group of a producer only when no node
outside the group reads a member between them (so running the group late is still a valid
schedule).

**Reduction, then broadcast**: an inner sum, max or min kept as ``(..., 1)`` (keepdim) is a
*row value* the group's later members may read, and elementwise math on row values (a
mean's division, ``rsqrt(var + eps)``) joins the group as *row members*: layer norm's
statistics, its normalisation and its backward, or a softmax, become one kernel that makes
a few passes over each row while the row is in cache (codegen.py's phases). An outer sum or
an inner one without keepdim is only an output: no member may read it.

Example::

    groups = partition(graph)
    for g in groups: print(g)      # FusedGroup(mul, add, exp -> exp; inputs x, y)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..fx.graph import Graph, Node
from .exprs import fusable

__all__ = ["FusedGroup", "partition", "reduction_split"]


@dataclass(eq=False)
class FusedGroup:
    """Members in program order; ``inputs`` (nodes read from outside), ``outputs`` (members
    read outside), ``shape``/``dtype`` of the elementwise part, and the sums fused in."""

    nodes: list = field(default_factory=list)
    shape: tuple = ()
    dtype: object = None
    reductions: list = field(default_factory=list)
    split: tuple | None = None  # (k, "inner"|"outer") fixed by the first reduction
    # per reduction: (kind "sum"|"max"|"min", side "inner"|"outer", readable by members)
    reduce_info: dict = field(default_factory=dict)
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)

    def row_shape(self):
        """The shape of a row value (an inner reduction kept as (..., 1)), or None."""
        if self.split is None:
            return None
        k = self.split[0]
        return tuple(self.shape[:k]) + (1,) * (len(self.shape) - k)

    def __repr__(self):
        names = ", ".join(n.name for n in self.nodes)
        return (f"FusedGroup({names} -> {', '.join(n.name for n in self.outputs)}; inputs "
                f"{', '.join(n.name for n in self.inputs)})")


def reduction_split(node: Node, shape: tuple):
    """``(k, side)`` when ``node`` (a Sum/SumTo of a value of ``shape``) sums dims ``k..`` (side
    "inner") or dims ``..k-1`` (side "outer") with no dtype change, or (an EvenSelect max or
    min) takes the extreme over dims ``k..``; else None."""
    name = node.op.__name__
    nd = len(shape)
    if name == "EvenSelect":
        _, how, dims, _keepdim = node.args
        dims = tuple(sorted(d % nd for d in dims)) if nd else ()
        if how not in ("max", "min") or not dims or dims != tuple(range(dims[0], nd)):
            return None
        return (dims[0], "inner")
    if name == "Sum":
        _, dims, _keepdim, dtype = node.args
        if dtype is not node.args[0].meta.get("dtype"):
            return None
        dims = tuple(sorted(d % nd for d in dims)) if nd else ()
        if not dims:
            return None
        if dims == tuple(range(dims[0], nd)):
            return (dims[0], "inner")
        if dims == tuple(range(len(dims))):
            return (len(dims), "outer")
        return None
    if name == "SumTo":
        target = tuple(node.args[1])
        lead = nd - len(target)
        if lead > 0 and target == tuple(shape[lead:]):
            return (lead, "outer")
    return None


def _ew_ok(node):
    meta = node.meta
    if not fusable(node) or "shape" not in meta or meta.get("dtype") is None:
        return False
    if meta["dtype"].name not in ("float32", "float64", "bool"):
        return False
    return all(i.meta.get("shape") is not None and i.meta.get("dtype") is not None and
               i.meta["dtype"].name in ("float32", "float64", "bool") and
               len(i.meta["shape"]) <= len(meta["shape"]) for i in node.inputs)


def _can_join(group, node, pos):
    """No outside user of a member sits before ``node`` (the group runs where node is)."""
    where = pos[node]
    for m in group.nodes:
        for u in m.users:
            if u is not node and u not in group.members and pos[u] < where:
                return False
    return True


# Ops that make a group of their own: their eager kernels take several passes over memory
# (NumPy's tanh and ~10 arithmetic passes for GELU's backward), where the fused loop takes one
# with a vectorized float32 tanh (1.8x the forward, 4x the backward, measured on 2^19 floats)
ALONE = frozenset({"Gelu", "GeluTanhBackward"})


def partition(graph: Graph, min_size: int = 2) -> list:
    """The fused groups of ``graph`` (groups of fewer than ``min_size`` nodes are dropped:
    a lone op runs as fast unfused, except the ops in :data:`ALONE`)."""
    nodes = graph.nodes
    pos = {n: i for i, n in enumerate(nodes)}
    group_of: dict = {}
    readers: dict = {}  # node -> the members that read it (for sibling fusion)
    for node in nodes:
        if not node.is_call:
            continue
        if _ew_ok(node):
            _place_elementwise(node, group_of, pos, readers)
        elif node.op.__name__ in ("Sum", "SumTo", "EvenSelect") and \
                type(node.args[0]) is Node:
            _place_reduction(node, group_of, pos, readers)
        if node in group_of:
            for i in node.inputs:
                readers.setdefault(i, []).append(node)
    groups = []
    for g in dict.fromkeys(group_of.values()):
        if len(g.nodes) >= min_size or g.nodes[0].op.__name__ in ALONE:
            _finish(g)
            groups.append(g)
    return groups


def _new_group(node, like=None):
    like = like or node
    g = FusedGroup([node], tuple(like.meta["shape"]), like.meta["dtype"])
    g.members = {node}
    return g


def _siblings(node, group_of, readers):
    """Groups that read one of ``node``'s inputs (horizontal fusion: one pass over the shared
    input, as layer norm's backward reads its incoming gradient four times)."""
    out = []
    for i in node.inputs:
        for m in readers.get(i, ()):
            g = group_of[m]
            if g not in out:
                out.append(g)
    return out


def _readable(g, n):
    """Whether members of ``g`` may read its member ``n`` (a full or row value; not an
    output-only reduction)."""
    info = g.reduce_info.get(n)
    return info is None or info[2]


def _row_input_ok(shape, g):
    """An outside input of a row member: one value per row (``(*lead, 1, ...)``) or a
    scalar, so the row phase reads it at ``[a, 0]``."""
    k, nd = g.split[0], len(g.shape)
    s = (1,) * (nd - len(shape)) + tuple(shape)
    return all(d == 1 for d in s[k:]) and (s[:k] == tuple(g.shape[:k]) or
                                           all(d == 1 for d in s[:k]))


def _fits(g, node, shape):
    """``node`` (of ``shape``) may be a member of ``g``: a full member, or a row member
    (row-shaped, reading a row value of ``g``, its other inputs per row or scalars)."""
    if g.shape == shape:
        return True
    if g.row_shape() != shape:
        return False
    return all(_row_input_ok(i.meta["shape"], g) for i in node.inputs if i not in g.members)


def _place_elementwise(node, group_of, pos, readers):
    shape = tuple(node.meta["shape"])
    # a group whose output-only reduction this node reads cannot take it: that reduction is
    # done only at the end of the kernel
    blocked = {group_of[i] for i in node.inputs if i in group_of and
               not _readable(group_of[i], i)}
    candidates = []
    for i in node.inputs:
        g = group_of.get(i)
        if g is not None and g not in candidates and g not in blocked and \
                _fits(g, node, shape) and _can_join(g, node, pos):
            candidates.append(g)
    if not candidates:  # no producer's group takes it: a sibling's may
        candidates = [g for g in _siblings(node, group_of, readers)
                      if g not in blocked and g.shape == shape and _can_join(g, node, pos)][:1]
    if not candidates:
        group_of[node] = _new_group(node)
        return
    target = candidates[0]
    for other in candidates[1:]:  # node reads several groups: they become one
        if other.shape != target.shape or \
                (other.split and target.split and other.split[0] != target.split[0]):
            continue
        target.split = target.split or other.split
        for m in other.nodes:
            group_of[m] = target
        target.nodes = sorted(target.nodes + other.nodes, key=pos.__getitem__)
        target.members |= other.members
        target.reductions += other.reductions
        target.reduce_info.update(other.reduce_info)
    if not _fits(target, node, shape):  # a merge changed nothing it needs, but be sure
        group_of[node] = _new_group(node)
        return
    target.nodes.append(node)
    target.members.add(node)
    group_of[node] = target


def _place_reduction(node, group_of, pos, readers):
    src = node.args[0]
    if src in group_of:
        g = group_of[src]
        if src in g.reductions or tuple(src.meta["shape"]) != g.shape:
            return
    else:  # a reduction of an input: with a group that reads it too, or a group of its own
        if not _ew_ok_value(src) or node.meta.get("dtype") is not src.meta["dtype"]:
            return
        shape = tuple(src.meta["shape"])
        g = next((g for g in _siblings(node, group_of, readers)
                  if g.shape == shape and _reduction_fits(g, node)), None)
        if g is None:
            g = _new_group(node, like=src)
            g.nodes, g.members = [], set()
    if not _can_join(g, node, pos) or not _reduction_fits(g, node):
        return
    split = reduction_split(node, g.shape)
    kind = node.args[1] if node.op.__name__ == "EvenSelect" else "sum"
    keepdim = node.op.__name__ != "SumTo" and node.args[2]
    g.split = g.split or split
    g.nodes.append(node)
    g.members.add(node)
    g.reductions.append(node)
    g.reduce_info[node] = (kind, split[1], split[1] == "inner" and bool(keepdim))
    group_of[node] = g


def _reduction_fits(g, node):
    split = reduction_split(node, g.shape)
    return split is not None and (g.split is None or g.split[0] == split[0]) and \
        node.meta.get("dtype") is g.dtype


def _ew_ok_value(n):
    meta = n.meta
    return meta.get("shape") is not None and meta.get("dtype") is not None and \
        meta["dtype"].name in ("float32", "float64")


def _finish(g):
    members = g.members
    seen, inputs = set(), []
    for n in g.nodes:
        for i in n.inputs:
            if i not in members and i not in seen:
                seen.add(i)
                inputs.append(i)
    g.inputs = inputs
    g.outputs = [n for n in g.nodes if any(u not in members for u in n.users)]
