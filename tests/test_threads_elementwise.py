"""Elementwise kernels and sums split over the library's pool (tensorix/_threads.py:
elementwise, ufunc, reduce_sum): an elementwise result is bit-identical to the unsplit kernel
whatever the split; a split float32 sum stays within its stated bound."""

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix import _threads
from tensorix.autograd.dispatch import kernel
from tensorix.ops import elementwise as ew
from tensorix.ops.activation import Gelu


@pytest.fixture
def split_small(monkeypatch, counted_parts):
    """Two threads, and every elementwise kernel big enough to split; yields the parts run."""
    monkeypatch.setattr(_threads, "CHEAP", 8)
    monkeypatch.setattr(_threads, "COSTLY", 8)
    monkeypatch.setattr(_threads, "BLOCK", 8)  # blockwise kernels (sigmoid, gelu)
    monkeypatch.setattr(ew, "_SPLIT_SIZE", 16)
    return counted_parts


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint8)


SHAPES = [
    ((1001,), (1001,)),            # flat split of 1-d operands, an odd length
    ((1, 999), (1, 999)),          # axis 0 too short: flat split
    ((37, 29), (29,)),             # a bias row broadcast: split by rows, the row shared
    ((37, 29), (1, 29)),
    ((37, 1), (37, 29)),           # a column broadcast along axis 1: rows of both
    ((5, 37, 29), ()),             # a 0-d operand
]


@pytest.mark.parametrize("sa, sb", SHAPES)
@pytest.mark.parametrize("fn", [np.add, np.multiply, np.true_divide, np.maximum, np.arctan2,
                                np.hypot, np.less])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ufunc_split_is_bit_identical(split_small, sa, sb, fn, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(sa).astype(dtype)
    b = rng.standard_normal(sb).astype(dtype)
    got = _threads.ufunc(fn, a, b)
    want = fn(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(_bits(got), _bits(want))
    assert split_small and 2 <= split_small[-1] <= 2 * _threads.OVERSPLIT


@pytest.mark.parametrize("fn", [np.exp, np.tanh, np.log1p, np.sin, np.arcsinh, np.sqrt])
def test_unary_split_is_bit_identical_on_a_strided_view(split_small, fn):
    x = np.random.default_rng(1).uniform(0, 3, (64, 40)).astype(np.float32)[:, ::3]
    assert np.array_equal(_bits(_threads.ufunc(fn, x)), _bits(fn(x)))
    assert len(split_small) == 1 and 2 <= split_small[0] <= 2 * _threads.OVERSPLIT


def test_no_split_on_one_thread_or_small_arrays(monkeypatch):
    calls = []
    monkeypatch.setattr(_threads, "_run_parts", lambda tasks, *a: calls.append(tasks))
    x = np.ones(1000, np.float32)
    assert np.array_equal(_threads.ufunc(np.exp, x), np.exp(x))  # below 2 * COSTLY
    old = tx.get_num_threads()
    tx.set_num_threads(1)
    try:
        big = np.ones(4 * _threads.COSTLY, np.float32)
        assert np.array_equal(_threads.ufunc(np.exp, big), np.exp(big))
    finally:
        tx.set_num_threads(old)
    assert calls == []


OPS = [
    ("exp", lambda x, y: x.exp()), ("log", lambda x, y: x.abs().log()),
    ("tanh", lambda x, y: x.tanh()), ("sin", lambda x, y: x.sin()),
    ("add", lambda x, y: x + y), ("mul", lambda x, y: x * y), ("div", lambda x, y: x / y),
    ("maximum", lambda x, y: tx.maximum(x, y)), ("sigmoid", lambda x, y: tx.sigmoid(x)),
    ("gelu_tanh", lambda x, y: F.gelu(x, approximate="tanh")), ("gelu", lambda x, y: F.gelu(x)),
    ("leaky_relu", lambda x, y: F.leaky_relu(x, 0.1)),
]


@pytest.mark.parametrize("name, op", OPS, ids=[n for n, _ in OPS])
def test_ops_split_match_unsplit_bits(split_small, name, op):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((67, 31)).astype(np.float32)
    y = rng.standard_normal((67, 31)).astype(np.float32)
    got = op(tx.tensor(x), tx.tensor(y)).numpy()
    assert split_small, f"{name} did not split"
    old = tx.get_num_threads()
    tx.set_num_threads(1)
    try:
        want = op(tx.tensor(x), tx.tensor(y)).numpy()
    finally:
        tx.set_num_threads(old)
    assert np.array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("dtype", [np.float64])
def test_sigmoid_blocked_kernel_keeps_the_formula_bits(dtype):
    """The float64 CPU kernel repeats the GPU formula op for op (tails, zeros, nan), its
    select a blend of bits (mixed signs: the case a masked copy was slow on). float32 runs
    ``_act32.sigmoid32`` in one pass: its bound is tested in tests/test_act_fast.py."""
    x = np.concatenate([np.random.default_rng(3).standard_normal(5000) * 30,
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 88.0, -104.0]]).astype(dtype)
    e = np.exp(-np.abs(x))
    with np.errstate(all="ignore"):
        want = np.where(x >= 0, 1 / (1 + e), e / (1 + e))
    assert np.array_equal(_bits(tx.sigmoid(tx.tensor(x)).numpy()), _bits(want))


def test_reduce_sum_split_within_bound(split_small, monkeypatch):
    monkeypatch.setattr(_threads, "SUM_MIN_PART", 1 << 10)
    x = np.random.default_rng(4).standard_normal(1 << 14).astype(np.float32)
    got = _threads.reduce_sum(x)
    assert split_small == [2] and got.dtype == np.float32
    exact = np.sum(x.astype(np.float64))
    assert abs(float(got) - exact) <= x.size * np.finfo(np.float32).eps * np.abs(x).sum()
    x64 = x.astype(np.float64)  # float64 sums keep NumPy's order exactly: not split
    assert _threads.reduce_sum(x64) == np.add.reduce(x64) and split_small == [2]


@pytest.mark.parametrize("slope", [0.01, 0.5, 1.0, 0.0, 2.0, -0.3])
def test_leaky_relu_matches_torch_bits_and_grad(slope):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(5).standard_normal(300).astype(np.float32)
    x[:5] = [0.0, -0.0, np.inf, -np.inf, np.nan]
    a = tx.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    y, ty = F.leaky_relu(a, slope), torch.nn.functional.leaky_relu(t, slope)
    np.testing.assert_array_equal(np.signbit(y.detach().numpy()), np.signbit(ty.detach().numpy()))
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    g = np.random.default_rng(6).standard_normal(300).astype(np.float32)
    y.backward(tx.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_array_equal(a.grad.numpy(), t.grad.numpy())


def test_leaky_relu_double_backward():
    x = tx.tensor(np.linspace(-2, 2, 9), requires_grad=True)
    (g,) = tx.autograd.grad(F.leaky_relu(x, 0.2).sum(), x, create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), np.where(x.detach().numpy() > 0, 1, 0.2))
    v = tx.ones(9, dtype=tx.float64, requires_grad=True)
    out = F.leaky_relu(x, 0.2) * v
    (gx,) = tx.autograd.grad(out.sum(), x, create_graph=True)
    (gv,) = tx.autograd.grad(gx.sum(), v)
    np.testing.assert_array_equal(gv.numpy(), np.where(x.detach().numpy() > 0, 1, 0.2))


@pytest.mark.parametrize("w", [0.0, 0.25, 0.4999, 0.5, 0.9, 1.0, -3.0])
def test_lerp_scalar_weight_takes_its_branch_with_the_same_bits(w):
    from tensorix.ops._one_pass import fma32

    rng = np.random.default_rng(7)
    s = rng.standard_normal(257).astype(np.float32)
    e = rng.standard_normal(257).astype(np.float32)
    diff = e - s
    wt = np.float32(w)
    # torch's vectorised form: one fused multiply-add on the weight's branch
    small = np.abs(wt) < 0.5
    want = fma32(wt if small else wt - 1, diff, s if small else e)
    got = tx.lerp(tx.tensor(s), tx.tensor(e), w).numpy()
    assert np.array_equal(_bits(got), _bits(want))
    torch = pytest.importorskip("torch")
    assert np.array_equal(_bits(got), _bits(torch.lerp(torch.tensor(s), torch.tensor(e),
                                                        w).numpy()))


def test_full_float32_sum_splits_and_keeps_the_bound(split_small, monkeypatch):
    from tensorix.ops import _reduce32

    monkeypatch.setattr(_reduce32, "MIN_PART", 1 << 10)
    # three 64 Ki-element superblocks (ops/_reduce32.py): the unit a thread takes
    x = np.random.default_rng(8).standard_normal((256, 600)).astype(np.float32)
    got = tx.tensor(x).sum()
    assert split_small == [2] and got.dtype == tx.float32 and got.shape == ()
    exact = np.sum(x.astype(np.float64))
    assert abs(got.item() - exact) <= x.size * np.finfo(np.float32).eps * np.abs(x).sum()
    assert tx.tensor(x.astype(np.float64)).sum().item() == x.astype(np.float64).sum()


@pytest.mark.parametrize("shape, dim", [((64, 80), 0), ((64, 80), 1), ((7, 5, 300), 1),
                                        ((300,), 0), ((3000, 2), 0), ((2, 0, 3), 1)])
@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin_one_pass_match_torch(shape, dim, op):
    """Values and indices (latest on ties, NaN propagating) as torch's, on both NumPy paths
    (accumulate on the last axis, a loop per position over an outer axis of wide rows)."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(9).integers(-3, 3, shape).astype(np.float32)
    x.reshape(-1)[::17] = np.nan
    v, i = getattr(tx, op)(tx.tensor(x), dim)
    tv, ti = getattr(torch, op)(torch.tensor(x), dim)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())


def test_nan_to_num_fast_path_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(10).standard_normal(5000).astype(np.float32)
    x[[3, 70, 900]] = [np.nan, np.inf, -np.inf]
    for args in [(), (1.0, 2.0, -3.0), (0.5, None, None)]:
        np.testing.assert_array_equal(tx.nan_to_num(tx.tensor(x), *args).numpy(),
                                      torch.nan_to_num(torch.tensor(x), *args).numpy())
    finite = x[np.isfinite(x)]
    out = tx.nan_to_num(tx.tensor(finite))
    np.testing.assert_array_equal(out.numpy(), finite)
    assert not np.shares_memory(out.numpy(), finite)


def test_nansum_without_nan_skips_the_where_with_same_value_and_grad():
    x = np.random.default_rng(11).standard_normal(999).astype(np.float32)
    a = tx.tensor(x, requires_grad=True)
    s = tx.nansum(a)
    assert s.item() == tx.tensor(x).sum().item()
    s.backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.ones_like(x))
    x[5] = np.nan
    b = tx.tensor(x, requires_grad=True)
    tx.nansum(b).backward()
    assert b.grad.numpy()[5] == 0 and b.grad.numpy()[4] == 1


def test_large_float32_prod_within_bound():
    y = (1 + np.random.default_rng(12).standard_normal(100_003) * 1e-3).astype(np.float32)
    got = tx.prod(tx.tensor(y))
    exact = np.prod(y.astype(np.float64))
    assert got.dtype == tx.float32
    assert abs(got.item() - exact) <= y.size * np.finfo(np.float32).eps * abs(exact)
    torch = pytest.importorskip("torch")
    g = tx.tensor(y[:3000], requires_grad=True)
    t = torch.tensor(y[:3000], requires_grad=True)
    tx.prod(g).backward()
    torch.prod(t).backward()
    np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=1e-4)


def test_prelu_per_channel_weight_needs_a_channel_dim_as_in_torch():
    torch = pytest.importorskip("torch")
    x, w = np.ones(3, np.float32), np.full(3, 0.2, np.float32)
    with pytest.raises(RuntimeError):
        torch.nn.functional.prelu(torch.tensor(x), torch.tensor(w))
    with pytest.raises(RuntimeError, match=r"prelu\(\): mismatch .* channel size = 1"):
        F.prelu(tx.tensor(x), tx.tensor(w))


@pytest.mark.parametrize("role", ["exact32", "exact32_backward"])
def test_gelu_declares_its_numba_kernels_for_float32_on_the_cpu_only(role):
    pytest.importorskip("numba")
    cpu = tx.device("cpu")
    k = kernel(Gelu, role, cpu, tx.float32)
    assert k is not None and k is kernel(Gelu, role, cpu, tx.float32)  # compiled once
    assert kernel(Gelu, role, cpu, tx.float64) is None
    assert kernel(Gelu, role, tx.device("cuda"), tx.float32) is None


def test_exact_gelu_without_numba_is_the_same(monkeypatch):
    from tensorix.kernels import _cpu

    x = np.random.default_rng(13).standard_normal(1 << 18).astype(np.float32) * 3
    g = np.random.default_rng(14).standard_normal(1 << 18).astype(np.float32)

    def run():
        t = tx.tensor(x, requires_grad=True)
        F.gelu(t).backward(tx.tensor(g))
        return F.gelu(tx.tensor(x)).numpy(), t.grad.numpy()

    with_jit = run()
    monkeypatch.setattr(_cpu, "_state", {"m": None})  # as without numba
    assert _cpu.jit_kernel("gelu32") is None
    for role in ("exact32", "exact32_backward"):
        assert kernel(Gelu, role, tx.device("cpu"), tx.float32) is None  # the declared rule
    for got, want in zip(run(), with_jit):
        assert np.array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("lambd", [0.5, 0.0, 2.0])
def test_softshrink_as_x_minus_clamp_matches_torch_bits_and_grad(lambd):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(14).standard_normal(500).astype(np.float32) * 2
    x[:8] = [lambd, -lambd, 0.0, -0.0, np.inf, -np.inf, np.nan, np.nextafter(lambd, 9)]
    a, t = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, ty = F.softshrink(a, lambd), torch.nn.functional.softshrink(t, lambd)
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    g = np.random.default_rng(15).standard_normal(500).astype(np.float32)
    y.backward(tx.tensor(g))
    ty.backward(torch.tensor(g))
    # at NaN torch itself differs (1 from its scalar loop, 0 from its vector one): left out
    ok = ~np.isnan(x)
    np.testing.assert_array_equal(a.grad.numpy()[ok], t.grad.numpy()[ok])


def test_nan_to_num_dense_non_finite_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(16).standard_normal(3000).astype(np.float32)
    x[::3], x[1::5], x[2::7] = np.nan, np.inf, -np.inf
    for args in [(), (1.0, 2.0, -3.0), (np.inf, None, -np.inf)]:
        np.testing.assert_array_equal(tx.nan_to_num(tx.tensor(x), *args).numpy(),
                                      torch.nan_to_num(torch.tensor(x), *args).numpy())
