"""The graph IR, the capture hook and the interpreter: graphs equal eager, edits keep the
graph valid, and Python reads of traced data are recorded as graph breaks."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.autograd.grad_mode import modes
from tensorix.fx import Graph, GraphBreak, Tracer, joint_trace, symbolic_trace
from tensorix.ops.elementwise import Add, Mul


def _mlp():
    tx.manual_seed(0)
    return tx.nn.Sequential(tx.nn.Linear(4, 8), tx.nn.GELU(), tx.nn.Linear(8, 2))


def test_hook_records_primitives_once_and_restores_the_slot():
    x, y = tx.randn(3), tx.randn(3)
    tracer = Tracer()
    with tracer:
        z = (x * y + x).sum()
    assert modes.state.tracer is None
    calls = [n.op.__name__ for n in tracer.graph.call_nodes()]
    assert calls == ["Mul", "Add", "Sum"]  # no inner primitive of a composite twice
    assert tracer.graph.call_nodes()[-1].meta["shape"] == ()
    assert float(z) == pytest.approx(float((x * y + x).sum()))


def test_trace_of_a_module_equals_eager_values_and_grads(device):
    model = _mlp().to(device)
    x = tx.randn(5, 4, device=device)
    gm = symbolic_trace(model, x)
    assert [n.op for n in gm.graph.nodes][:3] == ["placeholder", "get_attr", "get_attr"]
    x2 = tx.randn(5, 4, device=device, requires_grad=True)
    out = gm(x2)
    ref = model(x2)
    np.testing.assert_array_equal(out.detach().cpu().numpy(), ref.detach().cpu().numpy())
    (g_graph,) = tx.autograd.grad(out.sum(), [x2])
    (g_eager,) = tx.autograd.grad(ref.sum(), [x2])
    np.testing.assert_array_equal(g_graph.cpu().numpy(), g_eager.cpu().numpy())


def test_graph_reads_parameters_live():
    model = _mlp()
    x = tx.randn(2, 4)
    gm = symbolic_trace(model, x)
    with tx.no_grad():
        model[0].weight.mul_(2.0)
    np.testing.assert_array_equal(gm(x).detach().numpy(), model(x).detach().numpy())


def test_printing_lists_every_node_with_meta():
    gm = symbolic_trace(lambda a, b: (a * b).exp(), tx.randn(2, 3), tx.randn(2, 3))
    table = gm.graph.tabular()
    assert "placeholder" in table and "Mul" in table and "Exp" in table and "(2, 3)" in table
    assert gm.code.startswith("def forward(a, b):")
    assert "return exp" in gm.code


def test_edits_insert_erase_and_replace_uses():
    gm = symbolic_trace(lambda a: (a * a).exp(), tx.randn(4))
    g = gm.graph
    mul = next(n for n in g.nodes if n.op is Mul)
    with g.inserting_after(mul):
        add = g.call(Add, (mul, mul.args[0]))
    exp = next(n for n in g.call_nodes() if n.op.__name__ == "Exp")
    assert mul.replace_all_uses_with(add) == 2  # exp and the new add itself read it
    add.set_args((mul, mul.args[0]))  # undo the self-reference
    g.lint()
    x = tx.randn(4)
    np.testing.assert_allclose(gm(x).numpy(), (x * x + x).exp().numpy(), rtol=1e-6)
    exp.replace_all_uses_with(add)
    g.erase_node(exp)
    g.lint()
    np.testing.assert_allclose(gm(x).numpy(), (x * x + x).numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="still has users"):
        g.erase_node(mul)


def test_graph_built_by_hand_runs():
    g = Graph()
    x = g.placeholder("x", shape=(3,))
    g.output(g.call(Mul, (x, x)))
    from tensorix.fx import Interpreter

    t = tx.tensor([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(Interpreter(g).run(t).numpy(), [1.0, 4.0, 9.0])
    with pytest.raises(TypeError, match="missing input"):
        Interpreter(g).run()


@pytest.mark.parametrize("read", [lambda t: t.sum().item(), lambda t: bool(t.sum() > 0),
                                  lambda t: float(t.numpy().sum())])
def test_python_reading_traced_data_is_a_graph_break(read):
    gm = symbolic_trace(lambda t: t * read(t), tx.randn(3))
    assert gm.breaks and "traced tensor" in gm.breaks[0]
    tracer = Tracer(strict=True)
    x = tx.randn(3)
    tracer.bind(x, tracer.graph.placeholder("x"))
    with pytest.raises(GraphBreak, match="graph break"), tracer:
        read(x)
    assert modes.state.tracer is None


def test_in_place_write_outside_the_dispatcher_is_a_graph_break():
    def f(t):
        u = t * 2
        u.add_(1.0)
        return u * 3

    gm = symbolic_trace(f, tx.randn(3))
    assert any("in place" in b for b in gm.breaks)


def test_nested_trace_refused():
    with Tracer(), pytest.raises(RuntimeError, match="already running"), Tracer():
        pass


def test_joint_trace_records_the_backward_and_equals_autograd():
    model = _mlp()
    x = tx.randn(5, 4, requires_grad=True)
    gm = joint_trace(lambda x: model(x).tanh().sum(), x)
    assert gm.leaves[0] == "x" and len(gm.leaves) == 5  # the input and 4 parameters
    names = {n.op.__name__ for n in gm.graph.call_nodes()}
    assert "GeluBackward" not in names and "Tanh" in names  # primitives of the backward too
    x2 = tx.randn(5, 4, requires_grad=True)
    loss, *grads = gm(x2, tx.ones(()))
    ref = model(x2).tanh().sum()
    ref_grads = tx.autograd.grad(ref, [x2, *model.parameters()])
    np.testing.assert_allclose(loss.item(), ref.item(), rtol=1e-6)
    for a, b in zip(grads, ref_grads):
        np.testing.assert_allclose(a.detach().numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_backward_inside_a_trace_is_a_graph_break():
    w = tx.randn(3, requires_grad=True)

    def step(x):
        loss = (w * x).sum()
        loss.backward()  # writes w.grad: not an op, a graph would not redo it
        return loss

    gm = symbolic_trace(step, tx.randn(3))
    assert any(".grad was written" in b for b in gm.breaks)


def test_primitives_called_inside_a_forward_are_not_recorded():
    from tensorix.autograd import Function

    class Composite(Function):  # its forward runs two primitives through the dispatcher
        @staticmethod
        def forward(ctx, x):
            return (x * x).exp()._data

        @staticmethod
        def backward(ctx, g):
            return g

    tracer = Tracer()
    x = tx.randn(3)
    tracer.bind(x, tracer.graph.placeholder("x", shape=(3,)))
    with tracer:
        y = Composite.apply(x)
        z = y + 1.0
    assert [n.op.__name__ for n in tracer.graph.call_nodes()] == ["Composite", "Add"]
    assert tracer.node_of(z).args[0] is tracer.node_of(y)
