"""tensorix.export: symbolic dims in meta and in shape arguments, runs at other sizes equal to
eager, and refuses programs that depend on data or branch on a dynamic size."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.fx import GraphBreak
from tensorix.fx.export import Dim, SpecializationWarning, SymExpr


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
    # the positions tensor (arange(T)) is made outside the dispatcher from T's value: T is
    # specialised, with a warning, and another T is refused
    with pytest.warns(SpecializationWarning,
                      match=r"'T' \(ids.shape\[1\]\) is specialised to 8"):
        ep = tx.export(model, (ids,), dynamic_shapes=({1: "T"},))
    assert ep.specialized == {"T": 8} and "specialized: T = 8" in repr(ep)
    with pytest.raises(RuntimeError, match="must be 8"):
        ep(tx.randint(0, 17, (2, 9)))


def test_export_refuses_data_dependence_and_shape_branches():
    with pytest.raises(GraphBreak, match="item"):
        tx.export(lambda x: x * x.sum().item(), (tx.randn(3),))

    with pytest.raises(ValueError, match="names dim 2"):
        tx.export(lambda x: x, (tx.randn(3),), dynamic_shapes=({2: "n"},))


def test_sym_expr_forms():
    assert SymExpr("prod", 3, ("a", "b")).evaluate({"a": 2, "b": 5}) == 30
    affine = SymExpr("affine", 1, {"a": 2})
    assert repr(affine) == "2*a + 1" and affine.evaluate({"a": 4}) == 9


def _close(ep, f, *xs):
    np.testing.assert_allclose(ep(*xs).detach().numpy(), f(*xs).detach().numpy(), rtol=1e-6)


def test_a_branch_on_a_dynamic_size_is_guarded():
    """Issue 17: traced at 3 (and probed at 4) both sides take the else branch; at 6 the
    program used to return x + 1 where eager returns x * 2."""
    def f(x):
        return x * 2 if x.shape[0] > 4 else x + 1

    ep = tx.export(f, (tx.randn(3),), dynamic_shapes=({0: Dim("n")},))
    assert [repr(g) for g in ep.guards] == ["n <= 4"]
    assert "# guards: n <= 4" in repr(ep)
    for n in (1, 2, 4):  # the traced side of the guard
        _close(ep, f, tx.randn(n))
    with pytest.raises(RuntimeError, match=r"guard n <= 4 failed for x.shape\[0\] = 6; "
                       "re-export for this size range"):
        ep(tx.randn(6))
    other = tx.export(f, (tx.randn(6),), dynamic_shapes=({0: Dim("n")},))  # the other side
    assert [repr(g) for g in other.guards] == ["n > 4"]
    _close(other, f, tx.randn(9))


def test_a_branch_at_the_probe_size_probes_the_other_way():
    def f(x):  # traced at 3, the probe at 4 takes the other branch: probe at 2 instead
        return x.exp() if x.shape[0] < 4 else x.sin().cos()

    ep = tx.export(f, (tx.randn(3, 2),), dynamic_shapes=({0: "n"},))
    assert [repr(g) for g in ep.guards] == ["n < 4"]
    assert repr(ep.graph.placeholders[0].meta["shape"][0]) == "n"
    _close(ep, f, tx.randn(2, 2))
    with pytest.raises(RuntimeError, match="guard n < 4 failed"):
        ep(tx.randn(4, 2))


def test_min_and_max_of_sizes_are_guarded():
    def f(x, y):
        k = min(x.shape[0], y.shape[0])  # x's size while a <= b
        m = max(x.shape[0], 4)  # the constant 4 while a < 4
        return x.reshape(k, -1) * m + y[0]

    x, y = tx.randn(3, 2), tx.randn(5, 2)
    ep = tx.export(f, (x, y), dynamic_shapes=({0: Dim("a", 2)}, {0: Dim("b", 2)}))
    assert [repr(g) for g in ep.guards] == ["b >= a", "a < 4"]
    _close(ep, f, tx.randn(2, 2), tx.randn(7, 2))
    _close(ep, f, tx.randn(3, 2), tx.randn(3, 2))
    with pytest.raises(RuntimeError, match=r"guard a < 4 failed for x.shape\[0\] = 5"):
        ep(tx.randn(5, 2), tx.randn(9, 2))  # max(5, 4) is 5, not the traced 4
    with pytest.raises(RuntimeError, match=r"guard b >= a failed for x.shape\[0\] = 3, "
                       r"y.shape\[0\] = 2"):
        ep(tx.randn(3, 2), tx.randn(2, 2))  # min is y's size now


def test_a_loop_over_a_size_specialises_it():
    def f(x):
        out = x[0]
        for i in range(1, x.shape[0]):  # unrolled: the graph is only right for this size
            out = out + x[i]
        return out

    x = tx.randn(3, 2)
    with pytest.warns(SpecializationWarning, match=r"'n' \(x.shape\[0\]\) is specialised to 3"):
        ep = tx.export(f, (x,), dynamic_shapes=({0: "n"},))
    assert ep.specialized == {"n": 3} and ep.dims[0][0] == 3
    _close(ep, f, tx.randn(3, 2))
    with pytest.raises(RuntimeError, match="must be 3"):
        ep(tx.randn(5, 2))


def test_size_arithmetic_into_reshape_needs_no_guard():
    def f(x):
        n = x.shape[0]
        return x.reshape(-1, n * 2).sum(0) + x.reshape(n * 2, -1).sum()

    ep = tx.export(f, (tx.randn(4, 2, 3),), dynamic_shapes=({0: Dim("n", 2, 64)},))
    assert ep.guards == [] and ep.specialized == {}
    for n in (2, 5, 16):
        _close(ep, f, tx.randn(n, 2, 3))


def test_a_mean_over_a_dynamic_dim_is_not_frozen():
    """The count a mean divides by is a Python number made from the size: it used to be
    baked into the graph (the mean at 8 rows came out twice the eager one); it now fixes the
    dim, with a warning, and other sizes are refused."""
    f = lambda x: x.mean()  # noqa: E731
    with pytest.warns(SpecializationWarning, match="'n'"):
        ep = tx.export(f, (tx.randn(4, 3),), dynamic_shapes=({0: "n"},))
    _close(ep, f, tx.randn(4, 3))
    with pytest.raises(RuntimeError, match="must be 4"):
        ep(tx.randn(8, 3))
    ep = tx.export(lambda x: x.mean(1), (tx.randn(4, 3),), dynamic_shapes=({0: "n"},))
    _close(ep, lambda x: x.mean(1), tx.randn(8, 3))  # a static count: no guard needed
    assert ep.guards == []


def test_no_size_dependent_python_has_no_guards():
    tx.manual_seed(0)
    m = tx.nn.Sequential(tx.nn.Linear(4, 8), tx.nn.ReLU(), tx.nn.Linear(8, 3))
    ep = tx.export(m, (tx.randn(5, 4),), dynamic_shapes=({0: "batch"},))
    assert ep.guards == [] and "guards" not in repr(ep)
    for n in (1, 7, 33):
        _close(ep, m, tx.randn(n, 4))


def test_guard_algebra():
    from tensorix.fx.symint import Guard

    n, b = ("sym", SymExpr("prod", 1, ("n",))), ("sym", SymExpr("prod", 1, ("b",)))
    ranges = {"n": (0, 100), "b": (2, 100)}
    assert Guard(">=", n, ("const", 0)).always(ranges)
    assert Guard("==", ("*", n, ("const", 2)), ("+", n, n)).always(ranges)
    six_n, two_n = ("*", n, ("const", 6)), ("*", n, ("const", 2))
    assert Guard("==", ("%", six_n, two_n), ("const", 0)).always(ranges)
    assert not Guard("!=", n, ("const", 0)).always(ranges)  # n may be 0
    assert Guard("!=", b, ("const", 0)).always(ranges)
    assert not Guard("<", n, b).always(ranges)
    g = Guard.from_trace((">", n, ("const", 4)), False)
    assert repr(g) == "n <= 4" and g.check({"n": 4}) and not g.check({"n": 5})


def test_one_symbol_for_two_dims_of_one_argument():
    """The probe grows every dim a symbol names: it used to grow only the last one of an
    argument (export of a square matmul failed)."""
    f = lambda x: (x @ x).sum(0)  # noqa: E731
    ep = tx.export(f, (tx.randn(3, 3),), dynamic_shapes=({0: "n", 1: "n"},))
    _close(ep, f, tx.randn(5, 5))
    with pytest.raises(RuntimeError, match="but n is 5"):
        ep(tx.randn(5, 4))
