"""Precision-policy matmul/linear (STE gradients, MX operands, low-precision accumulation),
autocast, GradScaler, the 16-bit optimizers (spec 3 vectors S3/S4, training evidence in small)
and unit scaling (spec 6 vectors U1-U4)."""

import ml_dtypes
import numpy as np
import pytest

import tensorix as tx
from tensorix import numerics as nx

F32 = np.float32
BF = ml_dtypes.bfloat16


def t(rng, shape, rg=True, scale=1.0):
    return tx.tensor((rng.standard_normal(shape) * scale).astype(F32), requires_grad=rg)


# -- policy matmul ------------------------------------------------------------------------
def test_policy_matmul_rounds_operands_and_passes_gradients_straight():
    rng = np.random.default_rng(0)
    a, b = t(rng, (5, 40)), t(rng, (40, 3))
    y = nx.matmul(a, b, nx.Policy("fp8_e4m3"))
    qa = nx.decode(nx.encode(a.detach().numpy(), "e4m3"), "e4m3")
    qb = nx.decode(nx.encode(b.detach().numpy(), "e4m3"), "e4m3")
    assert np.allclose(y.detach().numpy(), qa @ qb, rtol=1e-6, atol=1e-6)
    g = rng.standard_normal((5, 3)).astype(F32)
    y.backward(tx.tensor(g))
    assert np.allclose(a.grad.numpy(), g @ qb.T, rtol=1e-5, atol=1e-6)  # STE through Q(A)
    assert np.allclose(b.grad.numpy(), qa.T @ g, rtol=1e-5, atol=1e-6)


def test_policy_mx_operands_block_along_reduction_axis():
    rng = np.random.default_rng(1)
    a, b = t(rng, (4, 64), False), t(rng, (64, 6), False)
    y = nx.matmul(a, b, nx.Policy("mxfp4", scale_mode="floor"))
    qa = nx.mx_fake_quant(a.numpy(), "fp4_e2m1", axis=-1, scale_mode="floor")
    qb = nx.mx_fake_quant(b.numpy(), "fp4_e2m1", axis=0, scale_mode="floor")
    assert np.allclose(y.numpy(), qa @ qb, rtol=1e-5, atol=1e-5)
    scale = np.abs(a.numpy()) @ np.abs(b.numpy())
    y8 = nx.matmul(a, b, "mxfp8")
    assert np.all(np.abs(y8.numpy() - a.numpy() @ b.numpy()) <= 2.0**-4 * scale)
    yn = nx.matmul(a, b, nx.Policy("nvfp4"))
    assert np.all(np.abs(yn.numpy() - a.numpy() @ b.numpy()) <= 2.0**-1 * scale)


def test_policy_backward_rounds_each_gemm_along_its_reduction_axis():
    # dA = Q(dY along N) @ Q(B along N)^T and dB = Q(A along M)^T @ Q(dY along M): operands
    # re-quantized for the backward GEMMs as a tensor core needs them; results rounded to out
    rng = np.random.default_rng(5)
    a, b = t(rng, (64, 96)), t(rng, (96, 64))
    pol = nx.Policy("mxfp8", out="bf16", grad="mxfp8_e5m2", scale_mode="floor")
    y = nx.matmul(a, b, pol)
    g = rng.standard_normal((64, 64)).astype(F32)
    y.backward(tx.tensor(g))
    A, B = a.detach().numpy(), b.detach().numpy()

    def q(v, fmt, axis):
        return nx.mx_fake_quant(v, fmt, axis=axis, scale_mode="floor")

    def bf16(v):
        return v.astype(BF).astype(F32)

    assert np.array_equal(y.detach().numpy(),
                          bf16(q(A, "fp8_e4m3", -1) @ q(B, "fp8_e4m3", 0)))
    want_a = bf16(q(g, "fp8_e5m2", -1) @ q(B, "fp8_e4m3", -1).T)
    want_b = bf16(q(A, "fp8_e4m3", 0).T @ q(g, "fp8_e5m2", 0))
    assert np.allclose(a.grad.numpy(), want_a, rtol=2**-7, atol=1e-6)
    assert np.allclose(b.grad.numpy(), want_b, rtol=2**-7, atol=1e-6)
    # the backward differs from reusing the forward's blocks (which lie along the wrong axis)
    stale = bf16(q(g, "fp8_e5m2", -1) @ q(B, "fp8_e4m3", 0).T)
    assert not np.allclose(a.grad.numpy(), stale, rtol=2**-7, atol=1e-6)
    # written with differentiable ops: a second derivative exists and is the STE one
    x = t(rng, (4, 32))
    w = t(rng, (32, 32))
    (gx,) = tx.autograd.grad(nx.matmul(x, w, "mxfp8").sum(), x, create_graph=True)
    (gw,) = tx.autograd.grad(gx.sum(), w)
    assert np.array_equal(gw.numpy(), np.full((32, 32), 4, F32))


def test_low_precision_accumulator_loses_small_terms():
    a = tx.tensor(np.array([[1.0] + [2.0**-9] * 256], F32))
    b = tx.ones(257, 1)
    assert nx.matmul(a, b, nx.Policy(None, acc="fp32")).item() == 1.5
    assert nx.matmul(a, b, nx.Policy(None, acc="bf16")).item() == 1.0  # Q6, emulated
    assert nx.matmul(a, b, nx.Policy("bf16", acc="fp64")).dtype is tx.float32


def test_linear_autocast_presets_and_grad_rounding():
    rng = np.random.default_rng(2)
    x, w, bias = t(rng, (8, 16)), t(rng, (4, 16)), t(rng, (4,))
    with nx.autocast("bf16"):
        assert nx.get_policy() is nx.POLICIES["bf16"]
        y = nx.linear(x, w, bias)
    assert nx.get_policy() is None
    q = nx.decode(nx.encode(y.detach().numpy(), "bf16"), "bf16")
    assert np.array_equal(y.detach().numpy(), q)  # the output is bf16-valued
    y.sum().backward()
    assert w.grad.dtype is tx.float32 and np.all(np.isfinite(w.grad.numpy()))
    # fp16 gradients underflow: tiny output gradients vanish without loss scaling
    w2 = t(rng, (4, 16))
    out = nx.linear(x.detach(), w2, policy="fp16")
    out.backward(tx.full((8, 4), 2.0**-26))
    assert not w2.grad.numpy().any()
    with nx.autocast("fp16", enabled=False):
        assert nx.get_policy() is nx.POLICIES["fp32"]
    with pytest.raises(ValueError, match="autocast\\(\\): unknown policy 'fp12'"), \
            nx.autocast("fp12"):
        pass
    with pytest.raises(ValueError, match="Policy: argument 'grad' must be"):
        nx.Policy("bf16", grad="mxfp9")
    with pytest.raises(ValueError, match="Policy: argument .out. must be an element format, "):
        nx.Policy("bf16", out="mxfp8")


def test_tensor_scaled_fp8_keeps_small_tensors():
    x = tx.tensor(np.linspace(-1e-4, 1e-4, 32, dtype=F32).reshape(4, 8))
    w = tx.eye(8)
    plain = nx.matmul(x, w, nx.Policy("fp8_e4m3"))
    scaled = nx.matmul(x, w, nx.Policy("fp8_e4m3", tensor_scale=True))
    assert not plain.numpy().any()  # below e4m3's smallest subnormal
    assert np.abs(scaled.numpy() - x.numpy()).max() <= 1e-4 * 2.0**-3


def test_grad_scaler_recovers_fp16_training_and_skips_inf():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((512, 16)).astype(F32)
    W_true = (rng.standard_normal((16, 16)) * 1e-6).astype(F32)  # dL/dY < 2^-25: all flush
    Y = X @ W_true.T

    def run(scaler):
        W = tx.zeros(16, 16, requires_grad=True)
        opt = tx.optim.SGD([W], lr=0.5)
        for _ in range(40):
            with nx.autocast("fp16"):
                r = nx.linear(tx.tensor(X), W) - tx.tensor(Y)
            loss = (r * r).mean()
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        return float(loss.item())

    start = float((tx.tensor(Y) ** 2).mean().item())
    assert run(nx.GradScaler(enabled=False)) > 0.5 * start  # disabled: plain fp16 training
    assert run(nx.GradScaler(init_scale=2.0**16)) < 1e-2 * start
    s = nx.GradScaler(init_scale=8.0, growth_interval=2)
    p = tx.zeros(3, requires_grad=True)
    p.grad = tx.tensor([1.0, np.inf, 0.0])
    calls = []
    assert s.step(lambda: calls.append(1), params=[p]) is None and not calls
    s.update()
    assert s.get_scale() == 4.0 and s.skipped_steps == 1
    for _ in range(2):
        p.grad = tx.tensor([4.0, 8.0, 0.0])
        s.step(lambda: calls.append(1), params=[p])
        s.update()
    assert calls == [1, 1] and s.get_scale() == 8.0 and p.grad.tolist() == [1.0, 2.0, 0.0]
    state = s.state_dict()
    s2 = nx.GradScaler()
    s2.load_state_dict(state)
    assert s2.get_scale() == 8.0
    with pytest.raises(ValueError, match="GradScaler: expected init_scale > 0"):
        nx.GradScaler(init_scale=0)


# -- 16-bit optimizers --------------------------------------------------------------------
def test_s3_cancellation_rn_kahan_sr():
    for mode, want in (("rn", 1.0), ("kahan", 0.90234375)):
        w, st = np.array([1.0], BF), {}
        for _ in range(100):
            nx.sgd_update_(w, np.array([-2.0**-10], F32), mode, st)
        assert float(w[0]) == want
    assert float(st["c"][0]) == 0.0
    n = 20000
    w, st = np.ones(n, BF), {"seed": 5}
    for _ in range(100):
        nx.sgd_update_(w, np.full(n, -2.0**-10, F32), "sr", st)
    v = w.astype(np.float64)
    assert abs(v.mean() - 0.90234375) < 4 * v.std() / np.sqrt(n)
    assert 0.01 < v.std() < 0.025 and st["offset"] == 100 * n


def test_s4_non_representable_update():
    u = np.array([-1e-3], F32).astype(BF)
    assert float(u[0]) == -0.00099945068359375
    w, st = np.array([1.0], BF), {}
    for _ in range(300):
        nx.sgd_update_(w, u, "rn", st)
    assert float(w[0]) == 1.0
    w, st = tx.tensor([1.0]).to(tx.bfloat16), {}
    for _ in range(300):
        nx.sgd_update_(w, u, "kahan", st)
    exact = 0.700164794921875
    wv, c = float(w.to(tx.float32).item()), float(st["c"][0])
    assert wv == 0.69921875 and c == -0.0009765625
    assert abs(wv - exact) <= 2.0**-8 and abs((wv - c) - exact) <= 2.0**-14
    with pytest.raises(TypeError, match="weights must be bfloat16 or float16"):
        nx.sgd_update_(np.ones(2, F32), np.ones(2, F32), "rn")
    with pytest.raises(ValueError, match="mode must be one of"):
        nx.sgd_update_(np.ones(2, BF), np.ones(2, F32), "nearest")


def _linreg(mode, steps=150):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((128, 8)).astype(F32)
    y = X @ (1 + rng.random((8, 1))).astype(F32)
    dtype = tx.float32 if mode is None else tx.bfloat16
    Xt, yt = tx.tensor(X).to(dtype), tx.tensor(y).to(dtype)
    w = tx.zeros(8, 1, dtype=dtype, requires_grad=True)
    opt = tx.optim.SGD([w], lr=0.05) if mode is None else \
        nx.SGD16([w], lr=0.05, update_rounding=mode, seed=1)
    for _ in range(steps):
        r = Xt @ w - yt
        loss = (r * r).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return float(loss.to(tx.float32).item())


def test_bf16_training_rn_stalls_sr_and_kahan_keep_up():
    rn, sr, kahan = _linreg("rn"), _linreg("sr"), _linreg("kahan")
    assert rn > 20 * max(sr, kahan)
    assert sr < 1e-2 and kahan < 1e-2
    assert _linreg(None) < 1e-6


def test_adamw16_and_sgd16_shells():
    rng = np.random.default_rng(4)
    w = tx.tensor(rng.standard_normal((3, 4)).astype(F32)).to(tx.bfloat16).requires_grad_()
    for mode in ("sr", "kahan", "rn"):
        opt = nx.AdamW16([w], lr=1e-2, update_rounding=mode, seed=2)
        w.grad = tx.ones(3, 4).to(tx.bfloat16)
        before = w.detach().to(tx.float32).numpy().copy()
        opt.step()
        assert w.dtype is tx.bfloat16
        assert np.all(w.detach().to(tx.float32).numpy() < before)
    opt = nx.SGD16([w], lr=0.1, momentum=0.9, weight_decay=0.01, update_rounding="kahan")
    w.grad = tx.ones(3, 4).to(tx.bfloat16)
    opt.step()
    opt.step()
    assert opt.state[w]["momentum_buffer"].dtype is tx.bfloat16
    assert "kahan_c" in opt.state[w]
    with pytest.raises(TypeError, match="weights must be bfloat16 or float16"):
        nx.SGD16([tx.zeros(2, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="SGD16: update_rounding must be one of"):
        nx.SGD16([w], lr=0.1, update_rounding="up")


# -- unit scaling -------------------------------------------------------------------------
def _stds(*ts):
    return [float(np.std(v.numpy() if isinstance(v, tx.Tensor) else v)) for v in ts]


def test_u1_unit_linear_scales():
    rng = np.random.default_rng(0)
    want = {None: (1.0, 1.0, 1.0), "to_output_scale": (1.0, 0.5, 1.0),
            "gmean": (1.4142, 0.7071, 1.0)}
    for c, (sy, sx, sw) in want.items():
        x, w = t(rng, (1024, 256)), t(rng, (64, 256))
        y = nx.unit_linear(x, w, constraint=c)
        y.backward(t(rng, (1024, 64), False))
        got = _stds(y.detach(), x.grad, w.grad)
        assert np.allclose(got, (sy, sx, sw), rtol=0.03), (c, got)
    assert nx.apply_constraint(None, 1 / 32, 1 / 16) == (1 / 32, 1 / 16)
    assert nx.apply_constraint("gmean", 1 / 32, 1 / 16)[0] == pytest.approx(512 ** -0.5)
    with pytest.raises(ValueError, match="unknown constraint 'median'"):
        nx.apply_constraint("median", 1.0, 2.0)


def test_scale_primitives_exact():
    x = tx.tensor([1.0, -2.0], requires_grad=True)
    y = nx.scale_bwd(nx.scale_fwd(x, 1 / 32), 1 / 16)
    assert y.tolist() == [1 / 32, -1 / 16]
    y.sum().backward()
    assert x.grad.tolist() == [1 / 16, 1 / 16]


def test_u2_u3_u4_unit_ops():
    rng = np.random.default_rng(1)
    a, b = t(rng, (256, 384)), t(rng, (384, 64))
    y = nx.unit_matmul(a, b, None)
    y.backward(t(rng, (256, 64), False))
    assert np.allclose(_stds(y.detach(), a.grad, b.grad), 1.0, rtol=0.03)
    p, q = t(rng, (20000,), False), t(rng, (20000,), False)
    assert abs(_stds(nx.unit_add(p, q))[0] - 1) < 0.03
    res, skip = nx.residual_split(p, 0.5)
    assert abs(_stds(nx.residual_add(q, skip, 0.5))[0] - 1) < 0.03
    x = t(rng, (40000,))
    g = nx.unit_gelu(x, constraint=None)
    g.backward(t(rng, (40000,), False))
    assert np.allclose(_stds(g.detach(), x.grad), 1.0, rtol=0.03)
    x = t(rng, (40000,))
    s = nx.unit_silu(x, constraint=None)
    s.backward(t(rng, (40000,), False))
    assert np.allclose(_stds(s.detach(), x.grad), 1.0, rtol=0.03)
    assert abs(_stds(nx.unit_dropout(p, 0.5, generator=tx.Generator().manual_seed(0)))[0]
               - 1) < 0.05
    logits = t(rng, (64, 1000))
    tgt = tx.tensor(rng.integers(0, 1000, 64))
    nx.unit_cross_entropy(logits, tgt).backward()
    assert abs(_stds(logits.grad)[0] - 1) < 0.03
    x = t(rng, (64, 300))
    sm = nx.unit_softmax(x)
    assert abs(_stds(sm.detach())[0] - 1) < 0.1
    x = t(rng, (8192,))
    nx.unit_mse_loss(x, t(rng, (8192,), False)).backward()
    assert abs(_stds(x.grad)[0] - 1) < 0.03


def test_mx_gradient_format_and_stacked_linear():
    rng = np.random.default_rng(5)
    x = tx.tensor(rng.standard_normal((4, 64)).astype(F32), requires_grad=True)
    g = rng.standard_normal((4, 64)).astype(F32) * 3
    nx.round_tensor(x, None, "mxfp8").backward(tx.tensor(g))
    assert np.array_equal(x.grad.numpy(), nx.mx_fake_quant(g, "fp8_e4m3"))
    assert not np.array_equal(x.grad.numpy(), g)
    # a stacked input is one 2-d GEMM: the same bits as the flattened call, blocks unchanged
    x3 = tx.tensor(rng.standard_normal((2, 3, 64)).astype(F32))
    w = tx.tensor(rng.standard_normal((8, 64)).astype(F32))
    b = tx.tensor(rng.standard_normal(8).astype(F32))
    for pol in (None, nx.POLICIES["mxfp8"], nx.POLICIES["nvfp4"]):
        y3 = nx.linear(x3, w, b, pol)
        y2 = nx.linear(x3.reshape(6, 64), w, b, pol)
        assert y3.shape == (2, 3, 8) and np.array_equal(y3.numpy().reshape(6, 8), y2.numpy())
