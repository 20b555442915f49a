"""Graph rewrites the compiler applies before fusion, where the backward's generic form costs
memory traffic that a direct form avoids.

``scatters_to_cat``: the backward of ``split``/``chunk`` (or of slices that tile a dim) is, per
piece, an IndexBackward (zeros of the whole shape with the piece's gradient written in) and a
sum of those; when the pieces tile one dim exactly, the sum is the pieces' concatenation: one
Cat instead of n full-size zero fills, n scatters and n - 1 full-size adds (GPT's qkv split).

``sums_through_reshapes``: a bias's gradient is ``Sum(Reshape(g, (B*T, C)), (0,))`` where
``g`` is ``(B, T, C)``: as ``Sum(g, (0, 1))`` it is a column sum of ``g``'s own shape, which
the fusion adds to the kernel that computes ``g`` (one pass fewer over it).

Example::

    count = scatters_to_cat(graph)   # Add(IndexBackward(g0, s, [:, :, 0:128]), ...) -> Cat
    count = sums_through_reshapes(graph)   # Sum(Reshape(g, (1024, 128)), (0,)) -> Sum(g, (0, 1))
"""

from __future__ import annotations

from ..ops.reduce import Sum
from ..ops.shape import Cat

__all__ = ["scatters_to_cat", "sums_through_reshapes"]


def scatters_to_cat(graph) -> int:
    """Rewrite every sum of IndexBackward pieces that tile one dim into one Cat; returns how
    many sums were rewritten (the dead nodes are left to dead-code elimination)."""
    count = 0
    for node in list(graph.nodes):
        if not _is(node, "Add") or any(_in_tree(u, node) for u in node.users):
            continue  # not the root of a sum
        pieces = _pieces(node)
        if pieces is None:
            continue
        dim, ordered = pieces
        with graph.inserting_before(node):
            cat = graph.call(Cat, (dim, *[p.args[0] for p in ordered]), **dict(node.meta))
        node.replace_all_uses_with(cat)
        count += 1
    return count


def _is(node, name):
    return node.is_call and node.op.__name__ == name


def _in_tree(user, node):
    """``user`` is an Add of the same shape that ``node`` feeds alone (so it is the root)."""
    return _is(user, "Add") and user.meta.get("shape") == node.meta.get("shape") and \
        len(node.users) == 1


def _pieces(root):
    """``(dim, pieces in order)`` when ``root`` is a sum, of its own shape and dtype, of
    IndexBackward nodes read only there whose slices (step 1, one dim) tile that dim; else
    None."""
    shape, dtype = root.meta.get("shape"), root.meta.get("dtype")
    leaves, stack = [], [root]
    while stack:  # explicit stack: no recursion on a long sum
        n = stack.pop()
        if n.meta.get("shape") != shape or n.meta.get("dtype") is not dtype:
            return None
        if _is(n, "Add") and (n is root or len(n.users) == 1):
            stack.extend(n.args[:2])
        elif _is(n, "IndexBackward") and len(n.users) == 1:
            leaves.append(n)
        else:
            return None
    if len(leaves) < 2:
        return None
    spans = [_span(leaf, shape) for leaf in leaves]
    if any(s is None for s in spans) or len({d for d, _, _ in spans}) != 1:
        return None
    order = sorted(range(len(leaves)), key=lambda i: spans[i][1])
    dim, end = spans[0][0], 0
    for i in order:
        if spans[i][1] != end:
            return None  # a gap or an overlap: not a concatenation
        end = spans[i][2]
    if end != shape[dim]:
        return None
    return dim, [leaves[i] for i in order]


def _span(leaf, shape):
    """``(dim, start, stop)`` of an IndexBackward whose index is full slices but one
    (step 1), else None."""
    index = leaf.args[2]
    if index.adv is not None or index.new_dims or tuple(leaf.args[1]) != tuple(shape):
        return None
    basic = [b for b in index.basic if b is not Ellipsis]
    if len(basic) > len(shape) or any(type(b) is not slice for b in basic):
        return None
    cut = [(d, b) for d, b in enumerate(basic) if b != slice(None)]
    if len(cut) != 1:
        return None
    d, b = cut[0]
    start, stop, step = b.indices(shape[d])
    if step != 1 or stop <= start or tuple(leaf.args[0].meta.get("shape", ())) != \
            tuple(shape[:d]) + (stop - start,) + tuple(shape[d + 1:]):
        return None
    return d, start, stop


def sums_through_reshapes(graph) -> int:
    """Rewrite ``Sum(Reshape(x, (prod(x.shape[:m]), *x.shape[m:])), (0,))`` (no keepdim) as
    ``Sum(x, (0, ..., m - 1))``; returns how many sums were rewritten."""
    count = 0
    for node in list(graph.nodes):
        if not _is(node, "Sum") or not _is(node.args[0], "Reshape"):
            continue
        reshape = node.args[0]
        src, (_, dims, keepdim, dtype) = reshape.args[0], node.args
        shape, merged = src.meta.get("shape"), reshape.meta.get("shape")
        if shape is None or merged is None or keepdim or tuple(dims) != (0,):
            continue
        m = len(shape) - len(merged) + 1
        if m < 2 or tuple(merged[1:]) != tuple(shape[m:]):
            continue
        # right after x: before x's other readers, so the fusion may add it to x's kernel
        with graph.inserting_after(src):
            flat = graph.call(Sum, (src, tuple(range(m)), False, dtype), **dict(node.meta))
        node.replace_all_uses_with(flat)
        count += 1
    return count
