"""The einsum engine: syntax against NumPy/torch, errors, plans and caching, every semiring
against a brute-force reference, gradients against torch and second-order checks."""

from __future__ import annotations

import importlib
import itertools
import warnings

import numpy as np
import opt_einsum
import pytest

import tensorix as tx
from tensorix.testing import assert_close, gradcheck, gradgradcheck
from tensorix.testing.opinfo.einsum import brute_einsum, brute_einsum_torch

from ._harness import torch

einsum_mod = importlib.import_module("tensorix.ops.einsum")  # the name alone is the function
SEMIRINGS = ["sum-product", "log-sum-exp", "max-product", "max-plus", "min-product",
             "min-plus", "boolean"]
STRATEGIES = ["auto", "greedy", "optimal", "dp", "branch-2", "branch-all", False, True]
SIZES = {"a": 2, "b": 3, "c": 4, "d": 2, "e": 3, "f": 1}


def T(a, rg=False, dtype=None):
    return tx.tensor(np.asarray(a), dtype=dtype, requires_grad=rg)


def random_problem(rng, n_ops=None, repeat=True, bcast=True, max_nd=3):
    """A random equation (implicit or explicit; repeated labels; size-1 broadcasting)."""
    n_ops = n_ops or int(rng.integers(1, 5))
    terms, shapes = [], []
    for _ in range(n_ops):
        t = list(rng.choice(list(SIZES), size=int(rng.integers(0, max_nd + 1))))
        if not repeat:
            t = list(dict.fromkeys(t))
        shape = [SIZES[c] for c in t]
        if bcast and t and rng.random() < 0.3:
            i = int(rng.integers(len(t)))
            if t.count(t[i]) == 1:
                shape[i] = 1
        terms.append("".join(t))
        shapes.append(tuple(shape))
    used = sorted(set("".join(terms)))
    eq = ",".join(terms)
    if rng.random() > 0.3:
        out = list(rng.permutation(used))[:int(rng.integers(0, len(used) + 1))]
        eq += "->" + "".join(out)
    return eq, shapes


# -- syntax ----------------------------------------------------------------------------------

SYNTAX = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ba", [(2, 3)]),
    ("ij,Aj", [(2, 3), (4, 3)]), (" i j , j k -> i k ", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("iii->i", [(2, 2, 2)]), ("iji->ij", [(2, 3, 2)]),
    ("ij->", [(2, 3)]), ("i->", [(4,)]), ("->", [()]), ("", [()]), (",->", [(), ()]),
    ("i,->i", [(3,), ()]), ("ij->ji", [(2, 3)]), ("ij,ij", [(2, 3), (2, 3)]),
    ("...ij,...jk", [(5, 2, 3), (3, 4)]), ("...ij,...jk->ik", [(5, 2, 3), (1, 3, 4)]),
    ("...ij->...", [(2, 3, 4)]), ("i...->...", [(3, 2, 2)]), ("...ii->...i", [(2, 3, 3)]),
    ("...,...", [(2, 3), (3,)]), ("b...i,b...i->b...", [(2, 1, 3), (2, 4, 3)]),
    ("ij...,jk...->ik...", [(2, 3), (3, 4, 5)]), ("...", [(2, 3)]),
    ("ij,jk,kl,lm->mi", [(2, 3), (3, 2), (2, 3), (3, 2)]), ("ij,ij->ij", [(2, 1), (1, 4)]),
    ("ij,jk", [(2, 1), (3, 4)]), ("i,j,k->kji", [(2,), (3,), (4,)]),
]


NUMPY_REFUSES = {"...ij,...jk->ik"}


@pytest.mark.parametrize("eq,shapes", SYNTAX, ids=[e for e, _ in SYNTAX])
def test_syntax_matches_numpy_and_torch(eq, shapes, rng):
    arrays = [rng.standard_normal(s) for s in shapes]
    got = tx.einsum(eq, *[T(a) for a in arrays])
    assert_close(got, brute_einsum(eq, *arrays), what=eq)
    if eq not in NUMPY_REFUSES:  # NumPy cannot sum '...' dims away; torch can
        assert_close(got, np.einsum(eq, *arrays), what=eq)
    if torch is not None:
        assert_close(got, torch.einsum(eq, *[torch.from_numpy(a) for a in arrays]), what=eq)


def test_call_forms(rng):
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    want = a @ b
    assert_close(tx.einsum("ij,jk", [T(a), T(b)]), want)
    assert_close(tx.einsum("ij,jk", (T(a), T(b))), want)
    assert_close(tx.einsum(T(a), [0, 1], T(b), [1, 2], [0, 2]), want)
    assert_close(tx.einsum(T(a), [0, 1], T(b), [1, 2]), want)
    x = rng.standard_normal((5, 2, 3))
    assert_close(tx.einsum(T(x), [Ellipsis, 0, 1], T(b), [1, 2], [Ellipsis, 0, 2]), x @ b)
    assert_close(tx.einsum(T(a), [1, 0]), np.einsum(a, [1, 0]))  # implicit: integer order


def test_random_equations_match_brute_force_and_numpy():
    rng = np.random.default_rng(7)
    for _ in range(120):
        eq, shapes = random_problem(rng)
        arrays = [rng.standard_normal(s) for s in shapes]
        got = tx.einsum(eq, *[T(a) for a in arrays], optimize=rng.choice(STRATEGIES[:5]))
        assert_close(got, brute_einsum(eq, *arrays), what=eq)
        assert_close(got, np.einsum(eq, *arrays), what=eq)


def test_dtypes_and_promotion(rng):
    a = rng.integers(-5, 5, (3, 4))
    b = rng.integers(-5, 5, (4, 2))
    got = tx.einsum("ij,jk->ik", T(a), T(b))
    assert got.dtype == tx.int64
    assert np.array_equal(got.numpy(), a @ b)
    mixed = tx.einsum("ij,jk", T(a.astype(np.float32)), T(b.astype(np.float64)))
    assert mixed.dtype == tx.float64
    assert tx.einsum("ij,jk", T(a), T(b.astype(np.float32))).dtype == tx.float32
    h = tx.einsum("ij,jk", T(a, dtype=tx.float16), T(b, dtype=tx.float16))
    assert h.dtype == tx.float16
    assert_close(h, a @ b, rtol=1e-3, atol=1e-3)
    c = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    assert_close(tx.einsum("ij,kj->ik", T(c), T(c)), np.einsum("ij,kj->ik", c, c))


def test_empty_dimensions():
    out = tx.einsum("ij,jk->ik", T(np.ones((2, 0))), T(np.ones((0, 3))))
    assert tuple(out.shape) == (2, 3) and not out.numpy().any()
    assert tuple(tx.einsum("ij,jk->ik", T(np.ones((0, 2))), T(np.ones((2, 3)))).shape) == (0, 3)
    lse = tx.einsum("ij,jk->ik", T(np.ones((2, 0))), T(np.ones((0, 3))), semiring="log-sum-exp")
    assert np.all(lse.numpy() == -np.inf)
    with pytest.raises(RuntimeError, match="max-plus semiring cannot reduce over an empty"):
        tx.einsum("ij,jk->ik", T(np.ones((2, 0))), T(np.ones((0, 3))), semiring="max-plus")


# -- errors ----------------------------------------------------------------------------------

ERRORS = [
    ("ij,jk,kl", [(2, 3), (3, 4)], "has 3 input subscripts but 2 operands"),
    ("ij", [(2, 3, 4)], r"operand 0 has 3 dimensions \(shape \[2, 3, 4\]\) but its subscript "
                        "'ij'"),
    ("ij...", [(2,)], "names 2 besides the ellipsis"),
    ("ij,jk", [(2, 3), (4, 5)], "subscript 'j' has size 4 in operand 1 but size 3 in "
                                "operand 0"),
    ("i1,jk", [(2, 3), (3, 4)], r"invalid subscript '1' in 'i1' \(operand 0\)"),
    ("ij,jk->iz", [(2, 3), (3, 4)], "output subscript 'z' does not appear in any input"),
    ("ij->ii", [(2, 3)], "output subscript 'i' appears more than once"),
    ("ii->i", [(2, 3)], "subscript 'i' is repeated in operand 0 but its dimensions have "
                        "different sizes 2 and 3"),
    ("...i...", [(2, 3)], "more than one ellipsis"),
    ("i.j", [(2, 3)], "an ellipsis must be written '...'"),
    ("ij->i->j", [(2, 3)], "more than one '->'"),
    ("...i,...i", [(2, 3), (4, 3)], r"subscript '\w' \('...' dimension 0\) has size 4 in "
                                    "operand 1"),
]


@pytest.mark.parametrize("eq,shapes,msg", ERRORS, ids=[e for e, _, _ in ERRORS])
def test_errors_name_the_subscript_and_operand(eq, shapes, msg):
    with pytest.raises(RuntimeError, match=msg):
        tx.einsum(eq, *[T(np.ones(s)) for s in shapes])


def test_argument_errors():
    x = T(np.ones((2, 2)))
    with pytest.raises(RuntimeError, match="at least one operand"):
        tx.einsum("ij")
    with pytest.raises(TypeError, match="operand 1 must be a Tensor, not int"):
        tx.einsum("ij,j", x, 3)
    with pytest.raises(TypeError, match="expected an equation string"):
        tx.einsum()
    with pytest.raises(ValueError, match=r"integers in \[0, 52\)"):
        tx.einsum(x, [0, 60])
    with pytest.raises(TypeError, match="sublist of operand 0 must be a list"):
        tx.einsum(x, "ij")
    with pytest.raises(ValueError, match="unknown semiring 'tropical'"):
        tx.einsum("ij", x, semiring="tropical")
    with pytest.raises(ValueError, match="unknown optimize strategy 'fastest'"):
        tx.einsum("ij,jk,kl", x, x, x, optimize="fastest")
    with pytest.raises(TypeError, match="optimize must be a strategy name"):
        tx.einsum("ij,jk,kl", x, x, x, optimize=3.5)
    with pytest.raises(ValueError, match=r"contraction 0 of the path, \(0, 5\), must name"):
        tx.einsum("ij,jk,kl", x, x, x, optimize=[(0, 5), (0, 1)])
    with pytest.raises(ValueError, match="leaves 2 operands uncontracted"):
        tx.einsum("ij,jk,kl", x, x, x, optimize=[(0, 1)])
    with pytest.raises(ValueError, match="max-product semiring needs non-negative operands "
                                         "but operand 1 has negative entries"):
        tx.einsum("ij,jk", x, -x, semiring="max-product")
    with pytest.raises(TypeError, match="log-sum-exp semiring needs real operands, but "
                                        "operand 0 is complex128"):
        tx.einsum("ij", T(np.ones((2, 2)) * 1j), semiring="log-sum-exp")
    with pytest.raises(TypeError, match="the equation must be a str"):
        tx.einsum_plan(3, (2, 2))
    with pytest.raises(TypeError, match="shape 0 must be a tuple of non-negative ints"):
        tx.einsum_expression("ij", "ab")


# -- plans, strategies and the cache ---------------------------------------------------------

def test_plan_contents():
    plan = tx.einsum_plan("ij,jk,kl->il", (10, 1000), (1000, 10), (10, 1000))
    assert plan.steps[0].equation == "ij,jk->ik" and plan.steps[0].positions == (0, 1)
    assert [s.shape for s in plan.steps] == [(10, 10), (10, 1000)]
    assert plan.flops == 2 * 10 * 1000 * 10 * 2  # two matmuls of 10*1000*10 multiply-adds
    assert plan.naive_flops == 10 * 1000 * 10 * 1000 * 3
    assert plan.largest_intermediate == 10 * 1000
    assert plan.path == [(0, 1), (0, 1)] and plan.speedup > 100
    text = str(plan)
    for part in ("ij,jk,kl->il", "speedup", "largest intermediate: 10,000", "matmul",
                 "(10, 1000)", "sum-product"):
        assert part in text, part
    left = tx.einsum_plan("ij,jk,kl->il", (10, 1000), (1000, 10), (10, 1000), optimize=False)
    assert left.path == [(0, 1), (0, 1)]
    lse = tx.einsum_plan("bij,bjk->bik", (2, 3, 4), (2, 4, 5), semiring="log-sum-exp")
    assert "exp-bmm-log" in str(lse) and "log-sum-exp" in str(lse)
    diag = tx.einsum_plan("iij,jk->ik", (3, 3, 4), (4, 2))
    assert "diagonals taken first: iij->ij" in str(diag)


def test_paths_agree_with_opt_einsum(rng):
    eq = "ab,bc,cd,de,ea,ac->bd"
    shapes = [(3, 4), (4, 5), (5, 2), (2, 6), (6, 3), (3, 5)]
    for strategy in ("optimal", "greedy", "dp", "branch-2"):
        ours = tx.einsum_plan(eq, *shapes, optimize=strategy)
        theirs, info = opt_einsum.contract_path(eq, *shapes, shapes=True, optimize=strategy)
        assert ours.path == [tuple(c) for c in theirs], strategy
        assert ours.largest_intermediate == info.largest_intermediate, strategy


def test_all_strategies_give_the_same_values(rng):
    eq = "ab,bc,cd,de,ea->"
    shapes = [(3, 4), (4, 5), (5, 2), (2, 6), (6, 3)]
    arrays = [rng.standard_normal(s) for s in shapes]
    want = np.einsum(eq, *arrays)
    extra = [[(0, 1), (0, 1), (0, 1), (0, 1)], ["einsum_path", (3, 4), (0, 1), (0, 2), (0, 1)],
             [(0, 1, 2, 3, 4)], opt_einsum.paths.DynamicProgramming(), "random-greedy"]
    for strategy in STRATEGIES + extra:
        got = tx.einsum(eq, *[T(a) for a in arrays], optimize=strategy)
        assert_close(got, want, what=str(strategy))


def test_expressions_are_cached_and_reusable(rng, monkeypatch):
    calls = []
    real = einsum_mod.make_plan
    monkeypatch.setattr(einsum_mod, "make_plan", lambda *a, **k: calls.append(1) or real(*a, **k))
    einsum_mod._CACHE.clear()
    a, b = T(rng.standard_normal((3, 7))), T(rng.standard_normal((7, 2)))
    tx.einsum("ij,jk->ik", a, b)
    tx.einsum("ij,jk->ik", a, b)
    assert len(calls) == 1
    tx.einsum("ij,jk->ik", a, b, semiring="max-plus")
    tx.einsum("ij,jk->ik", T(rng.standard_normal((3, 8))), T(rng.standard_normal((8, 2))))
    assert len(calls) == 3
    e1 = tx.einsum_expression("ij,jk->ik", (3, 7), (7, 2))
    assert e1 is tx.einsum_expression("ij,jk->ik", a, b)
    assert_close(e1(a, b), a.numpy() @ b.numpy())
    assert_close(e1([a, b]), a.numpy() @ b.numpy())
    e64 = tx.einsum_expression("ij,jk->ik", (3, 7), (7, 2), dtype=tx.float64)
    assert e64 is not e1 and e64(a.to(tx.float32), b).dtype == tx.float64
    assert "EinsumExpression('ij,jk->ik'" in repr(e1) and e1.plan.steps
    with pytest.raises(RuntimeError, match=r"compiled for shapes \[\(3, 7\), \(7, 2\)\] but "
                                           r"operand 1 has shape \(7, 3\)"):
        e1(a, T(np.ones((7, 3))))
    with pytest.raises(RuntimeError, match="takes 2 operands, got 1"):
        e1(a)


# -- semirings against brute force -----------------------------------------------------------

def _semiring_inputs(rng, shapes, semiring):
    if semiring == "boolean":
        return [(rng.random(s) < 0.4).astype(np.float64) for s in shapes]
    if semiring.endswith("product"):
        return [rng.uniform(0.1, 2.0, s) for s in shapes]
    return [rng.uniform(-3, 3, s) for s in shapes]


@pytest.mark.parametrize("semiring", SEMIRINGS)
def test_semirings_match_brute_force(semiring):
    rng = np.random.default_rng(SEMIRINGS.index(semiring))
    for k in range(40):
        eq, shapes = random_problem(rng, n_ops=int(rng.integers(1, 5)))
        arrays = _semiring_inputs(rng, shapes, semiring)
        strategy = STRATEGIES[k % len(STRATEGIES)]
        got = tx.einsum(eq, *[T(a) for a in arrays], semiring=semiring, optimize=strategy)
        want = brute_einsum(eq, *arrays, semiring=semiring)
        assert_close(got, want, what=f"{semiring} {eq} {shapes} {strategy}")
        if semiring == "boolean":
            assert got.dtype == tx.bool


@pytest.mark.parametrize("semiring", SEMIRINGS[:6])
def test_semiring_gradients_against_torch(semiring):
    if torch is None:
        pytest.skip("torch not installed")
    rng = np.random.default_rng(10 + SEMIRINGS.index(semiring))
    for _ in range(12):
        eq, shapes = random_problem(rng, n_ops=int(rng.integers(1, 4)))
        arrays = _semiring_inputs(rng, shapes, semiring)
        xs = [T(a, rg=True) for a in arrays]
        ts = [torch.tensor(a, requires_grad=True) for a in arrays]
        y = tx.einsum(eq, *xs, semiring=semiring)
        ref = brute_einsum_torch(eq, *ts, semiring=semiring)
        assert_close(y, ref, what=eq)
        seed = rng.standard_normal(tuple(y.shape))
        gx = tx.autograd.grad([y], xs, [T(seed)], allow_unused=True)
        gt = torch.autograd.grad([ref], ts, [torch.tensor(seed)], allow_unused=True)
        for k, (a, b) in enumerate(zip(gx, gt)):
            b = np.zeros(shapes[k]) if b is None else b
            a = np.zeros(shapes[k]) if a is None else a
            assert_close(a, b, what=f"{semiring} {eq} {shapes} grad {k}")


def test_log_sum_exp_is_stable():
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (3, 4)) * 1000
    b = rng.uniform(-1, 1, (4, 5)) * 1000
    for dtype in (tx.float32, tx.float64):
        got = tx.einsum("ij,jk->ik", T(a, dtype=dtype), T(b, dtype=dtype),
                        semiring="log-sum-exp")
        assert np.isfinite(got.numpy()).all()
        assert_close(got, brute_einsum("ij,jk->ik", a, b, semiring="log-sum-exp"),
                     rtol=1e-5, atol=1e-3)
    small = rng.uniform(-2, 2, (3, 4)), rng.uniform(-2, 2, (4, 5))
    assert_close(tx.einsum("ij,jk->ik", *[T(x) for x in small], semiring="log-sum-exp"),
                 np.log(np.exp(small[0]) @ np.exp(small[1])))


def test_log_sum_exp_with_log_zero():
    with np.errstate(divide="ignore"):
        a = np.log(np.array([[0.5, 0.0, 0.5], [0.0, 0.0, 0.0]]))
        b = np.log(np.array([[1.0, 0.2], [0.3, 0.0], [0.0, 0.0]]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xa, xb = T(a, rg=True), T(b, rg=True)
        got = tx.einsum("ij,jk->ik", xa, xb, semiring="log-sum-exp")
        with np.errstate(divide="ignore"):
            want = np.log(np.exp(a) @ np.exp(b))
        assert_close(got, want)
        assert got.detach().numpy()[1, 0] == -np.inf
        # the gradient of the finite row: exp(a_ij + b_jk - out_ik), finite everywhere
        got[0].sum().backward()
    w = np.exp(a[0][:, None] + b - want[0][None, :])
    assert_close(xa.grad.numpy()[0], w.sum(1))
    assert np.all(xa.grad.numpy()[1] == 0)
    assert_close(xb.grad, w)


def test_max_plus_viterbi_and_its_gradient():
    """The best path score of a 4-step chain, and its gradient: the chosen transitions."""
    rng = np.random.default_rng(5)
    start = rng.standard_normal(3)
    trans = [rng.standard_normal((3, 3)) for _ in range(3)]
    best, arg = -np.inf, None
    for path in itertools.product(range(3), repeat=4):
        s = start[path[0]] + sum(t[path[i], path[i + 1]] for i, t in enumerate(trans))
        if s > best:
            best, arg = s, path
    ts = [T(t, rg=True) for t in trans]
    s0 = T(start, rg=True)
    score = tx.einsum("a,ab,bc,cd->", s0, *ts, semiring="max-plus")
    assert_close(score, best)
    score.backward()
    for i, t in enumerate(ts):
        onehot = np.zeros((3, 3))
        onehot[arg[i], arg[i + 1]] = 1
        assert_close(t.grad, onehot)
    assert_close(s0.grad, np.eye(3)[arg[0]])
    # the same with probabilities: max-product of exp(...) is exp of the max-plus score
    prob = tx.einsum("a,ab,bc,cd->", T(np.exp(start)), *[T(np.exp(t)) for t in trans],
                     semiring="max-product")
    assert_close(prob, np.exp(best))


def test_min_plus_shortest_paths():
    inf = np.inf
    w = np.array([[0, 4, inf, 1], [inf, 0, 1, inf], [2, inf, 0, inf], [inf, 1, 5, 0]])
    d = T(w)
    for _ in range(2):  # repeated squaring: paths of up to 4 edges
        d = tx.einsum("ij,jk->ik", d, d, semiring="min-plus")
    want = w.copy()
    for k in range(4):  # Floyd-Warshall
        want = np.minimum(want, want[:, [k]] + want[[k], :])
    assert_close(d, want)


def test_boolean_is_exact_and_counts_never_overflow():
    ones_a = T(np.ones((2, 256), dtype=np.int8))
    ones_b = T(np.ones((256, 3), dtype=np.int8))
    assert not tx.einsum("ij,jk->ik", ones_a, ones_b).numpy().any()  # int8 counts wrap to 0
    got = tx.einsum("ij,jk->ik", ones_a, ones_b, semiring="boolean")
    assert got.dtype == tx.bool and got.numpy().all() and not got.requires_grad
    # reachability: the boolean closure equals the support of matrix powers
    rng = np.random.default_rng(2)
    adj = rng.random((6, 6)) < 0.25
    reach = adj | np.eye(6, dtype=bool)
    r = T(reach)
    for _ in range(3):
        r = tx.einsum("ij,jk->ik", r, r, semiring="boolean")
    assert np.array_equal(r.numpy(), np.linalg.matrix_power(reach.astype(np.int64), 8) > 0)
    f = tx.einsum("ij,jk->ik", T(np.array([[0.5, 0.0]])), T(np.array([[0.0], [2.0]])),
                  semiring="boolean")
    assert not f.numpy().any()


# -- gradients -------------------------------------------------------------------------------

def test_gradients_against_torch_on_random_equations():
    if torch is None:
        pytest.skip("torch not installed")
    rng = np.random.default_rng(11)
    for _ in range(40):
        eq, shapes = random_problem(rng)
        arrays = [rng.standard_normal(s) for s in shapes]
        xs = [T(a, rg=True) for a in arrays]
        ts = [torch.tensor(a, requires_grad=True) for a in arrays]
        y, ref = tx.einsum(eq, *xs), torch.einsum(eq, *ts)
        assert_close(y, ref, what=eq)
        seed = rng.standard_normal(tuple(y.shape))
        gx = tx.autograd.grad([y], xs, [T(seed)], allow_unused=True)
        gt = torch.autograd.grad([ref], ts, [torch.tensor(seed)], allow_unused=True)
        for k, (a, b) in enumerate(zip(gx, gt)):
            assert_close(a, b, what=f"{eq} {shapes} grad {k}")


def test_complex_gradients_against_torch(rng):
    if torch is None:
        pytest.skip("torch not installed")
    a = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    b = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    xa, xb = T(a, rg=True), T(b, rg=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    seed = rng.standard_normal((2, 4)) + 1j * rng.standard_normal((2, 4))
    gx = tx.autograd.grad([tx.einsum("ij,jk->ik", xa, xb)], [xa, xb], [T(seed)])
    gt = torch.autograd.grad([torch.einsum("ij,jk->ik", ta, tb)], [ta, tb],
                             [torch.tensor(seed)])
    for a_, b_ in zip(gx, gt):
        assert_close(a_, b_)


GRADGRAD = [
    ("iij,jk->ki", [(3, 3, 2), (2, 4)], "sum-product"),
    ("...ij,...jk", [(2, 3, 4), (4, 2)], "sum-product"),
    ("ij,ij->ij", [(3, 1), (1, 4)], "sum-product"),
    ("ij->", [(2, 3)], "sum-product"),
    ("ii", [(3, 3)], "sum-product"),
    ("ij,jk,kl->li", [(2, 3), (3, 2), (2, 2)], "sum-product"),
    ("ij,jk,k->i", [(2, 3), (3, 2), (2,)], "log-sum-exp"),
    ("iij,jk->ki", [(3, 3, 2), (2, 4)], "log-sum-exp"),
    ("ij,jk->ik", [(2, 3), (3, 2)], "max-product"),
    ("ij,jk,k->i", [(2, 3), (3, 2), (2,)], "max-plus"),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)], "log-sum-exp"),  # LogSumExpPairGrad's gradient
]


@pytest.mark.parametrize("eq,shapes,semiring", GRADGRAD, ids=[f"{s}:{e}" for e, _, s in GRADGRAD])
def test_float64_gradcheck_and_gradgradcheck(eq, shapes, semiring, rng):
    arrays = _semiring_inputs(rng, shapes, semiring)
    xs = [T(a, rg=True) for a in arrays]
    fn = lambda *a: tx.einsum(eq, *a, semiring=semiring)  # noqa: E731
    gradcheck(fn, xs, name=eq)
    gradgradcheck(fn, xs, name=eq)


def test_gradient_of_einsum_is_an_einsum(rng):
    a = T(rng.standard_normal((3, 4)), rg=True)
    b = T(rng.standard_normal((4, 5)), rg=True)
    y = tx.einsum("ij,jk->ik", a, b)
    (ga,) = tx.autograd.grad([y.sum()], [a], create_graph=True)
    assert ga.grad_fn.name() == "ContractBackward"
    hvp = tx.autograd.grad([(ga * ga).sum()], [b])[0]  # d/db of |sum_k b_jk|^2 per row
    want = 2 * np.repeat(b.detach().numpy().sum(1, keepdims=True), 5, axis=1) * 3
    assert_close(hvp, want)


def test_diagonal_gradient_is_embedded(rng):
    x = T(rng.standard_normal((3, 3)), rg=True)
    tx.einsum("ii->i", x).sum().backward()
    assert_close(x.grad, np.eye(3))
    y = T(rng.standard_normal((2, 2, 2)), rg=True)
    tx.einsum("iii", y).backward()
    want = np.zeros((2, 2, 2))
    want[0, 0, 0] = want[1, 1, 1] = 1
    assert_close(y.grad, want)


def test_log_sum_exp_gradient_in_blocks_of_rows(monkeypatch):
    """LogSumExpPair's backward forms the (batch, m, k, n) terms in blocks of rows of m: with
    a tiny block the gradients equal torch's (and the one-block ones)."""
    from tensorix.ops import _semiring_prims

    if torch is None:
        pytest.skip("torch not installed")
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 3, 4))
    a[0, 1] = -np.inf  # a row of log(0): output -inf, gradient 0 here
    seed = rng.standard_normal((2, 5, 4))
    # torch's is nan there (and in all of b's batch 0): its reference takes that row out
    # (finite entries, no seed), which is the zero-gradient rule
    finite_a, seed_t = np.where(np.isinf(a), 0.0, a), seed.copy()
    seed_t[0, 1] = 0
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (finite_a, b))
    ref = torch.logsumexp(ta[:, :, :, None] + tb[:, None, :, :], dim=2)
    want = torch.autograd.grad([ref], [ta, tb], [torch.tensor(seed_t)])
    for chunk in (1 << 22, 8):  # one block; blocks of one row
        monkeypatch.setattr(_semiring_prims, "_CHUNK", chunk)
        xa, xb = T(a, rg=True), T(b, rg=True)
        y = tx.einsum("bij,bjk->bik", xa, xb, semiring="log-sum-exp")
        got = tx.autograd.grad([y], [xa, xb], [T(seed)])
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-14)
        # and the gradient's gradient (built from ops in the same blocks) checks numerically
        xs = [T(v, rg=True) for v in (np.where(np.isinf(a), -3.0, a), b)]
        gradgradcheck(lambda x, y: tx.einsum("bij,bjk->bik", x, y, semiring="log-sum-exp"), xs,
                      name=f"log-sum-exp blocks {chunk}")
