"""Graph-to-graph passes: dead-code elimination, common-subexpression elimination, constant
folding, and the elimination of redundant transposes and reshapes. Each edits the graph in
place and returns how many nodes it changed; :func:`optimize` runs them to a fixed point
together with the rewrite rules of :mod:`tensorix.fx.rewrite`.

Example::

    gm = tensorix.fx.symbolic_trace(fn, x)
    tensorix.fx.passes.optimize(gm.graph)
"""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .graph import Graph, Node

__all__ = ["is_pure", "dce", "cse", "constant_fold", "eliminate_movement", "optimize"]

# ops that must run even when their result looks unused or equal to another call's: they draw
# random numbers or have effects beyond their output
_IMPURE_WORDS = ("Dropout", "Rand", "Bernoulli", "Multinomial", "Normal", "Poisson", "Copy",
                 "Print", "Inplace")
_FOLD_LIMIT = 1 << 16  # fold a constant expression only if its result is this small (elements)


def is_pure(node: Node) -> bool:
    """Whether a call node may be removed when unused or merged with an equal call."""
    if not node.is_call:
        return node.op != "output"
    name = node.op.__name__
    return not any(w in name for w in _IMPURE_WORDS)


def dce(graph: Graph) -> int:
    """Remove pure nodes no one reads (output and placeholders stay). Walks back to front,
    so a chain of dead nodes goes in one pass."""
    removed = 0
    for node in reversed(graph.nodes):
        if node.op in ("output", "placeholder") or node.users or not is_pure(node):
            continue
        graph.erase_node(node)
        removed += 1
    return removed


def _key(value):
    """A hashable stand-in for an argument: nodes by identity, containers by content, tensors
    (constants) by identity; unhashable values make the node unmergeable (None)."""
    if type(value) is Node:
        return ("n", id(value))
    if type(value) in (tuple, list):
        parts = tuple(_key(v) for v in value)
        return None if None in parts else (type(value).__name__, parts)
    if isinstance(value, Tensor):
        return ("t", id(value))
    try:
        hash(value)
    except TypeError:
        return None
    return ("v", type(value).__name__, value)


def _const_key(node):
    """Small host constants (the scalars that ops lift) merge by value; others never."""
    t = node.target
    if node.meta.get("live") or not isinstance(t, Tensor) or type(t._data) is not np.ndarray \
            or t._data.size > 16:
        return None
    return ("c", t._dtype.name, t._data.shape, t._data.tobytes())


def cse(graph: Graph) -> int:
    """Merge pure call nodes (and getitems) with the same op and the same arguments."""
    seen: dict = {}
    merged = 0
    for node in graph.nodes:
        if node.op == "constant":
            key = _const_key(node)
        elif node.op in ("placeholder", "output", "get_attr") or not is_pure(node):
            continue
        else:
            key = _key((node.args, node.target))
        if key is None:
            continue
        key = (node.op, key)
        first = seen.get(key)
        if first is None:
            seen[key] = node
            continue
        node.replace_all_uses_with(first)
        graph.erase_node(node)
        merged += 1
    return merged


def _foldable(node):
    inputs = node.inputs
    return (node.is_call and is_pure(node) and inputs and
            all(i.op == "constant" and not i.meta.get("live") for i in inputs))


def constant_fold(graph: Graph) -> int:
    """Evaluate pure calls whose inputs are all (non-live) constants, when the result is small
    (a folded broadcast would trade a cheap view for a big array)."""
    from .graph_module import Interpreter

    folded = 0
    for node in graph.nodes:
        if not _foldable(node):
            continue
        shape = node.meta.get("shape")
        if shape is None or int(np.prod(shape)) > _FOLD_LIMIT:
            continue
        args = [i.target for i in node.inputs]
        values = iter(args)
        from .graph import map_args

        value = Interpreter(graph).run_node(node, map_args(node.args, lambda n: next(values)))
        if not isinstance(value, Tensor):
            continue
        with graph.inserting_before(node):
            const = graph.constant(value.detach(), **node.meta)
        node.replace_all_uses_with(const)
        graph.erase_node(node)
        folded += 1
    return folded


def _movement(node, name):
    return node.is_call and node.op.__name__ == name


def eliminate_movement(graph: Graph) -> int:
    """Transposes and reshapes that cancel: ``permute`` of a ``permute`` composes into one (or
    none when the composition is the identity), ``reshape`` of a ``reshape`` reads the first
    one's input, and a reshape to the input's own shape goes away."""
    changed = 0
    for node in graph.nodes:
        if node.users == {} or not node.is_call:
            continue
        src = node.args[0] if node.args else None
        if type(src) is not Node:
            continue
        if _movement(node, "Permute"):
            dims = tuple(node.args[1])
            if _movement(src, "Permute"):  # permute(permute(x, p), q) = permute(x, p[q])
                inner = tuple(src.args[1])
                dims = tuple(inner[d] for d in dims)
                node.set_args((src.args[0], dims) + node.args[2:])
                src, changed = src.args[0], changed + 1
            if dims == tuple(range(len(dims))):
                node.replace_all_uses_with(src)
                changed += 1
        elif _movement(node, "Reshape") and len(node.args) == 2:
            if _movement(src, "Reshape") and len(src.args) == 2:
                node.set_args((src.args[0], node.args[1]))
                src, changed = src.args[0], changed + 1
            if src.meta.get("shape") is not None and \
                    tuple(src.meta["shape"]) == tuple(node.meta.get("shape", ())):
                node.replace_all_uses_with(src)
                changed += 1
    return changed


def optimize(graph: Graph, rules: bool = True, max_rounds: int = 8) -> dict:
    """Run the passes until nothing changes; returns the count per pass."""
    from .rewrite import simplify

    counts = {"simplify": 0, "movement": 0, "fold": 0, "cse": 0, "dce": 0}
    for _ in range(max_rounds):
        step = {"simplify": simplify(graph) if rules else 0,
                "movement": eliminate_movement(graph), "fold": constant_fold(graph),
                "cse": cse(graph), "dce": dce(graph)}
        for k, v in step.items():
            counts[k] += v
        if not any(step.values()):
            break
    graph.lint()
    return counts
