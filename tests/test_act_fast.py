"""The activations' one-pass kernels (ops/_act_fast.py, kernels/_act32.py, _jit_13act.py):
the exact selects give torch's bits (signed zeros, infinities, subnormals; nan where torch
has nan), the float32 math stays within ``_act32.ULP`` of float64, the NumPy fallback gives
numba's bits, and the gradients are torch's."""

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix import _threads
from tensorix.kernels import _act32, _cpu

torch = pytest.importorskip("torch")
TF = torch.nn.functional

SPECIALS = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-45, -1e-45, 1e-38, -1e-38, 3.0,
                     -3.0, 6.0, -6.0, 1.0, -1.0, 0.5, -0.5, 20.0, 20.000002, -20.0, 88.0,
                     -88.0, 89.0, -104.0, -105.0, 3.4e38, -3.4e38], np.float32)


def _inputs(n=70000, scale=8.0, seed=0):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.standard_normal(n).astype(np.float32) * scale, SPECIALS])


def _unit_inputs(seed=1):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.random(50000), np.linspace(0, 1, 20001),
                           10.0 ** -rng.uniform(0, 38, 5000), 1 - 10.0 ** -rng.uniform(0, 8, 5000),
                           [0.0, -0.0, 1.0, 0.25, 0.5, 0.75, -0.5, 1.5, np.nan, np.inf,
                            -np.inf]]).astype(np.float32)


def _same(got, want):
    """Bit for bit, but any nan for a nan (torch's vector loop sets every bit of a nan its
    max/min propagates, its scalar tail does not)."""
    got, want = np.asarray(got), np.asarray(want)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    bad = got[~nan].view(np.uint32) != want[~nan].view(np.uint32)
    assert not bad.any(), (got[~nan][bad][:5], want[~nan][bad][:5])


@pytest.fixture(params=["jit", "numpy"])
def backend_kind(request, monkeypatch):
    """Each test twice: with numba's kernels, and with none served (the NumPy fallback)."""
    if request.param == "numpy":
        monkeypatch.setattr(_cpu, "_state", {"m": None})
    elif _cpu.jit_kernel("relu32", np.empty(1, np.float32), np.ones(1, np.float32)) is None:
        pytest.skip("numba not available")
    return request.param


EXACT = [
    ("relu", tx.relu, torch.relu),
    ("relu6", F.relu6, TF.relu6),
    ("hardtanh", F.hardtanh, TF.hardtanh),
    ("hardtanh-bounds", lambda t: F.hardtanh(t, -0.3, 2.5), lambda t: TF.hardtanh(t, -0.3, 2.5)),
    ("leaky_relu", F.leaky_relu, TF.leaky_relu),
    ("leaky_relu-0.2", lambda t: F.leaky_relu(t, 0.2), lambda t: TF.leaky_relu(t, 0.2)),
    ("leaky_relu-neg", lambda t: F.leaky_relu(t, -1.5), lambda t: TF.leaky_relu(t, -1.5)),
    ("leaky_relu-big", lambda t: F.leaky_relu(t, 3.0), lambda t: TF.leaky_relu(t, 3.0)),
    ("hardsigmoid", F.hardsigmoid, TF.hardsigmoid),
    ("softsign", F.softsign, TF.softsign),
]


@pytest.mark.parametrize("name,fn,tfn", EXACT, ids=[c[0] for c in EXACT])
def test_exact_activations_give_torchs_bits(name, fn, tfn, backend_kind):
    x = _inputs()
    _same(fn(tx.tensor(x)).numpy(), tfn(torch.from_numpy(x)).numpy())
    x2 = x[:60000].reshape(200, 300)[:, ::2]  # strided: the general path, the same values
    _same(fn(tx.tensor(x2)).numpy(), tfn(torch.from_numpy(np.ascontiguousarray(x2))).numpy())


@pytest.mark.parametrize("name,fn,tfn", EXACT[:6], ids=[c[0] for c in EXACT[:6]])
def test_exact_activations_split_over_the_pool_keep_the_bits(name, fn, tfn, monkeypatch,
                                                             counted_parts):
    if _cpu.jit_kernel("relu32", np.empty(1, np.float32), np.ones(1, np.float32)) is None:
        pytest.skip("numba not available (the NumPy forms split as NumPy ufuncs do)")
    monkeypatch.setattr(_threads, "CHEAP", 1 << 10)
    x = _inputs(20000)
    _same(fn(tx.tensor(x)).numpy(), tfn(torch.from_numpy(x)).numpy())
    assert counted_parts and counted_parts[-1] > 1


def _ulp_err(got, ref):
    """|got - ref| in ulp of the float32 rounding of ref (the smallest normal's ulp below),
    where ref is finite."""
    ref32 = np.abs(ref).astype(np.float32)
    spacing = np.spacing(np.maximum(ref32, np.float32(np.finfo(np.float32).tiny)))
    ok = np.isfinite(ref)
    return np.abs(got.astype(np.float64)[ok] - ref[ok]) / spacing[ok]


def _sigmoid64(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


ROUNDED = [
    ("sigmoid32", lambda t: tx.sigmoid(t), _sigmoid64, _inputs),
    ("softplus_bt32", lambda t: F.softplus(t),
     lambda x: np.where(x > 20, x, np.logaddexp(0, x)), _inputs),
    ("softplus_bt32", lambda t: F.softplus(t, 2.0, 3.0),
     lambda x: np.where(2 * x > 3, x, np.logaddexp(0, 2 * x) / 2), _inputs),
    ("softplus_bt32", lambda t: F.softplus(t, -0.5, 20.0),
     lambda x: np.logaddexp(0, -0.5 * x) / -0.5, _inputs),
    ("logsigmoid32", F.logsigmoid, lambda x: -np.logaddexp(0, -x), _inputs),
    ("logit32", tx.logit, lambda u: np.log(u) - np.log1p(-u), _unit_inputs),
    ("logit32", lambda t: tx.logit(t, 1e-4),
     lambda u: (lambda z: np.log(z) - np.log1p(-z))(np.clip(u, np.float32(1e-4),
                                                            np.float32(1 - 1e-4))),
     _unit_inputs),
]


@pytest.mark.parametrize("name,fn,ref,make", ROUNDED,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(ROUNDED)])
def test_float32_activations_within_their_bound(name, fn, ref, make, backend_kind):
    x = make()
    got = fn(tx.tensor(x)).numpy()
    assert got.dtype == np.float32
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
    assert _ulp_err(got, want).max() <= _act32.ULP[name]
    special = ~np.isfinite(want)  # infinities and nan exactly
    assert np.array_equal(got[special], want[special].astype(np.float32), equal_nan=True)


def test_float32_specials_match_torch():
    """The ends: sigmoid 0 / 1, softplus x / 0, logsigmoid -x / +0, logit -inf / inf / nan."""
    x = tx.tensor(np.float32([-np.inf, np.inf, -200.0, 200.0, np.nan, 0.0, -0.0]))
    t = torch.from_numpy(x.numpy())
    for fn, tfn in [(tx.sigmoid, torch.sigmoid), (F.softplus, TF.softplus),
                    (F.logsigmoid, TF.logsigmoid)]:
        np.testing.assert_array_equal(fn(x).numpy(), tfn(t).numpy())
    u = tx.tensor(np.float32([0.0, -0.0, 1.0, -1.0, 2.0, np.nan, 0.5]))
    np.testing.assert_array_equal(tx.logit(u).numpy(), torch.logit(torch.from_numpy(u.numpy()))
                                  .numpy())


@pytest.mark.parametrize("name", ["sigmoid32", "softplus_bt32", "logsigmoid32", "logit32"])
def test_numpy_form_gives_numbas_bits(name, monkeypatch):
    fn = {"sigmoid32": tx.sigmoid, "softplus_bt32": lambda t: F.softplus(t, 1.5, 4.0),
          "logsigmoid32": F.logsigmoid, "logit32": lambda t: tx.logit(t, 1e-3)}[name]
    x = _unit_inputs() if name == "logit32" else _inputs()
    jit = fn(tx.tensor(x)).numpy()
    monkeypatch.setattr(_cpu, "_state", {"m": None})
    monkeypatch.setattr(_threads, "BLOCK", 1000)  # many blocks, a ragged last one
    assert np.array_equal(jit.view(np.uint32), fn(tx.tensor(x)).numpy().view(np.uint32))


GLU_SHAPES = [((64, 300), -1), ((64, 300), 0), ((6, 10, 7), 1), ((3, 5, 8), 2), ((10,), 0),
              ((4, 2, 0), 1)]


@pytest.mark.parametrize("shape,dim", GLU_SHAPES)
def test_glu_within_bound_and_numpy_form_same_bits(shape, dim, monkeypatch):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(shape) * 6).astype(np.float32)
    got = F.glu(tx.tensor(x), dim).numpy()
    a, b = np.split(x.astype(np.float64), 2, axis=dim)
    want = a * _sigmoid64(b)
    assert got.shape == want.shape and got.dtype == np.float32
    if got.size:
        assert _ulp_err(got, want).max() <= _act32.ULP["glu32"]
    np.testing.assert_allclose(got, TF.glu(torch.from_numpy(x), dim).numpy(), rtol=1e-6,
                               atol=1e-30)
    monkeypatch.setattr(_cpu, "_state", {"m": None})
    assert np.array_equal(F.glu(tx.tensor(x), dim).numpy().view(np.uint32), got.view(np.uint32))


def test_glu_split_over_rows_keeps_the_bits(monkeypatch, counted_parts):
    x = (np.random.default_rng(3).standard_normal((64, 256)) * 4).astype(np.float32)
    whole = F.glu(tx.tensor(x)).numpy()
    monkeypatch.setattr(_threads, "COSTLY", 64)
    assert np.array_equal(F.glu(tx.tensor(x)).numpy(), whole)
    assert counted_parts and counted_parts[-1] > 1


def test_glu_non_contiguous_and_float64():
    x = np.random.default_rng(4).standard_normal((8, 12))
    t = tx.tensor(x).t()  # a transposed view
    np.testing.assert_allclose(F.glu(t, 1).numpy(), TF.glu(torch.from_numpy(x).t(), 1).numpy(),
                               rtol=1e-13)
    t32 = tx.tensor(x.astype(np.float32)).t()
    np.testing.assert_allclose(F.glu(t32, 0).numpy(),
                               TF.glu(torch.from_numpy(x.astype(np.float32)).t(), 0).numpy(),
                               rtol=2e-6)


GRADS = [
    ("hardsigmoid", F.hardsigmoid, TF.hardsigmoid, 4.0),
    ("softsign", F.softsign, TF.softsign, 4.0),
    ("logsigmoid", F.logsigmoid, TF.logsigmoid, 10.0),
    ("logit", tx.logit, torch.logit, None),
    ("logit-eps", lambda t: tx.logit(t, 0.1), lambda t: torch.logit(t, 0.1), None),
    ("glu", F.glu, TF.glu, 4.0),
    ("glu-dim0", lambda t: F.glu(t, 0), lambda t: TF.glu(t, 0), 4.0),
    ("sigmoid", tx.sigmoid, torch.sigmoid, 10.0),
    ("softplus", lambda t: F.softplus(t, 2.0, 5.0), lambda t: TF.softplus(t, 2.0, 5.0), 6.0),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn,tfn,scale", GRADS, ids=[c[0] for c in GRADS])
def test_gradients_match_torch(name, fn, tfn, scale, dtype):
    rng = np.random.default_rng(5)
    x = rng.random((6, 8)) if scale is None else rng.standard_normal((6, 8)) * scale
    x = x.astype(dtype)
    if scale is not None:
        x[0, :4] = [-3.0, 3.0, 0.0, -0.0]  # hardsigmoid's ends, the zeros
    t = tx.tensor(x, requires_grad=True)
    tt = torch.tensor(x, requires_grad=True)
    y, ty = fn(t), tfn(tt)
    g = np.random.default_rng(6).standard_normal(y.shape).astype(dtype)
    (gx,) = tx.autograd.grad(y, [t], tx.tensor(g))
    (tgx,) = torch.autograd.grad(ty, [tt], torch.from_numpy(g))
    if dtype == np.float64:  # (float32 values: their bounds above; torch's logit is less exact)
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    # torch's float64 hardsigmoid backward multiplies by float(1/6): 3e-8 from g / 6
    tol = 1e-5 if dtype == np.float32 else 1e-7 if name == "hardsigmoid" else 1e-12
    np.testing.assert_allclose(gx.numpy(), tgx.numpy(), rtol=tol, atol=1e-30)


@pytest.mark.parametrize("name,fn,tfn,scale", GRADS[1:7], ids=[c[0] for c in GRADS[1:7]])
def test_double_backward_matches_torch(name, fn, tfn, scale):
    rng = np.random.default_rng(7)
    x = rng.random((4, 6)) * 0.9 + 0.05 if scale is None else rng.standard_normal((4, 6)) * 2
    t = tx.tensor(x, requires_grad=True)
    tt = torch.tensor(x, requires_grad=True)
    (g,) = tx.autograd.grad(fn(t).sum(), [t], create_graph=True)
    (tg,) = torch.autograd.grad(tfn(tt).sum(), [tt], create_graph=True)
    (gg,) = tx.autograd.grad((g * g).sum(), [t])
    (tgg,) = torch.autograd.grad((tg * tg).sum(), [tt])
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("name,fn,tfn", [
    ("hardsigmoid", F.hardsigmoid, TF.hardsigmoid), ("softsign", F.softsign, TF.softsign),
    ("logsigmoid", F.logsigmoid, TF.logsigmoid), ("glu", F.glu, TF.glu),
    ("logit", tx.logit, torch.logit)])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_16bit_inputs_compute_in_float32_rounded_once(name, fn, tfn, dtype):
    x = np.random.default_rng(8).standard_normal((4, 16)).astype(np.float32) * 3
    if name == "logit":
        x = x / 20 + 0.5  # in (0, 1)
    got = fn(tx.tensor(x).to(getattr(tx, dtype)))
    assert got.dtype == getattr(tx, dtype)
    # torch's float32 result of the same 16-bit input, rounded once (torch's own bfloat16
    # logit rounds its intermediates: 2 bfloat16 ulp off near 1/2)
    low = getattr(torch, dtype)
    want = tfn(torch.from_numpy(x).to(low).float()).to(low)
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=1e-2, atol=1e-3)


def test_bad_input_errors_unchanged():
    with pytest.raises(RuntimeError, match=r"glu\(\): halving dimension must be even"):
        F.glu(tx.ones(3, 5))
    with pytest.raises(RuntimeError, match=r"glu\(\): glu does not support scalars"):
        F.glu(tx.tensor(1.0))
    with pytest.raises(TypeError, match=r"logit\(\): argument 'eps' must be a number"):
        tx.logit(tx.ones(2), eps="x")
    with pytest.raises(RuntimeError, match=r"not implemented for complex"):
        F.softsign(tx.ones(2, dtype=tx.complex64))


def test_compiled_forward_and_backward_equal_eager():
    """The new primitives trace (forward and their op-built backwards) in tensorix.compile's
    joint graph and give eager's values."""
    def f(x):
        a, b = x[:, :3], x[:, 3:]
        return (F.glu(x) + F.logsigmoid(a) + F.softsign(b) + F.hardsigmoid(a)
                + tx.logit(a.sigmoid(), 1e-3) + tx.relu(a) + F.leaky_relu(b) + F.hardtanh(a)
                + F.softplus(b) + a.sigmoid()).sum()

    x = np.random.default_rng(9).standard_normal((5, 6)).astype(np.float32)
    compiled = tx.compile(f)
    got = []
    for fn in (f, compiled, compiled):
        t = tx.tensor(x, requires_grad=True)
        y = fn(t)
        y.backward()
        got.append((y.item(), t.grad.numpy()))
    for y, g in got[1:]:
        assert y == pytest.approx(got[0][0], rel=1e-6)
        np.testing.assert_allclose(g, got[0][1], rtol=1e-5, atol=1e-6)
