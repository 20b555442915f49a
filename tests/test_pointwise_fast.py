"""The float32 one-pass kernels of the pointwise ops (kernels/_jit_13pw.py, ops/_one_pass.py):
bit-identical to torch (sign, sgn, clamp, nan_to_num, frac, copysign, rsqrt, lerp, addcmul,
addcdiv) or to NumPy (floor_divide, whose NumPy loop torch's repeats; their nans differ only in
the sign bit), with numba and without it, whatever the split over threads; gradients against
torch; the other dtypes and layouts keep their paths."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import _threads
from tensorix.kernels import _cpu
from tensorix.ops import _one_pass
from tensorix.ops._one_pass import fast32, fma32

torch = pytest.importorskip("torch")

F32 = np.float32
SPECIAL = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-45, -1e-45, 1e-40, -1e-40,
                    0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3e38, -3e38, 1.0, -1.0, 0.2, -0.2], F32)


def _data(seed, n=3028, scale=4.0):
    """Special values at both ends (the kernels' vector body and any tail), random between;
    3072 elements by default, a multiple of torch's vector width (its scalar tail loop rounds
    lerp and addcmul unfused)."""
    rng = np.random.default_rng(seed)
    mid = (rng.standard_normal(n) * scale).astype(F32)
    return np.concatenate([SPECIAL, mid, SPECIAL[::-1]])


@pytest.fixture(params=["numba", "numpy"])
def path(request, monkeypatch):
    """Each test twice: with the numba kernels, and as without numba (the NumPy forms)."""
    if request.param == "numba":
        if _cpu.jit_kernel("sign32", np.empty(1, F32), np.ones(1, F32)) is None:
            pytest.skip("numba kernels unavailable")
        monkeypatch.setattr(_one_pass, "MIN_SIZE", 1)  # the kernels at every size tested
    else:
        monkeypatch.setattr(_cpu, "_state", {"m": None})
    return request.param


def _same_bits(got, want, nan_sign=True):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if not nan_sign:  # nans compared as nans (their sign bit is not part of the rule)
        both = np.isnan(got) & np.isnan(want)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        got, want = np.where(both, F32(0), got), np.where(both, F32(0), want)
    bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    assert bad.size == 0, (bad[:5], got.ravel()[bad[:5]], want.ravel()[bad[:5]])


def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


UNARY = {
    "sign": lambda m, x: m.sign(x), "sgn": lambda m, x: m.sgn(x),
    "frac": lambda m, x: m.frac(x), "rsqrt": lambda m, x: m.rsqrt(x),
    "abs": lambda m, x: m.abs(x),
    "nan_to_num": lambda m, x: m.nan_to_num(x),
    "nan_to_num_values": lambda m, x: m.nan_to_num(x, 1.5, 2.0, -3.0),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_bits_match_torch(path, name):
    x = _data(1)
    got = UNARY[name](tx, tx.from_numpy(x)).numpy()
    _same_bits(got, UNARY[name](torch, _t(x)).numpy())


CLAMPS = [(-0.5, 0.5), (0.0, None), (-0.0, None), (None, -0.0), (None, 0.0), (-0.0, 0.0),
          (2.0, 1.0), (0.2, None), (None, 0.2), (float("nan"), 1.0), (None, float("nan")),
          (float("-inf"), float("inf"))]


@pytest.mark.parametrize("lo, hi", CLAMPS)
def test_clamp_bits_match_torch(path, lo, hi):
    # torch keeps an element equal to a scalar bound (clamp(-0.0, min=0.0) is -0.0), lets hi
    # win where lo > hi, and gives nan everywhere for a nan bound
    x = _data(2)
    _same_bits(tx.clamp(tx.from_numpy(x), lo, hi).numpy(), torch.clamp(_t(x), lo, hi).numpy())
    if lo is not None:
        _same_bits(tx.clamp_min(tx.from_numpy(x), lo).numpy(), torch.clamp_min(_t(x), lo).numpy())
    if hi is not None:
        _same_bits(tx.clamp_max(tx.from_numpy(x), hi).numpy(), torch.clamp_max(_t(x), hi).numpy())


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_clamp_scalar_bounds_other_float_dtypes_keep_torchs_ties(dtype):
    x = np.clip(_data(3), -6e4, 6e4).astype(dtype)
    got = tx.clamp(tx.from_numpy(x), -0.0, 0.5).numpy()
    want = torch.clamp(_t(x), -0.0, 0.5).numpy()
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("b", [2.5, -2.5, 0.0, -0.0, float("inf"), float("-inf"), float("nan"),
                               1e-30, 3.0, 1e30, 7e-45])
def test_floor_divide_by_a_scalar_bits_match_numpy_and_torch(path, b):
    x = _data(4, scale=1e3)
    got = tx.floor_divide(tx.from_numpy(x), b).numpy()
    with np.errstate(all="ignore"):
        _same_bits(got, np.floor_divide(x, F32(b)))
    _same_bits(got, torch.floor_divide(_t(x), b).numpy(), nan_sign=False)


def test_floor_divide_elementwise_bits_match_numpy_and_torch(path):
    x, y = _data(5, scale=100.0), _data(6)[::-1].copy()
    y[::7] *= F32(1e-20)  # huge quotients: the C library's fmod, past the exact fast one
    got = tx.floor_divide(tx.from_numpy(x), tx.from_numpy(y)).numpy()
    with np.errstate(all="ignore"):
        _same_bits(got, np.floor_divide(x, y))
    _same_bits(got, torch.floor_divide(_t(x), _t(y)).numpy(), nan_sign=False)


def test_floor_divide_errors_and_integers_unchanged():
    a = tx.tensor([7, -7])
    assert tx.floor_divide(a, 2).tolist() == [3, -4]
    with pytest.raises(ZeroDivisionError, match="floor_divide"):
        tx.floor_divide(a, 0)


def test_copysign_bits_match_torch(path):
    x, y = _data(7), _data(8)[::-1].copy()
    _same_bits(tx.copysign(tx.from_numpy(x), tx.from_numpy(y)).numpy(),
               torch.copysign(_t(x), _t(y)).numpy())


@pytest.mark.parametrize("w", [0.3, 0.7, -0.2, 1.5, 0.5, 0.0, 1.0, float("nan")])
def test_lerp_scalar_weight_bits_match_torch(path, w):
    # torch's vectorised lerp: fma(w, e - s, s) for |w| < 0.5, else fma(w - 1, e - s, e)
    s, e = _data(9), _data(10)[::-1].copy()
    _same_bits(tx.lerp(tx.from_numpy(s), tx.from_numpy(e), w).numpy(),
               torch.lerp(_t(s), _t(e), w).numpy(), nan_sign=False)


def test_lerp_tensor_weight_bits_match_torch(path):
    s, e = _data(11), _data(12)[::-1].copy()
    w = np.random.default_rng(0).uniform(-0.5, 1.5, s.size).astype(F32)
    w[:4] = [0.5, -0.5, 0.49999997, np.nan]
    _same_bits(tx.lerp(tx.from_numpy(s), tx.from_numpy(e), tx.from_numpy(w)).numpy(),
               torch.lerp(_t(s), _t(e), _t(w)).numpy(), nan_sign=False)


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("value", [1, 0.3, -2.0])
def test_addc_bits_match_torch(path, op, value):
    x, a, b = _data(13), _data(14)[::-1].copy(), _data(15)
    got = getattr(tx, op)(*map(tx.from_numpy, (x, a, b)), value=value).numpy()
    _same_bits(got, getattr(torch, op)(*map(_t, (x, a, b)), value=value).numpy())


def test_fma32_is_the_fused_rounding():
    """The NumPy fma against the CPU's (torch's vectorised addcmul with value 1) on products
    and sums of every magnitude, subnormal and overflowing results included."""
    rng = np.random.default_rng(16)
    n = 200_000
    a, b, c = (rng.standard_normal(n).astype(F32) * np.exp2(rng.integers(-80, 80, n)).astype(F32)
               for _ in range(3))
    with np.errstate(all="ignore"):
        c[::3] = -(a[::3].astype(np.float64) * b[::3]).astype(F32)  # near-total cancellation
        got = fma32(a, b, c)
    _same_bits(got, torch.addcmul(_t(c), _t(a), _t(b)).numpy())
    assert fma32(F32(0.1), F32(10), F32(-1)) == F32(1.4901161e-08)


UNARY_SPLIT = ["sign", "frac", "rsqrt", "nan_to_num", "abs"]


def _need_numba():
    """The split tests are about the kernels' parts (the NumPy forms do not split)."""
    if _cpu.jit_kernel("sign32", np.empty(1, F32), np.ones(1, F32)) is None:
        pytest.skip("numba kernels unavailable")


@pytest.mark.parametrize("name", UNARY_SPLIT)
def test_split_over_threads_gives_the_same_bits(counted_parts, monkeypatch, name):
    _need_numba()
    x = _data(17, n=5000).reshape(-1, 2)
    want = UNARY[name](tx, tx.from_numpy(x)).numpy()
    monkeypatch.setattr(_threads, "CHEAP", 64)
    monkeypatch.setattr(_threads, "COSTLY", 64)
    _same_bits(UNARY[name](tx, tx.from_numpy(x)).numpy(), want)
    assert counted_parts and counted_parts[-1] >= 2


def test_binary_split_over_threads_gives_the_same_bits(counted_parts, monkeypatch):
    _need_numba()
    x, y = _data(18, n=5000), _data(19, n=5000)
    calls = {
        "clamp": lambda m, p, q: m.clamp(p, -0.5, 0.5),
        "floor_divide": lambda m, p, q: m.floor_divide(p, q),
        "lerp": lambda m, p, q: m.lerp(p, q, 0.7),
        "copysign": lambda m, p, q: m.copysign(p, q),
        "addcmul": lambda m, p, q: m.addcmul(p, q, q, value=0.3),
    }
    want = {k: f(tx, tx.from_numpy(x), tx.from_numpy(y)).numpy() for k, f in calls.items()}
    monkeypatch.setattr(_threads, "CHEAP", 64)
    monkeypatch.setattr(_threads, "COSTLY", 64)
    for k, f in calls.items():
        counted_parts.clear()
        _same_bits(f(tx, tx.from_numpy(x), tx.from_numpy(y)).numpy(), want[k])
        assert counted_parts and counted_parts[-1] >= 2, k


def _grads(lib, fn, arrays):
    ts = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib, *ts)
    g = np.linspace(-1, 1, out.numel(), dtype=F32).reshape(tuple(out.shape))
    out.backward(lib.tensor(g))
    return [t.grad.numpy() for t in ts]


GRADS = {
    "clamp": (lambda m, x: m.clamp(x, -0.5, 0.5), 1),
    "frac": (lambda m, x: m.frac(x), 1),
    "rsqrt": (lambda m, x: m.rsqrt(m.abs(x) + 0.5), 1),
    "copysign": (lambda m, x, y: m.copysign(x, y), 2),
    "lerp": (lambda m, s, e: m.lerp(s, e, 0.3), 2),
    "lerp_tensor": (lambda m, s, e, w: m.lerp(s, e, w), 3),
    "addcmul": (lambda m, x, a, b: m.addcmul(x, a, b, value=0.5), 3),
    "addcdiv": (lambda m, x, a, b: m.addcdiv(x, a, m.abs(b) + 1, value=-2.0), 3),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_torch(path, name):
    fn, arity = GRADS[name]
    rng = np.random.default_rng(20)
    arrays = [rng.standard_normal(4099).astype(F32) for _ in range(arity)]
    for got, want in zip(_grads(tx, fn, arrays), _grads(torch, fn, arrays)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_addc_second_order_gradients_match_torch(path, op):
    """The primitives' backwards are built of ops: their own gradients match torch's."""
    rng = np.random.default_rng(21)
    arrays = [rng.uniform(1, 2, 515).astype(F32) for _ in range(3)]

    def second(lib):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = getattr(lib, op)(*ts, value=0.5)
        grads = lib.autograd.grad((out * out).sum(), ts, create_graph=True)
        return [g.numpy() for g in lib.autograd.grad(sum(g.sum() for g in grads), ts)]

    for got, want in zip(second(tx), second(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_other_layouts_and_dtypes_keep_their_paths():
    rng = np.random.default_rng(22)
    x = rng.standard_normal((64, 64)).astype(F32)
    assert fast32(x) and not fast32(x[:, ::2]) and not fast32(x.astype(np.float64))
    assert not fast32(x, x[:1]) and not fast32(np.empty(0, F32))
    assert not fast32(x[:2]) and fast32(x[:2], min_size=1)  # small: the NumPy forms
    strided = x[:, ::2]
    for name in ("sign", "frac", "rsqrt"):
        np.testing.assert_array_equal(UNARY[name](tx, tx.from_numpy(strided)).numpy(),
                                      UNARY[name](torch, _t(strided)).numpy())
    row = rng.standard_normal(64).astype(F32)  # broadcast operands: the composite
    np.testing.assert_allclose(tx.addcmul(tx.from_numpy(x), tx.from_numpy(row),
                                          tx.from_numpy(x)).numpy(),
                               torch.addcmul(_t(x), _t(row), _t(x)).numpy(), rtol=2e-6)
    np.testing.assert_allclose(tx.lerp(tx.from_numpy(x), tx.from_numpy(row), 0.25).numpy(),
                               torch.lerp(_t(x), _t(row), 0.25).numpy(), rtol=1e-6, atol=1e-7)
    lo = tx.from_numpy(row)  # a tensor bound keeps NumPy's maximum
    np.testing.assert_array_equal(tx.clamp(tx.from_numpy(x), lo).numpy(),
                                  np.maximum(x, row))


@pytest.mark.parametrize("bound", [lambda v: tx.tensor(v), lambda v: tx.full((3072,), v)])
def test_clamp_tensor_bounds_give_the_bound_on_ties_as_torch(bound):
    # torch's Tensor-bound kernel (a 0-d one too) takes the bound where x equals it
    x = _data(24)
    for v in (0.0, -0.0):
        got = tx.clamp(tx.from_numpy(x), bound(v)).numpy()
        want = torch.clamp(_t(x), torch.from_numpy(bound(v).numpy())).numpy()
        _same_bits(got, want, nan_sign=False)


def test_bad_input_errors_unchanged():
    x = tx.ones(3)
    with pytest.raises(RuntimeError, match="at least one of 'min' or 'max'"):
        tx.clamp(x)
    with pytest.raises(TypeError, match="nan_to_num"):
        tx.nan_to_num(x, nan="a")
    with pytest.raises(RuntimeError, match="lerp"):
        tx.lerp(x, tx.ones(3, dtype=tx.float64), 0.5)
    with pytest.raises(RuntimeError, match="addcdiv"):
        tx.addcdiv(x, tx.tensor([1, 2, 3]), tx.tensor([1, 1, 1]))


def test_exp2_within_its_ulp_bound_on_a_dense_sweep(path):
    from tensorix.kernels._exp2_32 import EXP2_ULP

    rng = np.random.default_rng(23)
    x = np.concatenate([rng.uniform(-155, 130, 400_000), rng.uniform(-1, 1, 100_000)]).astype(F32)
    x = np.concatenate([x, SPECIAL, np.array([128, 127.99999, -149, -149.5, -150, -150.01, -151,
                                              -126, -125.5, 1e-8, -1e-8], F32)])
    got = tx.exp2(tx.from_numpy(x)).numpy()
    with np.errstate(all="ignore"):
        want = np.exp2(x.astype(np.float64)).astype(F32)  # correctly rounded but for ties

    def ordered(v):  # float32 bits as integers in the order of the values
        i = v.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)

    assert np.array_equal(np.isnan(got), np.isnan(x))
    ok = ~np.isnan(x)
    assert np.abs(ordered(got[ok]) - ordered(want[ok])).max() <= EXP2_ULP
    _same_bits(tx.exp2(tx.from_numpy(x[::3])).numpy(), got[::3])  # strided: NumPy blocks


def test_exp2_gradient_and_other_dtypes():
    x = np.linspace(-3, 3, 1031)
    for dtype in (np.float32, np.float64):
        t = tx.tensor(x.astype(dtype), requires_grad=True)
        tx.exp2(t).sum().backward()
        np.testing.assert_allclose(t.grad.numpy(), np.exp2(x) * np.log(2), rtol=3e-6)
