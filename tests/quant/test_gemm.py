"""Quantized GEMMs through the dispatcher's GEMM hook: int_linear against the exact integer
formula (float64) and against fake quantization, within the bounds stated in quant/gemm.py;
the int_gemm context on a plain model; the W8A8/W4A4 layer's integer kernel; bad input."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn
from tensorix.nn import functional as F
from tensorix.quant import QScheme, compute_qparams, fake_quantize, quantize
from tensorix.quant.gemm import IntGemm, IntWeight, int_gemm, int_linear
from tensorix.quant.methods import ActQuantLinear, quantize_linears_, token_scheme

EPS = 2.0 ** -24


def _group(s):
    return s.group_size if s.granularity == "per_group" else None


def _exact(x, w, act, ws, act_scale=None):
    """float64 sum_c s_a s_b (Aq_c Bq_c^T), and S = the same with magnitudes, from the
    library's quantizer (tested against torch in test_quantizer.py)."""
    wt = IntWeight.from_float(w, ws)
    sa, za = (compute_qparams(tx.tensor(x), act) if act_scale is None else
              (tx.tensor(np.float32(act_scale)), None))
    aq = quantize(tx.tensor(x), sa, za, act).numpy().astype(np.int64)
    wq = wt.codes.astype(np.int64)
    k = x.shape[1]
    g = _group(act) or _group(ws) or k
    s_a = np.asarray(sa.numpy(), np.float64).reshape(x.shape[0] if sa.numpy().size > 1 else 1,
                                                     -1)
    s_b = np.asarray(wt.scale, np.float64).reshape(w.shape[0] if wt.scale.size > 1 else 1, -1)
    y = np.zeros((x.shape[0], w.shape[0]))
    mag = np.zeros_like(y)
    for c in range(k // g):
        sl = slice(c * g, (c + 1) * g)
        scale = s_a[:, c % s_a.shape[1], None] * s_b[:, c % s_b.shape[1]][None, :]
        y += (aq[:, sl] @ wq[:, sl].T) * scale
        mag += (np.abs(aq[:, sl]) @ np.abs(wq[:, sl]).T) * scale
    return y, mag, k // g


SCHEMES = {
    "w8a8 per token": (token_scheme(8), QScheme(8, True, "per_channel", axis=0)),
    "w8a8 per tensor": (QScheme(8, True), QScheme(8, True, "per_channel", axis=0)),
    "w4a4 g32": (QScheme(4, True, "per_group", group_size=32),
                 QScheme(4, True, "per_group", group_size=32)),
    "w4a8 g32": (token_scheme(8), QScheme(4, True, "per_group", group_size=32)),
    "w6a6": (token_scheme(6), QScheme(6, True, "per_channel", axis=0)),
}


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_int_linear_within_bound_of_exact_and_fake_quant(name, device, rng):
    act, ws = SCHEMES[name]
    x = rng.standard_normal((70, 128)).astype(np.float32)
    w = rng.standard_normal((24, 128)).astype(np.float32)
    exact, mag, chunks = _exact(x, w, act, ws)
    wt = IntWeight.from_float(tx.tensor(w, device=device), ws)
    y = int_linear(tx.tensor(x, device=device)._data, wt, act)
    y = tx.tensor(y).cpu().numpy() if device != "cpu" else y
    assert y.dtype == np.float32
    assert (np.abs(y - exact) <= (chunks + 2) * EPS * mag + 1e-30).all()
    # fake quantization: the same grid, float32 products
    fq_w = fake_quantize(tx.tensor(w), ws).numpy()
    fq_x = fake_quantize(tx.tensor(x), act).numpy()
    sim = fq_x @ fq_w.T
    assert (np.abs(sim - exact) <= (x.shape[1] + 4) * EPS * mag + 1e-30).all()


def test_int_linear_static_scale(rng):
    x = rng.standard_normal((5, 64)).astype(np.float32)
    w = rng.standard_normal((8, 64)).astype(np.float32)
    ws = QScheme(8, True, "per_channel", axis=0)
    exact, mag, _ = _exact(x, w, QScheme(8, True), ws, act_scale=0.01)
    y = int_linear(x, IntWeight.from_float(w, ws), QScheme(8, True), (np.float32(0.01), 0))
    assert (np.abs(y - exact) <= 3 * EPS * mag).all()
    assert np.abs(y).max() <= 127 * 0.01 * np.abs(w).sum(1).max() * 1.01  # clipped at 127


def test_int_gemm_hook_runs_every_linear_of_a_model(rng):
    tx.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 16))
    x = tx.tensor(rng.standard_normal((2, 5, 64)).astype(np.float32))
    with tx.no_grad():
        with int_gemm():
            y = model(x)
        # by hand: each layer's product through int_linear, per token and per channel
        h = x.numpy().reshape(-1, 64)
        for lin in (model[0], model[2]):
            h = int_linear(h, IntWeight.from_float(lin.weight.detach()), token_scheme(8),
                           bias=lin.bias.detach().numpy())
            h = np.maximum(h, 0) if lin is model[0] else h
        np.testing.assert_array_equal(y.numpy().reshape(-1, 16), h)
        plain = model(x)
    assert np.abs(y.numpy() - plain.numpy()).max() < 0.05 * np.abs(plain.numpy()).max()


def test_int_gemm_batched_products_stay_float_and_grads_refused(rng):
    a = tx.tensor(rng.standard_normal((3, 4, 8)).astype(np.float32))
    b = tx.tensor(rng.standard_normal((3, 8, 5)).astype(np.float32))
    with tx.no_grad(), int_gemm():
        np.testing.assert_array_equal((a @ b).numpy(), a.numpy() @ b.numpy())
    w = tx.randn(4, 8, requires_grad=True)
    with int_gemm(), pytest.raises(RuntimeError, match="int_gemm\\(\\): Linear has inputs that "
                                                      "require grad"):
        F.linear(tx.randn(2, 8), w)


def test_int_gemm_bad_input():
    with pytest.raises(ValueError, match="argument 'act_scheme' must be a symmetric int"):
        IntGemm(QScheme(8, False))
    with pytest.raises(ValueError, match="argument 'weight_scheme' must be a symmetric int"):
        IntGemm(token_scheme(8), QScheme(8, True, dtype="fp8_e4m3"))
    with pytest.raises(ValueError, match="groups differ"):
        int_linear(np.ones((2, 64), np.float32),
                   IntWeight.from_float(np.ones((4, 64), np.float32),
                                        QScheme(4, True, "per_group", group_size=32)),
                   QScheme(4, True, "per_group", group_size=16))


@pytest.mark.parametrize("name", ["w8a8 per token", "w4a4 g32"])
def test_act_quant_linear_runs_the_integer_kernel(name, rng, monkeypatch):
    from tensorix.quant import gemm

    act, ws = SCHEMES[name]
    tx.manual_seed(1)
    lin = nn.Linear(64, 16)
    layer = ActQuantLinear.from_linear(lin, ws, act)
    x = tx.tensor(rng.standard_normal((3, 7, 64)).astype(np.float32))
    calls = []
    real = gemm.int_linear
    monkeypatch.setattr(gemm, "int_linear", lambda *a, **k: calls.append(1) or real(*a, **k))
    with tx.no_grad():
        y = layer(x).numpy()
        ActQuantLinear.integer = False
        try:
            sim = layer(x).numpy()
        finally:
            ActQuantLinear.integer = True
    assert len(calls) == 1  # the simulation does not reach the integer kernel
    exact, mag, chunks = _exact(x.numpy().reshape(-1, 64), layer.weight.numpy(), act, ws)
    bias = lin.bias.detach().numpy()
    tol = (64 + 6) * EPS * (mag + np.abs(bias))
    assert (np.abs(y.reshape(-1, 16) - (exact + bias)) <= tol).all()
    assert (np.abs(sim.reshape(-1, 16) - (exact + bias)) <= tol).all()


def test_act_quant_linear_with_grad_uses_fake_quant(rng):
    tx.manual_seed(2)
    model = nn.Sequential(nn.Linear(32, 8))
    quantize_linears_(model, QScheme(8, True, "per_channel", axis=0), token_scheme(8))
    x = tx.tensor(rng.standard_normal((4, 32)).astype(np.float32), requires_grad=True)
    model(x).sum().backward()  # straight-through gradients of the simulation
    assert x.grad is not None and np.isfinite(x.grad.numpy()).all()


def test_rotation_lives_in_the_state_dict(rng):
    # W4A4 with rotations: a model built with other seeds takes the saved rotation on load
    from tensorix.quant.methods import w4a4_

    tx.manual_seed(3)
    src = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8))
    dst = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8))
    w4a4_(src, group_size=32, seed=0)
    w4a4_(dst, group_size=32, seed=7)
    sd = src.state_dict()
    assert {"0.rotation_signs", "0.rotation_block", "2.rotation_signs"} <= set(sd)
    x = tx.tensor(rng.standard_normal((6, 64)).astype(np.float32))
    with tx.no_grad():
        assert not np.array_equal(src(x).numpy(), dst(x).numpy())
        dst.load_state_dict(sd)
        np.testing.assert_array_equal(src(x).numpy(), dst(x).numpy())


ROUTE_CASES = {  # act scheme, weight scheme, bias dtype, static act qparams
    "w4a4 g32": (*SCHEMES["w4a4 g32"], None, None),
    "w4a8 g32, float32 bias": (*SCHEMES["w4a8 g32"], np.float32, None),
    "w8a8 per token": (*SCHEMES["w8a8 per token"], None, None),
    "w8 affine a8 per tensor, float32 bias": (QScheme(8, False), SCHEMES["w8a8 per token"][1],
                                              np.float32, None),
    "w8 affine a8 per token, float64 bias": (QScheme(8, False, "per_channel", axis=0),
                                             SCHEMES["w8a8 per token"][1], np.float64, None),
    "w4 g32 affine a8 g32": (QScheme(8, False, "per_group", group_size=32),
                             SCHEMES["w4a4 g32"][1], None, None),
    "w8 static affine a8, int64 zero point": (QScheme(8, False), SCHEMES["w8a8 per token"][1],
                                              np.float32, (np.float32(0.02), np.int64(-7))),
}


@pytest.mark.parametrize("name", sorted(ROUTE_CASES))
def test_int_linear_same_bits_on_every_kernel_route(name, monkeypatch, rng):
    # grouped layers run every group in one VNNI pass over the weight packed once; the int32
    # sums are exact on every route, and the compiled rescale does the NumPy passes' float32
    # operations in their order (the blas route runs those passes), so the outputs are the
    # same bits
    from tensorix.quant import kernels

    act, ws, bias_dtype, static = ROUTE_CASES[name]
    x = rng.standard_normal((37, 224)).astype(np.float32)
    w = rng.standard_normal((45, 224)).astype(np.float32)
    bias = None if bias_dtype is None else rng.standard_normal(45).astype(bias_dtype)
    outs = []
    for route in ("vnni", "avx2", "portable", "blas"):
        with monkeypatch.context() as mp:
            if route in ("avx2", "portable"):
                kernels._compiled()
                mp.setitem(kernels._state, "vnni", False)
            if route == "portable":
                mp.setitem(kernels._state, "avx2", False)
            if route == "blas":
                mp.setattr(kernels, "compiled_available", lambda: False)
            outs.append(int_linear(x, IntWeight.from_float(w, ws), act, static, bias))
    for y in outs[1:]:
        np.testing.assert_array_equal(y, outs[0])
