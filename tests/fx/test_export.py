"""tensorix.export: symbolic dims in meta and in shape arguments, runs at other sizes equal to
eager, and refuses programs that depend on data or branch on a dynamic size."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.fx import GraphBreak
from tensorix.fx.export import Dim, SymExpr


def test_symbolic_batch_of_an_mlp():
    tx.manual_seed(0)
    m = tx.nn.Sequential(tx.nn.Linear(4, 8), tx.nn.GELU(), tx.nn.Linear(8, 2))
    ep = tx.export(m, (tx.randn(5, 4),), dynamic_shapes=({0: Dim("batch", 1, 64)},))
    shapes = [n.meta["shape"] for n in ep.graph.call_nodes()]
    assert all(repr(s[0]) == "batch" for s in shapes)
    assert "(batch, 8)" in ep.graph.code
    for n in (1, 11, 64):
        x = tx.randn(n, 4)
        np.testing.assert_array_equal(ep(x).detach().numpy(), m(x).detach().numpy())
    with pytest.raises(RuntimeError, match="outside batch's range"):
        ep(tx.randn(65, 4))
    with pytest.raises(RuntimeError, match="static dim"):
        ep(tx.randn(3, 5))


def test_reshape_arguments_become_expressions():
    def f(x):
        b, t, d = x.shape
        return x.reshape(b * t, d).exp().reshape(b, t * d)

    ep = tx.export(f, (tx.randn(2, 3, 4),), dynamic_shapes=({0: "B", 1: "T"},))
    reshapes = [n for n in ep.graph.call_nodes() if n.op.__name__ == "Reshape"]
    assert [repr(a) for a in reshapes[0].args[1]] == ["B*T", "4"]
    assert [repr(a) for a in reshapes[1].args[1]] == ["B", "4*T"]
    x = tx.randn(5, 7, 4)
    np.testing.assert_allclose(ep(x).numpy(), f(x).numpy())


def test_gpt_exports_with_a_symbolic_batch():
    from tensorix import demo

    tx.manual_seed(0)
    model = demo.CharGPT(17, 16, d_model=16, n_heads=2, n_layers=1)
    model.eval()
    ids = tx.randint(0, 17, (2, 8))
    ep = tx.export(model, (ids,), dynamic_shapes=({0: "B"},))
    other = tx.randint(0, 17, (5, 8))
    np.testing.assert_allclose(ep(other).detach().numpy(), model(other).detach().numpy(),
                               rtol=1e-6, atol=1e-6)
    # the positions tensor (arange(T)) is made outside the dispatcher: T cannot be dynamic
    with pytest.raises(GraphBreak, match="changes shape with a dynamic dim"):
        tx.export(model, (ids,), dynamic_shapes=({1: "T"},))


def test_export_refuses_data_dependence_and_shape_branches():
    with pytest.raises(GraphBreak, match="item"):
        tx.export(lambda x: x * x.sum().item(), (tx.randn(3),))

    def branchy(x):
        return x.exp() if x.shape[0] < 4 else x.sin().cos()

    with pytest.raises(GraphBreak, match="different ops"):
        tx.export(branchy, (tx.randn(3),), dynamic_shapes=({0: "n"},))
    with pytest.raises(ValueError, match="names dim 2"):
        tx.export(lambda x: x, (tx.randn(3),), dynamic_shapes=({2: "n"},))


def test_sym_expr_forms():
    assert SymExpr("prod", 3, ("a", "b")).evaluate({"a": 2, "b": 5}) == 30
    affine = SymExpr("affine", 1, {"a": 2})
    assert repr(affine) == "2*a + 1" and affine.evaluate({"a": 4}) == 9


@pytest.mark.xfail(strict=True, reason="known gap: Python's comparisons of sizes are not "
                   "recorded as guards, so a branch on a dynamic size at a threshold the "
                   "probe trace does not cross goes unseen (docs/compile.md, not done)")
def test_a_branch_on_a_dynamic_size_is_seen():
    def f(x):
        return x.exp() if x.shape[0] > 4 else x.sin()

    try:
        ep = tx.export(f, (tx.randn(3),), dynamic_shapes=({0: Dim("n")},))
    except GraphBreak:
        return  # refusing the program is right too
    x = tx.randn(6)
    np.testing.assert_allclose(ep(x).numpy(), f(x).numpy())
