"""The passes keep the program's values (checked by running the graph before and after on
random inputs) and do what they say: every rewrite rule fires on its example and is checked on
random inputs, dead and duplicate nodes go, small constant expressions fold, cancelling
transposes/reshapes vanish, fusion groups elementwise chains with their sums, and the memory
plan reuses buffers."""

import numpy as np
import pytest

import tensorix as tx
from tensorix._compile.fusion import partition
from tensorix.fx import symbolic_trace
from tensorix.fx.memory import plan_memory
from tensorix.fx.passes import constant_fold, cse, dce, eliminate_movement, optimize
from tensorix.fx.rewrite import EQUALITIES, RULES, apply_once, simplify


def _ops(gm):
    return [n.op.__name__ for n in gm.graph.call_nodes()]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_every_rewrite_rule_fires_and_keeps_values(rule):
    rng = np.random.default_rng(0)
    # positive inputs keep log/pow rules in their domain; float64 so that a reassociated
    # constant differs from eager by rounding only
    xs = [tx.tensor(rng.uniform(0.5, 2.0, (4, 5))) for _ in range(rule.arity)]
    gm = symbolic_trace(rule.example, *xs)
    before = len(gm.graph.call_nodes())
    assert simplify(gm.graph, [rule]) >= 1, f"{rule.name} did not fire"
    dce(gm.graph)
    assert len(gm.graph.call_nodes()) < before or rule.name in ("add-neg", "sub-neg",
                                                                "neg-sub", "mul-neg-one",
                                                                "pow-two")
    for _ in range(3):
        ys = [tx.tensor(rng.uniform(0.5, 2.0, (4, 5))) for _ in range(rule.arity)]
        np.testing.assert_allclose(gm(*ys).numpy(), rule.example(*ys).numpy(), rtol=1e-14)


@pytest.mark.parametrize("rule", RULES + EQUALITIES, ids=lambda r: r.name)
def test_both_sides_of_every_rule_are_equal_on_random_inputs(rule):
    """Each rule (the equalities too) applied where it matches, with no cost deciding, keeps
    the values: its two sides are equal (to rounding, for the reassociating ones)."""
    rng = np.random.default_rng(1)
    xs = [tx.tensor(rng.uniform(0.5, 2.0, (3, 4))) for _ in range(rule.arity)]
    gm = symbolic_trace(rule.example, *xs)
    assert apply_once(gm.graph, [rule]) >= 1, f"{rule.name} did not match its example"
    dce(gm.graph)
    for _ in range(3):
        ys = [tx.tensor(rng.uniform(-2.0, 2.0, (3, 4))) for _ in range(rule.arity)]
        if rule.name in ("log-exp", "pow-one", "pow-two"):
            ys = [y.abs() + 0.5 for y in ys]
        np.testing.assert_allclose(gm(*ys).numpy(), rule.example(*ys).numpy(), rtol=1e-14)


@pytest.mark.parametrize("fn, ops", [
    (lambda x: (x.new_full((), 3.0) * x) * 0.25, ["Mul"]),   # commuted, constants folded
    (lambda x: x.new_full((), 2.0) * (x * 4.0) + 0.0, ["Mul"]),
    (lambda x: (-x) * (-(x.exp())), ["Exp", "Mul"]),   # the negations cancel
    (lambda x: (x.new_full((), -1.0) * x) * -1.0, []),      # -(-x), then x
])
def test_equality_saturation_finds_what_no_single_rewrite_order_does(fn, ops):
    """These need a rule that is no simplification by itself (commutativity, moving a
    negation): a rewrite system cannot apply it, the e-graph keeps both sides and extracts the
    cheapest program."""
    x = tx.randn(3, 4, dtype=tx.float64)
    gm = symbolic_trace(fn, x)
    while apply_once(gm.graph, RULES):  # the rules alone, as a rewrite system, stall earlier
        dce(gm.graph)
    dce(gm.graph)
    assert len(_ops(gm)) > len(ops)
    gm = symbolic_trace(fn, x)
    simplify(gm.graph)
    dce(gm.graph)
    assert _ops(gm) == ops
    y = tx.randn(3, 4, dtype=tx.float64)
    np.testing.assert_allclose(gm(y).numpy(), fn(y).numpy(), rtol=1e-14)


def test_rules_skip_rewrites_that_would_change_shape_or_dtype():
    ones = tx.ones(3, 4)  # x * ones(3, 4) broadcasts x: not the identity
    gm = symbolic_trace(lambda x: x * ones, tx.randn(4))
    assert simplify(gm.graph) == 0


def test_dce_and_cse():
    def f(x):
        unused = x.exp()  # noqa: F841
        return x.sin() + x.sin()

    gm = symbolic_trace(f, tx.randn(3))
    assert _ops(gm) == ["Exp", "Sin", "Sin", "Add"]
    assert cse(gm.graph) == 1 and dce(gm.graph) == 1
    assert _ops(gm) == ["Sin", "Add"]
    x = tx.randn(3)
    np.testing.assert_allclose(gm(x).numpy(), f(x).numpy())


def test_random_ops_are_not_merged_or_removed():
    from tensorix.autograd import Function
    from tensorix.fx import Graph

    class RandLike(Function):  # a primitive that draws random numbers
        @staticmethod
        def forward(ctx, x):
            return np.random.default_rng().random(x.shape)

    g = Graph()
    x = g.placeholder("x", shape=(3,))
    a, b = g.call(RandLike, (x,)), g.call(RandLike, (x,))
    g.call(RandLike, (x,))  # unused, but it draws
    g.output((a, b))
    assert cse(g) == 0 and dce(g) == 0 and len(g.call_nodes()) == 3


def test_constant_fold_small_only():
    c = tx.tensor([1.0, 2.0])
    gm = symbolic_trace(lambda x: x + (c * 2.0).exp(), tx.randn(2))
    assert constant_fold(gm.graph) == 2
    dce(gm.graph)
    assert _ops(gm) == ["Add"]
    big = tx.ones(())
    gm = symbolic_trace(lambda x: x + big.expand(300, 300), tx.randn(300, 300))
    assert constant_fold(gm.graph) == 0  # a 90,000-element broadcast stays a view


def test_transpose_and_reshape_elimination():
    def f(x):
        y = x.permute(1, 0, 2).permute(1, 0, 2)  # identity
        z = x.reshape(6, 4).reshape(2, 12)  # one reshape
        return y.exp() + z.reshape(2, 3, 4)  # back to x's shape: gone

    x = tx.randn(2, 3, 4)
    gm = symbolic_trace(f, x)
    eliminate_movement(gm.graph)
    dce(gm.graph)
    assert "Permute" not in _ops(gm) and _ops(gm).count("Reshape") == 0
    np.testing.assert_allclose(gm(x).numpy(), f(x).numpy())


def test_fusion_groups_chains_and_sums_and_respects_outside_users():
    def f(x, b):
        y = (x * 2.0 + b).tanh()  # a chain with a broadcast bias
        s = y.sum(-1)  # a trailing sum fuses
        m = y @ y.T  # an outside user of y: y is a group output
        return s, m

    gm = symbolic_trace(f, tx.randn(4, 5), tx.randn(5))
    optimize(gm.graph)
    (group,) = partition(gm.graph)
    assert [n.op.__name__ for n in group.nodes] == ["Mul", "Add", "Tanh", "Sum"]
    assert {n.op.__name__ for n in group.outputs} == {"Tanh", "Sum"}
    assert group.split == (1, "inner")


def test_memory_plan_reuses_dead_buffers():
    def f(x):
        for _ in range(6):
            x = (x @ x).tanh()
        return x

    gm = symbolic_trace(f, tx.randn(64, 64))
    plan = plan_memory(gm.graph.nodes)
    assert plan.no_reuse_bytes == 12 * 64 * 64 * 4
    assert plan.peak_bytes <= 2 * 64 * 64 * 4 and len(plan.sizes) <= 2
    assert "MemoryPlan(" in repr(plan)


def test_optimize_reaches_a_fixed_point_and_keeps_values():
    def f(x):
        y = ((x * 1.0).neg().neg() + 0.0).exp().log()
        return y.permute(1, 0).permute(1, 0) * 2.0 * 0.5

    x = tx.randn(3, 4, dtype=tx.float64)
    gm = symbolic_trace(f, x)
    counts = optimize(gm.graph)
    assert counts["simplify"] >= 4 and _ops(gm) == []  # x * 2 * 0.5 = x * 1 = x
    # log(exp(x)) rounds once more in eager: 1 ulp of the exp's scale, absolute
    np.testing.assert_allclose(gm(x).numpy(), f(x).numpy(), rtol=1e-15, atol=1e-15)
