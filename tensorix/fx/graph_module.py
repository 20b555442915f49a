"""GraphModule (a Graph plus the module its ``get_attr`` nodes read) and the interpreter that
runs a graph node by node through the dispatcher, so its results, autograd graph included,
are eager's: each call node runs ``node.op.apply(*args)``, which is how the op ran when traced.
"""

from __future__ import annotations

from .graph import Graph, map_args

__all__ = ["GraphModule", "Interpreter", "symbolic_trace", "joint_trace", "inference_trace"]


def _get_attr(root, path):
    obj = root
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


class Interpreter:
    """Runs ``graph`` on positional inputs (one per placeholder, in order). Subclasses may
    override :meth:`run_node` (tensorix.compile runs fused groups this way)."""

    def __init__(self, graph: Graph, root=None):
        self.graph, self.root = graph, root

    def run(self, *inputs):
        env = {}
        it = iter(inputs)
        get = env.__getitem__
        for node in self.graph.nodes:
            if node.op == "placeholder":
                try:
                    env[node] = next(it)
                except StopIteration:
                    raise TypeError(f"graph: missing input for placeholder "
                                    f"{node.target!r}") from None
                continue
            if node.op == "output":
                return map_args(node.args[0], get)
            env[node] = self.run_node(node, map_args(node.args, get))
        return None

    def run_node(self, node, args):
        op = node.op
        if op == "constant":
            return node.target
        if op == "get_attr":
            return _get_attr(self.root, node.target)
        if op == "getitem":
            return args[0][node.target]
        if op == "data":
            return args[0]._data
        return op.apply(*args)


class GraphModule:
    """A captured program: ``gm(*inputs)`` runs ``gm.graph`` by the interpreter; ``gm.code``
    and ``gm.print_tabular()`` show it; edit ``gm.graph`` in place (the next call runs the
    edited graph).

    Example::

        gm = tensorix.fx.symbolic_trace(lambda x: (x * 2).relu(), tensorix.randn(3))
        print(gm.code)
        gm(tensorix.randn(3))
    """

    def __init__(self, root, graph: Graph, breaks=()):
        self.root, self.graph = root, graph
        self.breaks = list(breaks)

    def forward(self, *inputs):
        return Interpreter(self.graph, self.root).run(*inputs)

    __call__ = forward

    @property
    def code(self) -> str:
        return self.graph.code

    def print_tabular(self, file=None) -> None:
        self.graph.print_tabular(file)

    def __repr__(self):
        return f"GraphModule(\n{self.graph.code}\n)"


def symbolic_trace(module_or_fn, *example_args) -> GraphModule:
    """Capture ``module_or_fn(*example_args)`` as a :class:`GraphModule` of the dispatcher's
    primitives (one node per ``Function.apply``), with shape/dtype/device in each node's meta.

    The trace is concrete: Python control flow follows the example inputs, so the graph stands
    for inputs of the same shapes, dtypes and devices (tensorix.compile guards on them).
    Parameters and buffers of a module become ``get_attr`` nodes, read when the graph runs.
    ``gm.breaks`` lists where Python read tensor data (a graph that is only valid for these
    values; use tensorix.export to make that an error).

    Example::

        model = tensorix.nn.Linear(4, 2)
        gm = tensorix.fx.symbolic_trace(model, tensorix.randn(8, 4))
        gm.print_tabular()
        y = gm(tensorix.randn(8, 4))        # (8, 2), equal to model(x)
    """
    from .tracer import trace

    attrs = _attr_paths(module_or_fn)
    tracer, _ = trace(module_or_fn, example_args, attrs=attrs, names=_arg_names(module_or_fn))
    root = module_or_fn if attrs else None
    return GraphModule(root, tracer.graph, tracer.breaks)


def inference_trace(model, args, who: str, allowed_breaks=()) -> GraphModule:
    """The trace of ``model(*args)`` for a consumer that runs it elsewhere (ONNX, AOT C): a
    Module in eval mode (then put back), no autograd graph, and no graph break (one raises
    ``NotImplementedError`` naming ``who``) except those starting with ``allowed_breaks``.
    """
    from ..autograd.grad_mode import no_grad

    training = getattr(model, "training", False) and hasattr(model, "eval")
    if training:
        model.eval()
    try:
        with no_grad():
            gm = symbolic_trace(model, *args)
    finally:
        if training:
            model.train()
    breaks = [b for b in gm.breaks if not b.startswith(tuple(allowed_breaks))]
    if breaks:
        raise NotImplementedError(
            f"{who}: the traced program depends on tensor data, so no static graph stands "
            f"for it: {'; '.join(breaks)}")
    return gm


def joint_trace(module_or_fn, *example_args) -> GraphModule:
    """The joint forward-backward graph of ``module_or_fn(*example_args)``: placeholders are
    the inputs then one ``tangent_i`` per output that requires grad; the output is
    ``(*outputs, *gradients)``, one gradient per leaf that requires grad (inputs, parameters,
    closed-over tensors; None where unused), listed in ``gm.leaves`` as node names.

    Example::

        gm = tensorix.fx.joint_trace(lambda x: (x * x).sum(), tensorix.randn(3, requires_grad=True))
        loss, grad = gm(x, tensorix.ones(()))        # grad = 2 * x
    """
    from .tracer import Tracer, _outputs, _placeholders, trace_backward

    attrs = _attr_paths(module_or_fn)
    tracer = Tracer(attrs)
    _placeholders(tracer, example_args, _arg_names(module_or_fn))
    with tracer:
        result = module_or_fn(*example_args)
        outs = list(result) if type(result) in (tuple, list) else [result]
        _tangents, grads, leaves = trace_backward(tracer, outs)
    tracer.check_side_effects()
    grad_nodes = tuple(None if g is None else tracer.node_of(g) for g in grads)
    tracer.graph.output(tuple(_outputs(tracer, tuple(outs))) + grad_nodes)
    gm = GraphModule(module_or_fn if attrs else None, tracer.graph, tracer.breaks)
    gm.leaves = [n.name for n, _ in leaves]
    return gm


def _attr_paths(obj) -> dict:
    """``{id(tensor): "path"}`` for a module's parameters and buffers (empty for functions)."""
    named = getattr(obj, "named_parameters", None)
    if named is None:
        return {}
    paths = {id(p): name for name, p in obj.named_parameters()}
    paths.update({id(b): name for name, b in obj.named_buffers()})
    return paths


def _arg_names(fn):
    """The parameter names of ``fn`` (its forward for a module), for placeholder names."""
    import inspect

    target = getattr(fn, "forward", fn)
    try:
        return [p.name for p in inspect.signature(target).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return None
