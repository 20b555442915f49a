"""The float32 fast paths of the reductions, scans and softmaxes (ops/_reduce32.py, numba
kernels in kernels/_jit_13red.py): the same bits with and without numba and for any thread
count, their stated bounds against float64, torch's bits where they follow torch (scans),
and the semantics around them (NaN, -0.0, keepdim, gradients) unchanged."""

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix import _threads
from tensorix.kernels import _cpu
from tensorix.ops import _reduce32

EPS = float(np.finfo(np.float32).eps)


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


def _mixed(n, seed):
    """Mixed sign and magnitude (10^-3 .. 10^3), with exact zeros."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)
    x[::97] = 0
    return x.astype(np.float32)


def _cases():
    x = _mixed((1 << 18) + 777, 0)  # 4 superblocks and a partial one with a tail
    nan = x.copy()
    nan[[5, 70000, 200001]] = np.nan
    rows = _mixed(37 * 1500, 1).reshape(37, 1500) / 100  # two blocks and a tail a row
    rows[3, 7] = np.nan
    rows[4] = -np.inf
    rows[5, 9] = np.inf
    small = _mixed(5 * 7, 2).reshape(5, 7) / 100  # rows shorter than a block: all tail
    pos = (1 + 0.01 * np.random.default_rng(3).standard_normal((64, 300))).astype(np.float32)
    return x, nan, rows, small, pos


def _results():
    x, nan, rows, small, pos = (tx.tensor(a) for a in _cases())
    out = {"sum": x.sum(), "mean": x.mean(), "sum_keepdim": x.reshape(1, -1).sum((0, 1), True),
           "nansum": tx.nansum(nan), "nanmean": tx.nanmean(nan), "nansum_clean": tx.nansum(x),
           "count_nonzero": tx.count_nonzero(x), "prod": pos.prod(),
           "prod_parts": (1 + x * 1e-6).prod(),
           "cumsum1": rows.cumsum(1), "cumsum0": rows.cumsum(0), "cumprod1": pos.cumprod(1),
           "cumprod0": pos.cumprod(0), "cumsum_small": small.cumsum(-1)}
    for name, t in (("rows", rows), ("small", small)):
        out[f"softmax_{name}"] = F.softmax(t, -1)
        out[f"log_softmax_{name}"] = F.log_softmax(t, -1)
        out[f"logsumexp_{name}"] = tx.logsumexp(t, -1)
    return {k: v.numpy() for k, v in out.items()}


def test_without_numba_and_on_one_thread_the_same_bits(monkeypatch, counted_parts):
    if _cpu.jit_kernel("sum32_blocks", np.empty(1), np.ones(1, np.float32)) is None:
        pytest.skip("numba does not build here: only the NumPy path runs")
    with monkeypatch.context() as m:  # every kernel here splits over the two threads
        m.setattr(_threads, "SUM_MIN_PART", 1)
        m.setattr(_reduce32, "MIN_PART", 1)
        m.setattr(_threads, "COSTLY", 8)
        fast = _results()
    assert len(counted_parts) >= 8 and min(counted_parts) >= 2
    tx.set_num_threads(1)
    one = _results()
    # numba present but no kernel built: the NumPy twins, the same bits
    monkeypatch.setattr(_cpu, "_state", {"m": _cpu._module(), **{("k", n): None for n in _NAMES}})
    slow = _results()
    for k in fast:
        assert np.array_equal(_bits(fast[k]), _bits(slow[k])), k
        assert np.array_equal(_bits(fast[k]), _bits(one[k])), k


_NAMES = ("sum32_blocks", "nansum32_blocks", "count32", "prod32_cols", "cumsum_rows",
          "cumprod_rows", "softmax_rows", "logsumexp_rows")


def test_without_numba_the_numpy_formulas(monkeypatch):
    """Without numba (the core install) the ops keep NumPy's own formulas, which cost less
    than the kernels' twins: a float32 sum is NumPy's pairwise sum, bit for bit, and the
    softmaxes stay within their bounds of float64."""
    monkeypatch.setattr(_cpu, "_state", {"m": None})
    assert not _reduce32.jit_ready()
    x, _, rows, _, _ = _cases()
    assert np.array_equal(_bits(tx.tensor(x).sum().numpy()), _bits(x.sum(dtype=np.float32)))
    r = np.nan_to_num(rows, nan=0.0, posinf=0.0, neginf=0.0)
    want = np.exp(r - r.max(1, keepdims=True).astype(np.float64))
    want /= want.sum(1, keepdims=True)
    got = F.softmax(tx.tensor(r), -1).numpy()
    shift = np.abs(r - r.max(1, keepdims=True))  # the rounding of x - max, scaled by exp
    assert np.all(np.abs(got - want) <= (4 + shift) * EPS * want + 1e-45)


def test_sum_within_bound_of_float64_sum():
    """Lanes of 8 float32 terms, float64 beyond: within 8 eps sum|x| of the exact sum (plus
    the final rounding); NumPy's pairwise float32 sum states about 29 eps at 1M."""
    x = _mixed(1 << 20, 4)
    exact = x.astype(np.float64).sum()
    bound = 8 * EPS * np.abs(x.astype(np.float64)).sum() + EPS * abs(exact)
    for got in (tx.tensor(x).sum(), tx.tensor(x).mean() * x.size, tx.nansum(tx.tensor(x))):
        assert got.dtype == tx.float32 and got.shape == ()
        assert abs(float(got.item()) - exact) <= bound
    assert float(tx.tensor(x).sum().item()) == float(tx.nansum(tx.tensor(x)).item())


def test_sum_edges():
    z = np.full(1 << 13, -0.0, np.float32)
    assert np.signbit(tx.tensor(z).sum().item())  # -0.0, as torch and NumPy
    inf = np.ones(1 << 13, np.float32)
    inf[[3, 9]] = [np.inf, -np.inf]
    assert np.isnan(tx.tensor(inf).sum().item())
    x = _mixed(1 << 13, 5).reshape(64, 128)
    k = tx.tensor(x).sum((0, 1), keepdim=True)
    assert k.shape == (1, 1) and k.item() == tx.tensor(x).sum().item()
    assert tx.tensor(x).sum(dtype=tx.float64).item() == x.sum(dtype=np.float64)
    nan = x.copy()
    nan[1, 2] = np.nan
    assert np.isnan(tx.tensor(nan).sum().item())
    assert tx.count_nonzero(tx.tensor(x)).item() == np.count_nonzero(x)
    assert tx.count_nonzero(tx.tensor(x), (0, 1)).dtype == tx.int64
    assert tx.tensor(x.astype(np.int32)).sum().dtype == tx.int64


def test_nan_reductions_match_torch_with_gradients():
    torch = pytest.importorskip("torch")
    x = _mixed(1 << 14, 6).reshape(128, 128) / 100
    x[[1, 7, 90], [2, 3, 127]] = np.nan
    for fn in ("nansum", "nanmean"):
        a = tx.tensor(x, requires_grad=True)
        t = torch.tensor(x, requires_grad=True)
        got, want = getattr(tx, fn)(a), getattr(torch, fn)(t)
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
        got.backward()
        want.backward()
        np.testing.assert_array_equal(a.grad.numpy(), t.grad.numpy())
    assert np.isnan(tx.nanmean(tx.tensor(np.full(1 << 13, np.nan, np.float32))).item())
    k = tx.nansum(tx.tensor(x), keepdim=True)
    assert k.shape == (1, 1)
    assert tx.count_nonzero(tx.tensor(x)).item() == torch.count_nonzero(torch.tensor(x)).item()


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_scans_carry_torchs_bits_and_gradients(op, dim):
    """torch accumulates a float32 scan in float64 on the CPU: the same bits here."""
    torch = pytest.importorskip("torch")
    x = (1 + 0.02 * np.random.default_rng(7).standard_normal((6, 40, 70))).astype(np.float32)
    if op == "cumsum":
        x = x - 1
    a, t = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got, want = getattr(tx, op)(a, dim), getattr(torch, op)(t, dim)
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    g = np.random.default_rng(8).standard_normal(x.shape).astype(np.float32)
    got.backward(tx.tensor(g))
    want.backward(torch.tensor(g))
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_scan_dtypes_unchanged():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert tx.tensor(x).cumsum(1).dtype == tx.int64
    f = tx.tensor(x.astype(np.float32))
    assert f.cumsum(1, dtype=tx.float64).dtype == tx.float64
    assert f.cumprod(0).dtype == tx.float32
    assert tx.tensor(np.float32(3)).cumsum(0).item() == 3
    assert tx.tensor(np.zeros((2, 0), np.float32)).cumsum(1).shape == (2, 0)
    # a sum starts from -0.0, as NumPy's (and CuPy's: devices agree; torch's gives 0.0 here)
    neg0 = tx.tensor(np.float32([[-0.0, -0.0, 1.0]]))
    assert np.signbit(neg0.cumsum(1).numpy()[0, :2]).all()
    assert np.array_equal(_bits(neg0.cumprod(1).numpy()), _bits(np.float32([[-0.0, 0, 0]])))


def test_softmax_rows_within_bound_of_float64():
    """x - m rounded once (0.5 eps |x - m| absolute, which exp turns relative), exp32 within
    1 ulp, the sum in float64 lanes, one rounding of t and one of the division: softmax
    within (3 + |x - m| / 2) eps relative (torch's own error reaches 3.5 + |x - m| / 2 here);
    log_softmax: (x - m) within 0.5 eps |x - m|, log32(t) within eps (lse + 1.1), the
    difference rounded: within eps (|y| + 2 lse + 2) of y (torch's reaches 3.5 eps |y| here)."""
    x = (np.random.default_rng(9).standard_normal((50, 1300)) * 4).astype(np.float32)
    x64 = x.astype(np.float64)
    m = x64.max(1, keepdims=True)
    lse = np.log(np.exp(x64 - m).sum(1, keepdims=True))
    soft = F.softmax(tx.tensor(x), -1).numpy()
    want = np.exp(x64 - m - lse)
    assert np.all(np.abs(soft - want) <= (3 + np.abs(x64 - m) / 2) * EPS * want + 1e-44)
    logs = F.log_softmax(tx.tensor(x), -1).numpy()
    y = x64 - m - lse
    assert np.all(np.abs(logs - y) <= EPS * (np.abs(y) + 2 * lse + 2))


def test_softmax_special_rows_as_before():
    """NaN anywhere in a row, an all -inf row, +inf: the rows NumPy's formula gives (on
    arrays large enough for the fast path, ``_reduce32.SOFTMAX_MIN``)."""
    x = np.random.default_rng(10).standard_normal((40, 600)).astype(np.float32)
    x[0, 5] = np.nan
    x[1] = -np.inf
    x[2, 3] = np.inf
    for log in (False, True):
        got = (F.log_softmax if log else F.softmax)(tx.tensor(x), -1).numpy()
        assert np.isnan(got[:3]).all() and not np.isnan(got[3:]).any()
    neg0 = np.zeros((40, 600), np.float32)
    neg0[0] = -0.0
    np.testing.assert_array_equal(F.softmax(tx.tensor(neg0), -1).numpy(),
                                  np.full((40, 600), 1 / 600, np.float32))


def test_softmax_grad_and_other_layouts_match_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(11).standard_normal((8, 3, 700)).astype(np.float32)
    g = np.random.default_rng(12).standard_normal(x.shape).astype(np.float32)
    for name in ("softmax", "log_softmax"):
        for dim in (-1, 1):
            a, t = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
            got, want = getattr(F, name)(a, dim), getattr(torch, name)(t, dim)
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(),
                                       rtol=2e-6, atol=2e-6)
            got.backward(tx.tensor(g))
            want.backward(torch.tensor(g))
            np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(F.softmin(tx.tensor(x), -1).numpy(),
                               torch.nn.functional.softmin(torch.tensor(x), -1).numpy(),
                               rtol=2e-6, atol=2e-7)


def test_logsumexp_rows_bound_special_rows_and_gradient():
    """log32(t) + max: within eps (|y| + 2) of float64's (t's rounding and log32's ulp); the
    shift is 0 where the maximum is not finite, so -inf, inf and NaN rows are as before."""
    torch = pytest.importorskip("torch")
    x = (np.random.default_rng(13).standard_normal((40, 900)) * 5).astype(np.float32)
    x64 = x.astype(np.float64)
    m = x64.max(1)
    y = np.log(np.exp(x64 - m[:, None]).sum(1)) + m
    got = tx.logsumexp(tx.tensor(x), 1).numpy()
    assert np.all(np.abs(got - y) <= EPS * (np.abs(y) + 2))
    x[0] = -np.inf
    x[1, 3] = np.inf
    x[2, 5] = np.nan
    got = tx.logsumexp(tx.tensor(x), -1, keepdim=True)
    assert got.shape == (40, 1)
    np.testing.assert_array_equal(got.numpy()[:3, 0], [-np.inf, np.inf, np.nan])
    a = tx.tensor(x[3:], requires_grad=True)
    t = torch.tensor(x[3:], requires_grad=True)
    tx.logsumexp(a, 1).sum().backward()
    torch.logsumexp(t, 1).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-7)
    assert tx.logsumexp(tx.tensor(x[:0]), 1).shape == (0,)


def test_fast_path_primitives_export_to_onnx():
    """NanSum, Count and LogSumExp (the fast cases' primitives) export; onnxruntime agrees."""
    pytest.importorskip("onnxruntime")
    from tests.onnx._helpers import run_ort

    x = np.random.default_rng(14).standard_normal((64, 128)).astype(np.float32)
    x[3, 4] = np.nan
    x[5, :7] = 0
    for fn in (tx.nansum, tx.nanmean, tx.count_nonzero, lambda t: tx.logsumexp(t, 1),
               lambda t: tx.nansum(t, keepdim=True)):
        want = fn(tx.tensor(x)).numpy()
        got = run_ort(tx.onnx.export(fn, (tx.tensor(x),)), [x])[0]
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, equal_nan=True)
