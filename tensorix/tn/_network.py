"""Tensor networks of tensors with named indices, contracted along opt_einsum/cotengra paths.

A :class:`Node` is a Tensor with one name per dimension; a :class:`TensorNetwork` is a list of
nodes in which an index name shared by two nodes is a bond (summed on contraction) and a name
seen once is open (kept). Contraction plans on index sets and sizes only (opt_einsum, or
cotengra when asked for and installed), then runs the path as pairwise ``tensordot`` calls, so
it works on every device and dtype and is differentiable.
"""

from __future__ import annotations

import math

from ..autograd import is_grad_enabled
from ..backend import array_module
from ..ops.linalg import tensordot
from ..tensor import Tensor, _make

__all__ = ["Node", "TensorNetwork", "contract_path"]


class Node:
    """A Tensor ``data`` of shape ``(d_0, ..., d_{k-1})`` with index names ``inds`` (k distinct
    strings; one string alone is one name) and optional ``tags`` (labels for selecting nodes).

    Example::

        >>> a = Node(tensorix.randn(2, 3), ("i", "j"), tags={"A"})
        >>> a.dims
        {'i': 2, 'j': 3}
    """

    __slots__ = ("data", "inds", "tags")

    def __init__(self, data, inds, tags=()):
        if not isinstance(data, Tensor):
            raise TypeError(f"Node: expected data to be a tensorix Tensor, got "
                            f"{type(data).__name__}")
        inds = (inds,) if isinstance(inds, str) else tuple(inds)
        if len(inds) != data.ndim:
            raise ValueError(f"Node: got {len(inds)} index names {inds} for a tensor of shape "
                             f"{tuple(data.shape)} (expected one name per dimension)")
        if len(set(inds)) != len(inds):
            raise ValueError(f"Node: index names must be distinct, got {inds} (a trace is a "
                             "bond between two nodes, or tensorix.einsum)")
        self.data, self.inds = data, inds
        self.tags = frozenset((tags,) if isinstance(tags, str) else tags)

    @property
    def dims(self):
        return dict(zip(self.inds, (int(s) for s in self.data.shape)))

    def transpose(self, *inds):
        """The same node with its dimensions in the order ``inds``."""
        if sorted(inds) != sorted(self.inds):
            raise ValueError(f"Node.transpose: {inds} is not a permutation of {self.inds}")
        perm = [self.inds.index(i) for i in inds]
        return Node(self.data.permute(*perm), inds, self.tags)

    def reindex(self, mapping):
        """The same data with index names renamed by ``mapping`` (others kept)."""
        return Node(self.data, [mapping.get(i, i) for i in self.inds], self.tags)

    def conj(self):
        return Node(self.data.conj() if self.data.dtype.is_complex else self.data, self.inds,
                    self.tags)

    def __repr__(self):
        tags = f", tags={sorted(self.tags)}" if self.tags else ""
        return f"Node(shape={tuple(self.data.shape)}, inds={self.inds}{tags})"


def _describe(pos, node):
    tags = f" (tags {sorted(node.tags)})" if node.tags else ""
    return f"tensor {pos}{tags} of shape {tuple(node.data.shape)}"


def _symbols(nodes):
    """One opt_einsum symbol per index name, in order of first appearance."""
    from opt_einsum import get_symbol

    table = {}
    for n in nodes:
        for i in n.inds:
            if i not in table:
                table[i] = get_symbol(len(table))
    return table


def contract_path(inputs, output, size_dict, optimize="auto"):
    """A pairwise contraction order (opt_einsum's linear format: pairs of positions in the
    current list, the result appended) for the index sets ``inputs`` with ``output`` kept.

    ``optimize``: an opt_einsum strategy name (``'auto'``, ``'greedy'``, ``'optimal'``, ``'dp'``,
    ...), an opt_einsum ``PathOptimizer`` (cotengra's optimizers are ones), ``'cotengra'``
    (cotengra's ``'auto'`` preset; needs cotengra) or an explicit path.

    Example: ``contract_path([("a", "b"), ("b", "c")], ("a", "c"), {"a": 2, "b": 3, "c": 4})``
    is ``[(0, 1)]``.
    """
    n = len(inputs)
    if n < 2:
        return []
    if isinstance(optimize, (list, tuple)):
        return [tuple(p) for p in optimize]
    if optimize == "cotengra":
        try:
            import cotengra
        except ImportError as e:
            raise ImportError("contract: optimize='cotengra' needs cotengra (pip install "
                              "cotengra)") from e
        path = cotengra.array_contract_path([tuple(i) for i in inputs], output=tuple(output),
                                            size_dict=size_dict, optimize="auto")
        return [tuple(p) for p in path]
    from opt_einsum import contract_path as _oe_contract_path
    from opt_einsum import get_symbol

    table = {}
    for ind in [i for term in inputs for i in term] + list(output):
        table.setdefault(ind, get_symbol(len(table)))
    eq = ",".join("".join(table[i] for i in term) for term in inputs)
    eq += "->" + "".join(table[i] for i in output)
    shapes = [tuple(size_dict[i] for i in term) for term in inputs]
    path, _ = _oe_contract_path(eq, *shapes, shapes=True, optimize=optimize)
    return [tuple(p) for p in path]


class TensorNetwork:
    """A network of :class:`Node` objects: an index name in two nodes is a bond, in one node an
    open index. Bonds must have one dimension (an error names both tensors and the index);
    an index in three or more nodes (a hyperedge) is refused.

    ``contract()`` gives one Node over the open indices; ``contract(tags=...)`` contracts only
    the tagged nodes into one and returns the smaller network. Paths come from opt_einsum (or
    cotengra); execution is pairwise ``tensordot``, so gradients flow to every node's data.

    Example::

        >>> A = Node(tensorix.randn(2, 3), ("i", "j"))
        >>> B = Node(tensorix.randn(3, 4), ("j", "k"))
        >>> TensorNetwork([A, B]).contract().inds
        ('i', 'k')
    """

    def __init__(self, nodes=()):
        self.nodes = []
        self._where = {}  # index name -> positions of the nodes that carry it
        for node in nodes:
            self.add(node)

    def add(self, node, inds=None, tags=()):
        """Append ``node`` (a Node, or a Tensor with ``inds``); checks its bonds."""
        if not isinstance(node, Node):
            node = Node(node, inds, tags)
        pos = len(self.nodes)
        for ind, size in node.dims.items():
            others = self._where.get(ind, [])
            if len(others) >= 2:
                raise ValueError(f"TensorNetwork: index {ind!r} of {_describe(pos, node)} is "
                                 f"already a bond between tensors {others[0]} and {others[1]} "
                                 "(hyperedges are not supported: rename the index)")
            if others:
                other = self.nodes[others[0]]
                if other.dims[ind] != size:
                    raise ValueError(f"TensorNetwork: bond index {ind!r} has dimension "
                                     f"{other.dims[ind]} in {_describe(others[0], other)} but "
                                     f"{size} in {_describe(pos, node)}")
        for ind in node.inds:
            self._where.setdefault(ind, []).append(pos)
        self.nodes.append(node)
        return self

    def __and__(self, other):
        return TensorNetwork(self.nodes + list(other.nodes))

    def __len__(self):
        return len(self.nodes)

    def __iter__(self):
        return iter(self.nodes)

    @property
    def outer_inds(self):
        """Open index names, in order of first appearance."""
        return tuple(i for i, where in self._where.items() if len(where) == 1)

    @property
    def inner_inds(self):
        return tuple(i for i, where in self._where.items() if len(where) == 2)

    @property
    def size_dict(self):
        return {i: n.dims[i] for n in self.nodes for i in n.inds}

    def conj(self):
        return TensorNetwork([n.conj() for n in self.nodes])

    def reindex(self, mapping):
        return TensorNetwork([n.reindex(mapping) for n in self.nodes])

    def select(self, tags):
        """Positions of the nodes carrying all of ``tags``."""
        tags = {tags} if isinstance(tags, str) else set(tags)
        return [p for p, n in enumerate(self.nodes) if tags <= n.tags]

    def _output(self, output_inds):
        outer = self.outer_inds
        if output_inds is None:
            return outer
        output_inds = tuple(output_inds)
        if sorted(output_inds) != sorted(outer):
            raise ValueError(f"TensorNetwork.contract: output_inds {output_inds} must be a "
                             f"permutation of the open indices {outer}")
        return output_inds

    def contraction_path(self, output_inds=None, optimize="auto"):
        """The pairwise path :meth:`contract` would follow (see :func:`contract_path`)."""
        return contract_path([n.inds for n in self.nodes], self._output(output_inds),
                             self.size_dict, optimize)

    def contraction_cost(self, path=None, optimize="auto"):
        """(FLOPs, largest intermediate size) of contracting along ``path``."""
        path = self.contraction_path(optimize=optimize) if path is None else path
        sets = [set(n.inds) for n in self.nodes]
        sizes, flops, largest = self.size_dict, 0, 0
        for i, j in path:
            a, b = sets[i], sets[j]
            flops += math.prod(sizes[k] for k in a | b)
            out = a ^ b
            largest = max(largest, math.prod(sizes[k] for k in out))
            sets = [s for k, s in enumerate(sets) if k not in (i, j)] + [out]
        return flops, largest

    def contract(self, output_inds=None, optimize="auto", tags=None):
        """Contract the whole network into one :class:`Node` over the open indices (in the order
        ``output_inds``, default their order of appearance) or, with ``tags``, only the nodes
        carrying those tags: then a new TensorNetwork with them replaced by their contraction.

        Example: ``TensorNetwork([A, B]).contract().data`` equals ``A.data @ B.data``.
        """
        if tags is not None:
            chosen = self.select(tags)
            if not chosen:
                raise ValueError(f"TensorNetwork.contract: no node carries tags {tags!r}")
            part = TensorNetwork([self.nodes[p] for p in chosen])
            merged = part.contract(optimize=optimize)
            merged = Node(merged.data, merged.inds, set().union(*(n.tags for n in part)))
            rest = [n for p, n in enumerate(self.nodes) if p not in chosen]
            return TensorNetwork(rest + [merged])
        if not self.nodes:
            raise ValueError("TensorNetwork.contract: the network is empty")
        output = self._output(output_inds)
        path = contract_path([n.inds for n in self.nodes], output, self.size_dict, optimize)
        if _raw_ok(self.nodes):
            return _contract_raw(self.nodes, path, output)
        live = list(self.nodes)
        for i, j in path:
            a, b = live[i], live[j]
            live = [n for k, n in enumerate(live) if k not in (i, j)]
            live.append(contract_pair(a, b))
        result = live[0]
        for extra in live[1:]:  # disconnected parts: outer products
            result = contract_pair(result, extra)
        return result.transpose(*output) if result.inds != output else result

    def __repr__(self):
        return (f"TensorNetwork({len(self.nodes)} tensors, {len(self.inner_inds)} bonds, "
                f"open {self.outer_inds})")


def contract_pair(a, b):
    """Contract two nodes over their shared indices: one ``tensordot``."""
    shared = [i for i in a.inds if i in b.dims]
    ia = [a.inds.index(i) for i in shared]
    ib = [b.inds.index(i) for i in shared]
    x, y = a.data, b.data
    if x.dtype is not y.dtype:  # tensordot wants one dtype: promote (real gates, complex states)
        from ..dtypes import result_type

        d = result_type(x, y)
        x, y = x.to(d), y.to(d)
    data = tensordot(x, y, dims=(ia, ib))
    inds = tuple(i for i in a.inds if i not in shared) + tuple(i for i in b.inds
                                                               if i not in shared)
    return Node(data, inds, a.tags | b.tags)


def _raw_ok(nodes):
    """Whether a whole contraction may run on the raw arrays: no gradient is wanted (grad
    mode off, or no node requires grad) and every node is a BLAS dtype of one device."""
    if is_grad_enabled() and any(n.data.requires_grad for n in nodes):
        return False
    first = nodes[0].data
    return all(n.data.dtype.bits >= 32 and not n.data.dtype.storage_only and
               n.data.device == first.device for n in nodes)


def _contract_raw(nodes, path, output):
    """The path run as GEMMs on the nodes' arrays (:func:`_pair_raw`), wrapped once at the end.

    Why: a network of many small tensors paid tensorix's per-op dispatch (tens of
    microseconds) at every pairwise step, 4-100x quimb/cotengra's time on random regular
    graphs; without gradients nothing is lost by skipping the graph."""
    xp = array_module(nodes[0].data._data)
    live = [(n.data._data, n.inds) for n in nodes]
    for i, j in path:
        (x, ia), (y, ib) = live[i], live[j]
        live = [t for k, t in enumerate(live) if k not in (i, j)]
        live.append(_pair_raw(xp, x, ia, y, ib))
    data, inds = live[0]
    for y, ib in live[1:]:  # disconnected parts: outer products
        data, inds = _pair_raw(xp, data, inds, y, ib)
    if inds != output:
        data = data.transpose([inds.index(i) for i in output])
    tags = frozenset().union(*(n.tags for n in nodes))
    # why the reshape: ascontiguousarray makes a 0-d result (a closed network) 1-d
    return Node(_make(xp.ascontiguousarray(data).reshape(data.shape)), output, tags)


def _pair_raw(xp, x, ia, y, ib):
    """One pairwise step as a GEMM. Why not ``xp.tensordot``: it always moves the contracted
    axes of its first operand last, copying it; here the larger operand keeps its memory
    order (its shared axes, when they form a block at either end, reshape for free, as they
    mostly do along a path: a step's result holds each operand's free axes together), and
    only the smaller one is transposed. The result's index order follows the GEMM's."""
    if x.dtype != y.dtype:  # real gates on complex states: promote, as contract_pair does
        dtype = xp.result_type(x.dtype, y.dtype)
        x, y = x.astype(dtype), y.astype(dtype)
    if y.size > x.size:
        x, ia, y, ib = y, ib, x, ia
    dims = dict(zip(ia, x.shape)) | dict(zip(ib, y.shape))
    shared = [i for i in ia if i in ib]
    pos = [ia.index(i) for i in shared]
    free_x = [i for i in ia if i not in shared]
    free_y = [i for i in ib if i not in shared]
    k = math.prod(dims[i] for i in shared)
    front = pos == list(range(len(pos)))
    if not front and pos != list(range(len(ia) - len(pos), len(ia))):
        x = x.transpose([ia.index(i) for i in free_x] + pos)  # shared axes scattered: move
    ymat = y.transpose([ib.index(i) for i in shared] + [ib.index(i) for i in free_y]
                       ).reshape(k, -1)
    shape_x, shape_y = [dims[i] for i in free_x], [dims[i] for i in free_y]
    if front:  # x (shared..., free...): (free_y, free_x) = y^T x
        data = ymat.T @ x.reshape(k, -1)
        return data.reshape(shape_y + shape_x), tuple(free_y) + tuple(free_x)
    data = x.reshape(-1, k) @ ymat
    return data.reshape(shape_x + shape_y), tuple(free_x) + tuple(free_y)
