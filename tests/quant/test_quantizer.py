"""Uniform quantizers: spec numerics.md 7.1 test vectors, torch's fake quant values and
gradients, per-group layouts, float and MX formats, and the errors for bad input."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.quant import (
    QScheme,
    compute_qparams,
    dequantize,
    fake_quantize,
    qparams_from_range,
    quantize,
)

X = [-1, 0, 0.5, 2, 3, 10, -5]


def test_spec_q1_asymmetric():
    s = QScheme(bits=8, symmetric=False)
    scale, zp = qparams_from_range(np.float64(-1), np.float64(3), s)
    assert float(scale) == pytest.approx(0.01568627450980392, rel=1e-15)
    assert int(zp) == 64 - 128  # the spec's uint8 grid shifted into int8
    x = tx.tensor(X, dtype=tx.float64)
    q = quantize(x, scale, zp, s)
    assert q.dtype == tx.int8
    assert (q.numpy().astype(int) + 128).tolist() == [0, 64, 96, 192, 255, 255, 0]
    xh = dequantize(q, scale, zp, s, np.float64).numpy()
    np.testing.assert_allclose(xh, [-1.003921568627451, 0, 0.5019607843137255, 2.007843137254902,
                                    2.996078431372549, 2.996078431372549, -1.003921568627451],
                               rtol=1e-14)


def test_spec_q2_symmetric_restricted_and_full():
    x = tx.tensor(X, dtype=tx.float64)
    s = QScheme(bits=8)
    scale, zp = qparams_from_range(np.float64(-1), np.float64(3), s)
    assert float(scale) == pytest.approx(3 / 127)
    assert quantize(x, scale, zp, s).tolist() == [-42, 0, 21, 85, 127, 127, -127]
    s = QScheme(bits=8, full_range=True)
    scale, zp = qparams_from_range(np.float64(-1), np.float64(3), s)
    assert quantize(x, scale, zp, s).tolist() == [-43, 0, 21, 85, 127, 127, -128]


def test_spec_q3_per_channel_vs_per_tensor():
    w = tx.tensor([[0.5, -0.25, 0.125, 1.0], [10, -3, 0.1, 2.5]], dtype=tx.float64)
    pc = QScheme(granularity="per_channel", axis=0)
    scale, zp = compute_qparams(w, pc)
    assert tuple(scale.shape) == (2, 1)
    np.testing.assert_allclose(scale.numpy().ravel(), [1 / 127, 10 / 127])
    assert quantize(w, scale, zp, pc).tolist() == [[64, -32, 16, 127], [127, -38, 1, 32]]
    pt = QScheme()
    st, zt = compute_qparams(w, pt)
    assert quantize(w, st, zt, pt).tolist()[0] == [6, -3, 2, 13]
    err_pc = np.abs(fake_quantize(w, pc).numpy()[0] - w.numpy()[0]).max()
    err_pt = np.abs(fake_quantize(w, pt).numpy()[0] - w.numpy()[0]).max()
    assert err_pt == pytest.approx(0.0325, abs=1e-4) and err_pc == pytest.approx(0.00394, abs=1e-5)


def test_spec_q4_fake_quant_ste():
    x = tx.tensor([-2, -1, 0.3, 3, 5], dtype=tx.float64, requires_grad=True)
    s = QScheme(symmetric=False)
    scale, zp = qparams_from_range(np.float64(-1), np.float64(3), s)
    y = fake_quantize(x, s, scale, zp)
    np.testing.assert_allclose(y.detach().numpy(), [-1.00392, -1.00392, 0.29804, 2.99608, 2.99608],
                               atol=1e-5)
    y.sum().backward()
    assert x.grad.tolist() == [0, 1, 1, 1, 0]


@pytest.mark.parametrize("bits,symmetric", [(8, False), (8, True), (4, False), (3, True),
                                            (2, False)])
def test_per_tensor_matches_torch_values_and_grads(bits, symmetric, rng):
    torch = pytest.importorskip("torch")
    s = QScheme(bits=bits, symmetric=symmetric)
    a = (rng.standard_normal(4000) * 3).astype(np.float32)
    a[:5] = [0.0, -128 * 0.05, 2.5, 1e-9, -1e9]  # ties, zero, huge
    x = tx.tensor(a, requires_grad=True)
    scale, zp = compute_qparams(tx.tensor(a[5:]), s)
    y = fake_quantize(x, s, scale, zp)
    g = rng.standard_normal(a.shape).astype(np.float32)
    (y * tx.tensor(g)).sum().backward()
    t = torch.tensor(a, requires_grad=True)
    ty = torch.fake_quantize_per_tensor_affine(t, float(scale), int(zp), s.qmin, s.qmax)
    (ty * torch.tensor(g)).sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("symmetric", [False, True])
def test_per_channel_matches_torch(axis, symmetric, rng):
    torch = pytest.importorskip("torch")
    s = QScheme(bits=8, symmetric=symmetric, granularity="per_channel", axis=axis)
    a = (rng.standard_normal((6, 5, 7)) * rng.uniform(0.1, 10, (6, 1, 1))).astype(np.float32)
    scale, zp = compute_qparams(tx.tensor(a * 0.8), s)  # a static range: some codes clamp
    x = tx.tensor(a, requires_grad=True)
    y = fake_quantize(x, s, scale, zp)
    y.sum().backward()
    t = torch.tensor(a, requires_grad=True)
    ax = axis % 3
    ty = torch.fake_quantize_per_channel_affine(
        t, torch.tensor(scale.numpy().ravel()), torch.tensor(zp.numpy().ravel()), ax,
        s.qmin, s.qmax)
    ty.sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
    assert 0 < x.grad.numpy().sum() < a.size  # the static range clamps some, keeps most


@pytest.mark.filterwarnings("ignore:.*quantized tensor creation functions:UserWarning")
def test_quantize_matches_torch_quantize_per_channel(rng):
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((8, 16)).astype(np.float32)
    s = QScheme(granularity="per_channel", axis=0, full_range=True)
    scale, zp = compute_qparams(tx.tensor(a), s)
    q = quantize(tx.tensor(a), scale, zp, s)
    tq = torch.quantize_per_channel(torch.tensor(a), torch.tensor(scale.numpy().ravel(),
                                    dtype=torch.float64), torch.tensor(zp.numpy().ravel()),
                                    0, torch.qint8)
    np.testing.assert_array_equal(q.numpy(), tq.int_repr().numpy())
    np.testing.assert_allclose(dequantize(q, scale, zp, s).numpy(), tq.dequantize().numpy(),
                               rtol=1e-6)


@pytest.mark.parametrize("group_size", [1, 4, 32, 128])
def test_per_group_equals_per_row_of_reshaped(group_size, rng):
    a = rng.standard_normal((3, 256)).astype(np.float32)
    s = QScheme(bits=4, symmetric=False, granularity="per_group", group_size=group_size)
    scale, zp = compute_qparams(tx.tensor(a), s)
    assert tuple(scale.shape) == (3, 256 // group_size, 1)
    rows = a.reshape(-1, group_size)
    pc = QScheme(bits=4, symmetric=False, granularity="per_channel", axis=0)
    ref = fake_quantize(tx.tensor(rows), pc).numpy().reshape(a.shape)
    np.testing.assert_array_equal(fake_quantize(tx.tensor(a), s).numpy(), ref)
    q = quantize(tx.tensor(a), scale, zp, s)
    assert q.shape == a.shape and int(q.numpy().min()) >= -8 and int(q.numpy().max()) <= 7


def test_awq_a1_group_vector():
    # spec 7.2 A1: INT4 asymmetric group, s = 0.25, z = 4 (unsigned) -> -4 here
    w = tx.tensor([-1, -0.25, 0, 0.5, 2, 2.75, 0.3, 1.1], dtype=tx.float64)
    s = QScheme(bits=4, symmetric=False, granularity="per_group", group_size=8)
    scale, zp = compute_qparams(w, s)
    assert float(scale) == 0.25 and int(zp) == 4 - 8
    np.testing.assert_allclose(fake_quantize(w, s).numpy(), [-1, -0.25, 0, 0.5, 2, 2.75, 0.25, 1])


def test_ste_mask_float64_and_double_backward():
    # the clipped STE: d x_hat / d x = 1 iff round(x / s) + z lies in [qmin, qmax]
    s = QScheme(bits=4, symmetric=False, granularity="per_channel", axis=1)
    a = np.random.default_rng(0).standard_normal((50, 4)) * 2
    scale, zp = compute_qparams(tx.tensor(a * 0.5), s)
    x = tx.tensor(a, requires_grad=True)
    y = fake_quantize(x, s, scale, zp)
    (gx,) = tx.autograd.grad(y.sum(), [x], create_graph=True)
    code = np.rint(a / scale.numpy()) + zp.numpy()
    np.testing.assert_array_equal(gx.detach().numpy(), (code >= -8) & (code <= 7))
    assert 0 < gx.detach().numpy().sum() < a.size
    assert gx.requires_grad is False or tx.autograd.grad(
        gx.sum(), [x], allow_unused=True)[0] is None  # the mask is constant in x


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp4_e2m1"])
def test_float_formats_per_channel(fmt, rng):
    a = rng.standard_normal((4, 64)).astype(np.float32) * np.float32([[1], [10], [0.01], [0]])
    s = QScheme(dtype=fmt, granularity="per_channel")
    scale, zp = compute_qparams(tx.tensor(a), s)
    f = s.element_format
    ref = tx.numerics.quantize(a / scale.numpy(), fmt, saturate=True) * scale.numpy()
    y = fake_quantize(tx.tensor(a), s)
    np.testing.assert_array_equal(y.numpy(), ref.astype(np.float32))
    assert np.abs(a / scale.numpy()).max() <= f.max
    codes = quantize(tx.tensor(a), scale, zp, s)
    np.testing.assert_array_equal(dequantize(codes, scale, zp, s).numpy(), y.numpy())


@pytest.mark.parametrize("fmt,elem", [("mxfp8", "fp8_e4m3"), ("mxfp4", "fp4_e2m1"),
                                      ("mxfp6", "fp6_e3m2")])
def test_mx_formats_match_numerics(fmt, elem, rng):
    a = rng.standard_normal((4, 96)).astype(np.float32)
    y = fake_quantize(tx.tensor(a), QScheme(dtype=fmt))
    np.testing.assert_array_equal(y.numpy(), tx.numerics.mx_fake_quant(a, elem))
    s = QScheme(dtype=fmt)
    scale, zp = compute_qparams(tx.tensor(a), s)
    np.testing.assert_array_equal(dequantize(quantize(tx.tensor(a), scale, zp, s), scale, zp,
                                             s).numpy(), y.numpy())


def test_nvfp4_fake_quant_matches_numerics(rng):
    a = rng.standard_normal((4, 64)).astype(np.float32)
    x = tx.tensor(a, requires_grad=True)
    y = fake_quantize(x, QScheme(dtype="nvfp4"))
    ref = tx.numerics.nvfp4_dequantize(tx.numerics.nvfp4_quantize(a)).numpy()
    np.testing.assert_array_equal(y.detach().numpy(), ref)
    y.sum().backward()
    assert (x.grad.numpy() == 1).all()


def test_device_parity(device, rng):
    a = rng.standard_normal((4, 64)).astype(np.float32)
    s = QScheme(bits=4, symmetric=False, granularity="per_group", group_size=16)
    ref = fake_quantize(tx.tensor(a), s).numpy()
    x = tx.tensor(a, device=device)
    scale, zp = compute_qparams(x, s)
    q = quantize(x, scale, zp, s)
    assert q.device.type == device
    np.testing.assert_array_equal(dequantize(q, scale, zp, s).cpu().numpy(), ref)
    np.testing.assert_array_equal(fake_quantize(x, s).cpu().numpy(), ref)


# -- bad input -------------------------------------------------------------------------------
def test_group_size_not_dividing():
    s = QScheme(bits=4, granularity="per_group", group_size=128)
    with pytest.raises(ValueError, match="group_size 128 does not divide the last dimension 100"):
        fake_quantize(tx.randn(4, 100), s)
    with pytest.raises(ValueError, match="group_size 128"):
        compute_qparams(tx.randn(4, 100), s)


@pytest.mark.parametrize("kw,match", [
    (dict(bits=9), "'bits' must be an int in \\[2, 8\\]"),
    (dict(bits=1), "'bits'"),
    (dict(granularity="per_row"), "'granularity'"),
    (dict(granularity="per_group"), "group_size"),
    (dict(dtype="int5"), "'dtype'"),
    (dict(dtype="mxfp8", group_size=16), "blocks of 32"),
])
def test_bad_scheme(kw, match):
    with pytest.raises(ValueError, match=match):
        QScheme(**kw)


def test_bad_inputs():
    with pytest.raises(TypeError, match="fake_quantize\\(\\): argument 'x' must be a floating"):
        fake_quantize(tx.tensor([1, 2]), QScheme())
    with pytest.raises(TypeError, match="argument 'x' must be a Tensor"):
        fake_quantize([1.0], QScheme())
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        compute_qparams(tx.randn(3, 4), QScheme(granularity="per_channel", axis=2))
    with pytest.raises(ValueError, match="empty"):
        compute_qparams(tx.randn(0, 4), QScheme())
