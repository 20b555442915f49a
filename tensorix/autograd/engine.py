"""The backward engine: the generic work, done once.

* An iterative walk (explicit stack) counts, for every node and leaf, how many edges point at
  it, so a 100,000-op chain never touches the recursion limit.
* Nodes run in reverse creation order (a heap keyed by the creation sequence number, which is a
  topological order) once every consumer has run; the gradient table is local to one call.
* Where a gradient reaches an input, it is unbroadcast to the input's shape and cast to its
  dtype here - not in each op's backward.
* A leaf's gradients are summed first and delivered once (hooks see the total), into ``.grad``
  of leaves only; non-leaves keep ``.grad`` only when they asked with ``retain_grad``.
* Without ``retain_graph`` every node that runs releases its saved tensors, so a second
  backward through it is a clear error.
"""

from __future__ import annotations

import heapq

from ..backend import array_module
from ..tensor import Tensor, _make
from .function import EDGE, refresh_view
from .grad_mode import modes

__all__ = ["backward", "grad"]


def _root_grads(outputs, grad_outputs, op):
    if grad_outputs is not None and len(grad_outputs) != len(outputs):
        raise RuntimeError(f"{op}: got {len(grad_outputs)} gradients for {len(outputs)} "
                           "outputs; pass one per output (None for scalars)")
    grads = []
    for i, out in enumerate(outputs):
        g = None if grad_outputs is None else grad_outputs[i]
        if g is None:
            if out._data.size != 1:
                raise RuntimeError(f"{op}: grad can be implicitly created only for scalar "
                                   f"outputs; output {i} has shape {list(out._data.shape)}, "
                                   "pass gradient= (grad_outputs=) for it")
            g = _make(array_module(out._data).ones_like(out._data), out._dtype)
        elif not isinstance(g, Tensor):  # the ops are reached as Tensor methods: they sit above
            g = out.new_tensor(g)
        elif g._data.shape != out._data.shape:
            raise RuntimeError(f"{op}: mismatch in shape: grad_output[{i}] has a shape of "
                               f"{list(g._data.shape)} and output[{i}] has a shape of "
                               f"{list(out._data.shape)}")
        elif g._dtype is not out._dtype:
            if g._dtype.is_complex != out._dtype.is_complex:
                raise RuntimeError(f"{op}: for complex outputs the gradient must be complex "
                                   f"too (and real for real ones): grad_output[{i}] is "
                                   f"{g._dtype.name}, output[{i}] is {out._dtype.name}")
            g = g.to(out._dtype)
        grads.append(g)
    return grads


def _fit(g, shape, dtype):
    """Unbroadcast ``g`` to the input's shape and cast it to the input's dtype."""
    if g._data.shape != shape:
        g = g.sum_to_size(shape)  # ops.reduce.sum_to, differentiable for create_graph
    if g._dtype is not dtype:
        g = g.to(dtype)
    return g


def _check_anomaly(node, grads):
    for i, g in enumerate(grads):
        if type(g) is Tensor and g._dtype.category >= 2:
            xp = array_module(g._data)
            wide = xp.complex128 if g._dtype.is_complex else xp.float64
            if not bool(xp.isfinite(g._data.astype(wide)).all()):
                where = f"\nThe forward call that created it:\n{node._trace}" if node._trace \
                    else ""
                raise RuntimeError(f"Function '{node.name()}' returned nan or inf values in its "
                                   f"{i}th output.{where}")


def _call_hooks(hooks, g):
    for hook in list(hooks):
        r = hook(g)
        if r is not None:
            g = r
    return g


# set once any tensor registers a post-accumulate-grad hook, so that backward looks for them
# (an unset slot costs an exception per leaf) only in programs that use them
POST_ACCUMULATE = [False]


def _accumulate_grad(t, g, create_graph):
    """``t.grad += g`` as PyTorch's AccumulateGrad does it: .grad owns its memory (add's
    backward hands one gradient to both inputs); in-place unless building a graph."""
    old = t.grad
    if old is None:
        if create_graph:
            t.grad = g.clone()
        else:
            t.grad = _make(g._data.copy(), g._dtype)
    elif create_graph or old._rg or old._data.shape != g._data.shape or \
            old._dtype is not g._dtype or not getattr(old._data.flags, "writeable", True):
        t.grad = old + g
    else:
        old._data += g._data
        old._version[0] += 1
    if POST_ACCUMULATE[0]:  # register_post_accumulate_grad_hook
        for hook in list(getattr(t, "_post_acc_hooks", None) or ()):
            hook(t)


class _GraphTask:
    """The state of one backward call: dependency counts, gradient buffers, captures."""

    def __init__(self, retain_graph, create_graph, capture, accumulate):
        self.retain_graph = retain_graph
        self.create_graph = create_graph
        self.capture = capture  # {id(leaf) or (id(node), slot): result index} for grad()
        self.accumulate = accumulate  # write leaves' .grad (backward) or not (grad)
        self.results = [None] * (len(capture) if capture else 0)
        self.buffers = {}  # node -> [gradient per output]
        self.leaf_grads = {}  # id(leaf) -> summed gradient
        self.owned = set()  # ids of leaves whose summed gradient is an array made here
        self.deps = {}  # node or id(leaf) -> number of edges that have not delivered yet
        self.need = None
        self.modes = modes.state  # the calling thread's, which runs the whole backward

    def collect(self, roots):
        """Count, for every node and leaf reachable from ``roots``, the edges pointing at it;
        return the reachable nodes."""
        deps = self.deps
        stack = list(roots)
        seen = set(roots)
        while stack:
            node = stack.pop()
            for target in node.next_edges[::EDGE]:
                if target is None:
                    continue
                key = id(target) if type(target) is Tensor else target
                deps[key] = deps.get(key, 0) + 1
                if key is target and target not in seen:
                    seen.add(target)
                    stack.append(target)
        return seen

    def prune(self, nodes):
        """grad() runs only the nodes from which a captured input can be reached. Creation
        order is a topological order, so one pass in that order settles each node."""
        targets, need = self.capture, {}
        for node in sorted(nodes, key=lambda n: n._seq):
            edges = node.next_edges
            need[node] = any(
                target is not None and (
                    id(target) in targets if type(target) is Tensor else
                    (id(target), slot) in targets or need.get(target, False))
                for target, slot in zip(edges[::EDGE], edges[1::EDGE]))
        self.need = need

    def run(self, outputs, grads):
        roots = []
        for out, g in zip(outputs, grads):
            if out._base is not None:
                refresh_view(out)
            if out.grad_fn is None:  # a leaf as an output: its seed is its gradient
                self._leaf_grad(id(out), g)
                continue
            if out.grad_fn not in self.buffers:
                roots.append(out.grad_fn)
            self._buffer(out.grad_fn, out._output_nr, g)
        nodes = self.collect(roots)
        if self.capture:
            self.prune(nodes)
        for out in outputs:  # leaves given as outputs that nothing else reaches
            if out.grad_fn is None and self.deps.get(id(out), 0) == 0 and \
                    id(out) in self.leaf_grads:
                self._deliver(out, self.leaf_grads.pop(id(out)))
        heap = [(-n._seq, id(n), n) for n in roots if self.deps.get(n, 0) == 0]
        heapq.heapify(heap)
        state = self.modes
        prev = state.enabled
        state.enabled = bool(self.create_graph)
        try:
            buffers, pop = self.buffers, heapq.heappop
            while heap:
                node = pop(heap)[2]
                grads = buffers.pop(node, None)
                if grads is None:  # no gradient reached this node: it passes none on
                    in_grads = None
                elif node._hooks or node._pre_hooks or self.capture:
                    in_grads = self._call(node, grads)
                else:
                    in_grads = self._backward(node, grads)
                self._propagate(node, in_grads, heap)
        finally:
            state.enabled = prev
        return self.results

    def _propagate(self, node, in_grads, heap):
        """Send a node's input gradients along its edges; queue nodes whose consumers have
        all run, deliver leaves whose last edge has arrived."""
        deps, buffers, edges = self.deps, self.buffers, node.next_edges
        for i in range(0, len(edges), EDGE):
            target = edges[i]
            if target is None:
                continue
            g = None if in_grads is None else in_grads[i // EDGE]
            if g is not None and (g._data.shape != edges[i + 2] or g._dtype is not edges[i + 3]):
                g = _fit(g, edges[i + 2], edges[i + 3])
            if type(target) is Tensor:
                key = id(target)
                if g is not None:
                    self._leaf_grad(key, g)
                deps[key] -= 1
                if deps[key] == 0 and key in self.leaf_grads:
                    self._deliver(target, self.leaf_grads.pop(key))
                continue
            if g is not None:
                if target._out_meta is None and target not in buffers:  # the common case
                    buffers[target] = [g]
                else:
                    self._buffer(target, edges[i + 1], g)
            deps[target] -= 1
            if deps[target] == 0:
                heapq.heappush(heap, (-target._seq, id(target), target))

    def _buffer(self, node, slot, g):
        buf = self.buffers.get(node)
        if buf is None:
            buf = self.buffers[node] = [None] * (len(node._out_meta) if node._out_meta else 1)
        buf[slot] = g if buf[slot] is None else self._sum(buf[slot], g)

    def _leaf_grad(self, key, g):
        grads = self.leaf_grads
        old = grads.get(key)
        if old is None:
            grads[key] = g
        elif self.create_graph:
            grads[key] = old + g
        elif key in self.owned:  # our own accumulator: add in place
            old._data += g._data
        else:
            grads[key] = _make(old._data + g._data, old._dtype)
            self.owned.add(key)

    def _sum(self, a, b):
        """Two gradients for one slot (both already of its shape and dtype): an op when the
        sum must be differentiable, plain array arithmetic otherwise."""
        if self.create_graph:
            return a + b
        return _make(a._data + b._data, a._dtype)

    def _call(self, node, grads):
        """Hooks, captures, then the node's own backward; one gradient (or None) per input,
        or None when the node has nothing to do."""
        if node._hooks:
            for i, hooks in node._hooks.items():
                if grads[i] is not None:
                    grads[i] = _call_hooks(hooks, grads[i])
        if node._pre_hooks:
            for hook in list(node._pre_hooks):
                r = hook(tuple(grads))
                if r is not None:
                    grads = list(r)
        if self.capture:
            for i, g in enumerate(grads):
                k = self.capture.get((id(node), i))
                if k is not None:
                    self.results[k] = g
            if not self.need.get(node, False):
                return None
        return self._backward(node, grads)

    def _backward(self, node, grads):
        if node.materialize_grads and node._out_meta:
            grads = [_zeros(m) if g is None and m is not None else g
                     for g, m in zip(grads, node._out_meta)]
        try:
            in_grads = node.backward(node, *grads)
        except Exception as e:
            if node._trace and hasattr(e, "add_note"):  # anomaly mode: say where it came from
                e.add_note(f"The forward call of {node.name()} that failed in backward:\n"
                           f"{node._trace}")
            raise
        in_grads = _check_count(node, in_grads)
        if node._post_hooks:
            for hook in list(node._post_hooks):
                r = hook(in_grads, tuple(grads))
                if r is not None:
                    in_grads = _check_count(node, r)
        if self.modes.anomaly and self.modes.check_nan:
            _check_anomaly(node, in_grads)
        if not self.retain_graph:
            node.release()
        return in_grads

    def _deliver(self, t, g):
        if t._hooks:
            g = _call_hooks(t._hooks, g)
        if self.capture:
            k = self.capture.get(id(t))
            if k is not None:
                self.results[k] = g
            return
        if self.accumulate:
            _accumulate_grad(t, g if self.create_graph else g.detach(), self.create_graph)


def _check_count(node, in_grads):
    """One gradient per forward argument; trailing ones for non-tensor arguments may be left
    out, as the built-in ops do."""
    if type(in_grads) is not tuple:
        in_grads = tuple(in_grads) if type(in_grads) is list else (in_grads,)
    n = len(node.next_edges) // EDGE
    if len(in_grads) == n:  # the common case: only the types to check
        for g in in_grads:
            if g is not None and type(g) is not Tensor:
                break
        else:
            return in_grads
    if len(in_grads) < n:
        in_grads = in_grads + (None,) * (n - len(in_grads))
    elif len(in_grads) > n and any(g is not None for g in in_grads[n:]):
        raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                           f"(expected {n}, got {len(in_grads)})")
    for i, target in enumerate(node.next_edges[::EDGE]):
        g = in_grads[i]
        if target is not None and g is not None and not isinstance(g, Tensor):
            raise RuntimeError(f"function {node.name()} returned a gradient of type "
                               f"{type(g).__name__} for input {i}; expected a Tensor or None")
    return in_grads


def _zeros(meta):
    shape, dtype, device = meta
    return _make(device.xp.zeros(shape, dtype=dtype.storage(device.xp)), dtype)


def _as_list(x, what):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return list(x)
    raise TypeError(f"{what}: expected a Tensor or a sequence of Tensors, got "
                    f"{type(x).__name__}")


def _check_outputs(outputs, op):
    for i, t in enumerate(outputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: element {i} of tensors is a {type(t).__name__}, not a "
                            "Tensor")
        if not t._rg:
            raise RuntimeError(f"{op}: element {i} of tensors does not require grad and does "
                               "not have a grad_fn")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves they depend on.

    ``grad_tensors`` seeds the backward pass (required for non-scalar outputs).
    ``retain_graph`` defaults to ``create_graph``. ``inputs`` restricts accumulation to those
    tensors (leaves or not). Example: ``tensorix.autograd.backward([loss])``.
    """
    effect = getattr(modes.state.tracer, "effect", None)
    if effect is not None:  # inside tensorix.compile: a call to replay, not ops to record
        return effect("backward()", backward, (tensors, grad_tensors, retain_graph,
                                               create_graph), {"inputs": inputs})
    tensors = _as_list(tensors, "backward")
    _check_outputs(tensors, "backward")
    grads = _root_grads(tensors, _as_list(grad_tensors, "backward"), "backward")
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = _as_list(inputs, "backward")
        if not inputs:
            raise RuntimeError("backward: 'inputs' argument to backward() cannot be empty")
        got = grad(tensors, inputs, grads, retain_graph=retain_graph,
                   create_graph=create_graph, allow_unused=True)
        state = modes.state
        prev = state.enabled
        state.enabled = bool(create_graph)
        try:
            for t, g in zip(inputs, got):
                if g is not None:
                    _accumulate_grad(t, g if create_graph else g.detach(), create_graph)
        finally:
            state.enabled = prev
        return
    _GraphTask(retain_graph, create_graph, None, True).run(tensors, grads)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, materialize_grads=False):
    """Return d(outputs)/d(inputs) (summed over outputs, weighted by ``grad_outputs``)
    without touching any ``.grad``.

    ``create_graph=True`` records the computation so the result can be differentiated again;
    ``allow_unused`` returns None for inputs the outputs do not depend on (zeros with
    ``materialize_grads``).

    Example::

        >>> x = tensorix.tensor(3.0, requires_grad=True)
        >>> (g,) = tensorix.autograd.grad(x ** 3, x, create_graph=True)   # 27
        >>> tensorix.autograd.grad(g, x)                                    # (18,)
    """
    outputs = _as_list(outputs, "grad")
    inputs = _as_list(inputs, "grad")
    _check_outputs(outputs, "grad")
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor) or not t._rg:
            raise RuntimeError(f"grad: input {i} does not require grad (one of the "
                               "differentiated Tensors does not require grad)")
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ValueError("grad: expected allow_unused to be True or not passed when "
                         "materialize_grads=True")
    grads = _root_grads(outputs, _as_list(grad_outputs, "grad"), "grad")
    if retain_graph is None:
        retain_graph = create_graph
    for t in inputs:
        if t._base is not None:
            refresh_view(t)
    capture = {}
    keys = [id(t) if t.grad_fn is None else (id(t.grad_fn), t._output_nr) for t in inputs]
    for key in keys:
        capture.setdefault(key, len(capture))
    res = _GraphTask(retain_graph, create_graph, capture, False).run(outputs, grads)
    out = []
    for k, (t, key) in enumerate(zip(inputs, keys)):
        g = res[capture[key]]
        if g is None:
            if materialize_grads:
                g = t.new_zeros(t.shape)
            elif not allow_unused:
                raise RuntimeError(f"grad: input {k} was not used in the graph (one of the "
                                   "differentiated Tensors appears to not have been used); "
                                   "pass allow_unused=True if this is intended")
        elif not create_graph:
            g = g.detach()
        out.append(g)
    return tuple(out)
