"""The backward engine: the generic work, done once.

* An iterative walk (explicit stack) counts each node's consumers, so a 100,000-op chain never
  touches the recursion limit.
* Nodes run in dependency order; the gradient table is local to one call.
* Where a gradient reaches an input, it is unbroadcast to the input's shape and cast to its dtype
  here - not in each op's backward.
* ``.grad`` is written only on leaves (and on tensors that asked with ``retain_grad``).
* Without ``retain_graph`` every node releases its saved tensors as it runs, so a second
  backward through it is a clear error.
"""

from __future__ import annotations

import heapq

from ..backend import array_module
from ..tensor import Tensor, _make
from .grad_mode import state

__all__ = ["backward", "grad"]


def _root_grads(outputs, grad_outputs):
    grads = []
    for i, out in enumerate(outputs):
        g = None if grad_outputs is None else grad_outputs[i]
        if g is None:
            if out._data.size != 1:
                raise RuntimeError(f"backward: grad can be implicitly created only for scalar "
                                   f"outputs; output {i} has shape {tuple(out.shape)}")
            g = _make(array_module(out._data).ones_like(out._data), out._dtype)
        elif not isinstance(g, Tensor):
            from ..ops.creation import tensor

            g = tensor(g, dtype=out.dtype, device=out.device)
        elif tuple(g.shape) != tuple(out.shape):
            raise RuntimeError(f"backward: mismatch in shape: grad_output[{i}] has shape "
                               f"{tuple(g.shape)} and output[{i}] has shape {tuple(out.shape)}")
        grads.append(g)
    return grads


def _collect(roots):
    """Count, for every node reachable from ``roots``, how many edges point at it."""
    deps = {}
    stack = list(roots)
    seen = set(id(n) for n in roots)
    while stack:
        node = stack.pop()
        for edge in node.next_edges:
            if edge is None:
                continue
            nxt = edge[0]
            if type(nxt) is Tensor:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append(nxt)
    return deps


def _needed(roots, deps, targets):
    """The nodes from which a captured target can be reached (autograd.grad prunes the rest)."""
    order, pending = [], dict(deps)
    ready = [n for n in roots if pending.get(n, 0) == 0]
    while ready:
        node = ready.pop()
        order.append(node)
        for edge in node.next_edges:
            if edge is not None and type(edge[0]) is not Tensor:
                pending[edge[0]] -= 1
                if pending[edge[0]] == 0:
                    ready.append(edge[0])
    need = set()
    for node in reversed(order):
        for edge in node.next_edges:
            if edge is None:
                continue
            if (id(edge[0]), edge[1]) in targets or edge[0] in need:
                need.add(node)
                break
    return need


def _fit(g, meta):
    """Unbroadcast ``g`` to the input's shape and cast it to the input's dtype."""
    shape, dtype = meta
    if g._data.shape != shape:
        from ..ops.reduce import sum_to

        g = sum_to(g, shape)
    if g._dtype is not dtype:
        g = g.to(dtype)
    return g


def _check_anomaly(node, grads):
    for i, g in enumerate(grads):
        if isinstance(g, Tensor) and g._dtype.category >= 2:
            xp = array_module(g._data)
            if not bool(xp.isfinite(g._data.astype(xp.complex128 if g._dtype.is_complex
                                                   else xp.float64)).all()):
                where = f"\nThe forward call that created it:\n{node._trace}" if node._trace \
                    else ""
                raise RuntimeError(f"Function '{node.name()}' returned nan or inf values in its "
                                   f"{i}th output.{where}")


def _call_hooks(hooks, g):
    for hook in hooks:
        r = hook(g)
        if r is not None:
            g = r
    return g


def _run(roots, root_grads, retain_graph, create_graph, capture=None, accumulate=True):
    """Execute the graph. ``capture`` maps (id(target), slot) -> result index."""
    results = [None] * (len(capture) if capture else 0)
    buffers = {}  # node -> list of gradient Tensors, one per output
    root_nodes = []
    for out, g in zip(roots, root_grads):
        if out.grad_fn is None:  # a leaf as output: its grad is the seed itself
            _deliver_leaf(out, g, capture, results, accumulate, create_graph)
            continue
        node = out.grad_fn
        if node not in buffers:
            root_nodes.append(node)
        _accumulate(buffers, node, out._output_nr, g)
    deps = _collect(root_nodes)
    need = _needed(root_nodes, deps, capture) if capture else None
    heap = [(-n._seq, id(n), n) for n in root_nodes if deps.get(n, 0) == 0]
    heapq.heapify(heap)
    prev = state.enabled
    state.enabled = bool(create_graph)
    try:
        while heap:
            node = heapq.heappop(heap)[2]
            grads = buffers.pop(node)
            _run_node(node, grads, deps, buffers, heap, need, capture, results, accumulate,
                      create_graph, retain_graph)
    finally:
        state.enabled = prev
    return results


def _run_node(node, grads, deps, buffers, heap, need, capture, results, accumulate,
              create_graph, retain_graph):
    in_grads = _node_backward(node, grads, need, capture, results, retain_graph)
    for i, edge in enumerate(node.next_edges):
        if edge is None:
            continue
        g = in_grads[i] if i < len(in_grads) else None
        target, slot = edge
        if type(target) is Tensor:
            if g is not None:
                _deliver_leaf(target, _fit(g, node._in_meta[i]), capture, results, accumulate,
                              create_graph)
            continue
        if g is not None:
            _accumulate(buffers, target, slot, _fit(g, node._in_meta[i]))
        deps[target] -= 1
        if deps[target] == 0:
            if target in buffers:
                heapq.heappush(heap, (-target._seq, id(target), target))
            elif not retain_graph:
                target.release()  # nothing flows into it; free it all the same


def _accumulate(buffers, node, slot, g):
    buf = buffers.get(node)
    if buf is None:
        buf = buffers[node] = [None] * (len(node._out_meta) if node._out_meta else 1)
    buf[slot] = g if buf[slot] is None else buf[slot] + g


def _node_backward(node, grads, need, capture, results, retain_graph):
    """Hooks, captures, then the node's own backward; returns one gradient per input."""
    if node._hooks:
        for i, hooks in node._hooks.items():
            if grads[i] is not None:
                grads[i] = _call_hooks(hooks, grads[i])
    if capture:
        for i, g in enumerate(grads):
            k = capture.get((id(node), i))
            if k is not None:
                results[k] = g
    if need is not None and node not in need:
        return (None,) * len(node.next_edges)
    if node._freed:
        raise RuntimeError(f"{node.name()}: trying to backward through the graph a second "
                           "time (or directly access saved tensors after they have already "
                           "been freed). Specify retain_graph=True the first time.")
    if node.materialize_grads and node._out_meta:
        grads = [_zeros(m) if g is None else g for g, m in zip(grads, node._out_meta)]
    in_grads = node.backward(node, *grads)
    if type(in_grads) is not tuple:
        in_grads = (in_grads,)
    if state.anomaly:
        _check_anomaly(node, in_grads)
    if not retain_graph:
        node.release()
    return in_grads


def _zeros(meta):
    from ..ops.creation import zeros

    return zeros(meta[0], dtype=meta[1])


def _deliver_leaf(t, g, capture, results, accumulate, create_graph):
    if t._hooks:
        g = _call_hooks(t._hooks, g)
    if capture:
        k = capture.get((id(t), 0))
        if k is not None:
            results[k] = g if results[k] is None else results[k] + g
        return
    if not accumulate:
        return
    if not create_graph:
        g = g.detach()
    if t.grad is None:
        # a gradient array may be shared with another leaf (add's backward hands the same one
        # to both inputs); .grad must own its memory since optimizers update it in place
        t.grad = g if create_graph else _make(g._data.copy(), g._dtype)
    else:
        t.grad = t.grad + g


def _as_list(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves they depend on.

    ``grad_tensors`` seeds the backward pass (required for non-scalar outputs).
    ``retain_graph`` defaults to ``create_graph``. ``inputs`` restricts accumulation to those
    tensors. Example: ``tensorix.autograd.backward([loss])``.
    """
    tensors = _as_list(tensors)
    for i, t in enumerate(tensors):
        if not t._rg:
            raise RuntimeError(f"backward: element {i} of tensors does not require grad and "
                               "does not have a grad_fn")
    grads = _root_grads(tensors, _as_list(grad_tensors))
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = _as_list(inputs)
        got = grad(tensors, inputs, grads, retain_graph=retain_graph,
                   create_graph=create_graph, allow_unused=True)
        for t, g in zip(inputs, got):
            if g is not None:
                g = g if create_graph else g.detach()
                t.grad = g if t.grad is None else t.grad + g
        return
    _run(tensors, grads, retain_graph, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, materialize_grads=False):
    """Return d(outputs)/d(inputs) without touching any ``.grad``.

    Example::

        >>> x = tensorix.tensor(3.0, requires_grad=True)
        >>> (g,) = tensorix.autograd.grad(x ** 3, x, create_graph=True)   # 27
        >>> tensorix.autograd.grad(g, x)                                    # (18,)
    """
    outputs = _as_list(outputs)
    inputs = _as_list(inputs)
    for i, t in enumerate(outputs):
        if not t._rg:
            raise RuntimeError(f"grad: element {i} of outputs does not require grad and does "
                               "not have a grad_fn")
    for i, t in enumerate(inputs):
        if not t._rg:
            raise RuntimeError(f"grad: input {i} does not require grad")
    grads = _root_grads(outputs, _as_list(grad_outputs))
    if retain_graph is None:
        retain_graph = create_graph
    capture = {}
    for k, t in enumerate(inputs):
        key = (id(t.grad_fn), t._output_nr) if t.grad_fn is not None else (id(t), 0)
        capture.setdefault(key, k)
    res = _run(outputs, grads, retain_graph, create_graph, capture=capture, accumulate=False)
    out = []
    for k, t in enumerate(inputs):
        key = (id(t.grad_fn), t._output_nr) if t.grad_fn is not None else (id(t), 0)
        g = res[capture[key]]
        if g is None:
            if materialize_grads:
                from ..ops.creation import zeros_like

                g = zeros_like(t)
            elif not allow_unused:
                raise RuntimeError(f"grad: input {k} was not used in the graph; pass "
                                   "allow_unused=True if this is intended")
        out.append(g)
    return tuple(out)
