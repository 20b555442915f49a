"""Block formats: MX vectors M1-M7 (spec 2.8), scale rules, axes and padding; NVFP4 vector N1
and its properties (spec 1.6); HiFloat4 provisional vector H1 (spec 1.7)."""

import math

import numpy as np
import pytest

import tensorix as tx
from tensorix import numerics as nx

F32 = np.float32


def block(vals, n=32):
    return np.array(list(vals) + [0] * (n - len(vals)), F32)


def deq(v, elem, mode, **kw):
    mx = nx.mx_quantize(block(v), elem, scale_mode=mode, **kw)
    return mx, nx.mx_dequantize(mx).numpy()


def test_m1_mxfp8_e4m3():
    v = [500, 150, 1, 0.5, 17, 19, 0.01171875]
    mx, x = deq(v, "fp8_e4m3", "floor")
    assert mx.scale_codes.tolist() == [0x7F]
    assert x[:7].tolist() == [448, 144, 1, 0.5, 16, 20, 0.01171875] and not x[7:].any()
    mx, x = deq(v, "fp8_e4m3", "rceil")
    assert mx.scale_codes.tolist() == [0x80]
    p = nx.decode(mx.codes.numpy(), "e4m3")[:7].tolist()
    assert p == [256, 72, 0.5, 0.25, 8, 10, 0.005859375]
    assert x[:7].tolist() == [512, 144, 1, 0.5, 16, 20, 0.01171875]
    _, x = deq(v, "fp8_e4m3", "floor", rounding="rna")
    assert x[4] == 18  # microxcaling's "nearest" (ties away)


def test_m2_mxfp4_and_m3_mxfp6():
    v = [7.9, 6, 3.3, 1.2, -0.7, 0.2, 0.25, -0.75]
    mx, x = deq(v, "fp4_e2m1", "floor")
    assert mx.scale_codes.tolist() == [127] and x[:8].tolist() == [6, 6, 3, 1, -0.5, 0, 0, -1]
    assert deq(v, "fp4_e2m1", "floor", rounding="rna")[1][6] == 0.5
    mx, x = deq(v, "fp4_e2m1", "rceil")
    assert nx.decode(mx.codes.numpy(), "e2m1")[:8].tolist() == [4, 3, 1.5, 0.5, -0.5, 0, 0,
                                                               -0.5]
    assert x[:8].tolist() == [8, 6, 3, 1, -1, 0, 0, -1]
    assert deq(v, "fp6_e2m3", "floor")[1][:8].tolist() == [7.5, 6, 3.25, 1.25, -0.75, 0.25,
                                                           0.25, -0.75]
    mx, _ = deq(v, "fp6_e2m3", "rceil")
    assert nx.decode(mx.codes.numpy(), "e2m3")[:8].tolist() == [4, 3, 1.625, 0.625, -0.375,
                                                               0.125, 0.125, -0.375]
    assert deq([30, 3.3, 0.1], "fp6_e3m2", "floor")[1][:3].tolist() == [28, 3.5, 0.125]
    assert deq([30, 3.3, 0.1], "fp6_e3m2", "rceil")[1][:3].tolist() == [32, 3.5, 0.125]
    for mode in ("floor", "rceil"):
        assert deq([60000, 1, 3e-5], "fp8_e5m2", mode)[1][:3].tolist() == [57344, 1,
                                                                          3.0517578125e-05]


def test_m4_special_blocks():
    mx, x = deq([], "fp8_e4m3", "rceil")
    assert mx.scale_codes.tolist() == [0] and not x.any()
    for bad in (np.inf, np.nan, -np.inf):
        for elem in ("fp8_e4m3", "fp4_e2m1", "int8"):
            mx, x = deq([1, bad], elem, "floor")
            assert mx.scale_codes.tolist() == [0xFF] and np.isnan(x).all()


def test_m5_mxint8():
    mx, x = deq([1.0, -0.3, 0.0078125, 1.999, 0.0234375], "int8", "floor")
    assert mx.scale_codes.tolist() == [127]
    assert mx.codes.numpy().view(np.int8)[:5].tolist() == [64, -19, 0, 127, 2]
    mx, _ = deq([1.0, -0.3, 0.0078125, 1.999, 0.0234375], "int8", "floor", rounding="rna")
    assert mx.codes.numpy().view(np.int8)[2] == 1
    mx, x = deq([3, -0.3], "int8", "floor")
    assert mx.scale_codes.tolist() == [128] and x[:2].tolist() == [3.0, -0.3125]
    c = np.zeros(32, np.uint8)
    c[0] = 0x80  # -2 decodes although we never emit it
    fake = nx.MXArray(tx.tensor(c), tx.tensor(np.array([127], np.uint8)), "int8", 32, 0, (32,))
    assert nx.mx_dequantize(fake).numpy()[0] == -2.0


def test_m6_log2_pitfall_and_m7_subnormal_block():
    v = [np.float32(2.0**20 * (1 - 2.0**-24)), 3.0]
    assert np.log2(F32(v[0])) == 20.0  # the trap: float32 log2 picks the wrong binade
    mx, x = deq(v, "fp8_e4m3", "floor")
    assert mx.scale_codes.tolist() == [127 + 11] and x[:2].tolist() == [917504, 4.0]
    mx, x = deq(v, "fp8_e4m3", "rceil")
    assert mx.scale_codes.tolist() == [127 + 12] and x[:2].tolist() == [1048576, 0]
    mx, x = deq([1e-39, 2e-40], "fp8_e4m3", "floor")
    assert mx.scale_codes.tolist() == [0]
    assert nx.decode(mx.codes.numpy(), "e4m3")[:2].tolist() == [0.171875, 0.03515625]
    assert np.allclose(x[:2], [1.01019046e-39, 2.06629866e-40], rtol=1e-7, atol=0)
    _, x = deq([1e-39, 2e-40], "fp8_e4m3", "floor", flush_fp32_subnorms=True)
    assert not x.any()


@pytest.mark.parametrize("elem", list(nx.MX_ELEMENTS))
def test_scale_exponents_against_exact_math(elem):
    emax, vmax = nx.MX_ELEMENTS[elem]
    rng = np.random.default_rng(0)
    amax = (10.0 ** rng.uniform(-37, 37, 3000)).astype(F32)
    amax = np.concatenate([amax, np.ldexp(F32(1), np.arange(-120, 120)).astype(F32),
                           np.float32([vmax * 2.0**j for j in range(-5, 5)])])
    kf = nx.e8m0_scale_exponents(amax, elem, "floor")
    want_f = [max(math.frexp(float(a))[1] - 1 - emax, -127) for a in amax]
    assert kf.tolist() == want_f
    kr = nx.e8m0_scale_exponents(amax, elem, "rceil")
    d = (amax / F32(vmax)).astype(F32)
    want_r = [max(min(math.ceil(math.log2(float(v))) if (float(v) != 2.0 ** round(
        math.log2(float(v)))) else round(math.log2(float(v))), 127), -127) for v in d]
    assert kr.tolist() == want_r
    kr64 = nx.e8m0_scale_exponents(amax.astype(np.float64) * 0.999, elem, "rceil")
    assert np.all(kr64 <= kr) and np.all(kr64 >= kr - 1)


@pytest.mark.parametrize("elem", list(nx.MX_ELEMENTS))
@pytest.mark.parametrize("mode", ["floor", "rceil"])
def test_mx_matches_blockwise_reference(elem, mode):
    """Per block: k from the scale rule, elements encode(V * 2^-k, saturate=True)."""
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((3, 64)) * np.exp2(rng.integers(-20, 20, (3, 1)))).astype(F32)
    mx = nx.mx_quantize(x, elem, scale_mode=mode)
    got = nx.mx_dequantize(mx).numpy()
    for i in range(3):
        for b in range(2):
            v = x[i, 32 * b:32 * b + 32]
            k = int(nx.e8m0_scale_exponents(np.abs(v).max(keepdims=True), elem, mode)[0])
            y = (v.astype(np.float64) * 2.0**-k).astype(F32)
            if elem == "int8":
                p = np.clip(np.rint(y * 64), -127, 127) / 64
            else:
                p = nx.decode(nx.encode(y, elem, saturate=True), elem, np.float64)
            assert np.array_equal(got[i, 32 * b:32 * b + 32], (p * 2.0**k).astype(F32))
            assert mx.scale_codes.numpy()[i, b] == k + 127


def test_mx_axis_padding_and_shapes():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((40, 3, 5)).astype(F32)
    mx = nx.mx_quantize(x, "fp8_e4m3", axis=0, pad=True)
    assert mx.codes.shape == (64, 3, 5) and mx.scale_codes.shape == (2, 3, 5)
    y = nx.mx_dequantize(mx).numpy()
    assert y.shape == x.shape
    ref = nx.mx_dequantize(nx.mx_quantize(np.moveaxis(x, 0, -1), "fp8_e4m3", pad=True)).numpy()
    assert np.array_equal(y, np.moveaxis(ref, -1, 0))
    assert np.abs(y - x).max() <= np.abs(x).max() * 2.0**-3
    with pytest.raises(ValueError, match="must be a multiple of the block size 32; pass pad"):
        nx.mx_quantize(x, "fp8_e4m3", axis=0)
    with pytest.raises(ValueError, match="not an MX element"):
        nx.mx_quantize(x, "bf16", axis=0, pad=True)
    with pytest.raises(ValueError, match="argument 'scale_mode' must be"):
        nx.mx_quantize(np.ones(32, F32), "fp8_e4m3", scale_mode="round")
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        nx.mx_quantize(x, "fp8_e4m3", axis=3)
    assert nx.mx_quantize(x, "fp4_e2m1", axis=0, pad=True).bits_per_value == 4.25


def test_mx_representable_values_round_trip_and_float64_input():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 0x7F, (4, 32)).astype(np.uint8)
    codes[:, 0] = 0x7E  # 448 present: both scale rules give k = 0 for these blocks
    v = nx.decode(codes, "e4m3")
    for mode in ("floor", "rceil"):
        assert np.array_equal(nx.mx_fake_quant(v, "fp8_e4m3", scale_mode=mode), v)
    x64 = np.array([1 + 2.0**-4 + 2.0**-30] + [0.0] * 31)
    assert nx.mx_fake_quant(x64, "fp8_e4m3", scale_mode="floor")[0] == 1.125


def test_mx_stochastic_rounding_and_tensor_ste():
    x = np.full((1, 4096), 1 + 2.0**-5, F32)
    x[0, ::32] = 1.75  # block max: k = 0 under floor, the element grid is 1/8 near 1
    rb = nx.random_bits(5, 0, (1, 128, 32))
    got = nx.mx_fake_quant(x, "fp8_e4m3", scale_mode="floor", rounding="sr", rbits=rb)
    mask = np.ones(4096, bool)
    mask[::32] = False
    assert set(np.unique(got[0, mask]).tolist()) == {1.0, 1.125}
    assert abs(got[0, mask].mean() - (1 + 2.0**-5)) < 0.01
    t = tx.tensor(np.linspace(-3, 3, 64, dtype=F32), requires_grad=True)
    y = nx.mx_fake_quant(t, "fp4_e2m1")
    assert isinstance(y, tx.Tensor)
    (y * 2).sum().backward()
    assert t.grad.tolist() == [2.0] * 64


def test_n1_nvfp4_vector():
    x = np.array([0.3, -1.2, 6.5, 2.0, 0, 0.05, -3.7, 1.0, 0.75, 4.4, -6.4, 2.6, 0.2, 0.1, -0.6,
                  5.0, 0.1, -0.02, 0.05, 0.07, 0, 0.01, -0.09, 0.03, 0.04, 0.06, -0.08, 0.015,
                  0.025, 0.035, 0.045, 0.055], F32)
    q = nx.nvfp4_quantize(x)
    assert q.tensor_scale == float(F32(0.00241815485060215))
    assert float(F32(1) / F32(q.tensor_scale)) == pytest.approx(413.5384521484375, abs=1e-4)
    assert q.scale_codes.tolist() == [0x7E, 0x4E]
    p = nx.decode(q.codes.numpy(), "e2m1").tolist()
    assert p[:16] == [0.5, -1, 6, 2, 0, 0, -3, 1, 0.5, 4, -6, 2, 0, 0, -0.5, 4]
    assert p[16:] == [6, -1, 3, 4, 0, 0.5, -6, 2, 2, 4, -4, 1, 1.5, 2, 3, 3]
    d = nx.nvfp4_dequantize(q).numpy()
    assert d[2] == 6.5 and d[0] == np.float32(0.5416666865348816) and d[16] == 0.1015625
    assert q.packed().shape == (16,) and q.packed().tolist()[0] == 0x1 | 0xA << 4  # 0.5, -1.0


def test_nvfp4_properties():
    rng = np.random.default_rng(4)
    worst = 0
    for _ in range(30):
        x = (rng.standard_t(2, (8, 64)) * 10.0 ** rng.uniform(-3, 3)).astype(F32)
        q = nx.nvfp4_quantize(x)
        s_b = nx.decode(q.scale_codes.numpy(), "e4m3")
        p = np.abs(nx.decode(q.codes.numpy(), "e2m1")).reshape(8, 4, 16).max(axis=-1)
        normal = s_b >= 2.0**-6
        assert np.all(p[normal] == 6)
        worst = max(worst, normal.sum())
    assert worst > 0
    z = np.zeros(32, F32)
    z[16:] = np.linspace(-1, 1, 16)
    q = nx.nvfp4_quantize(z)
    assert q.scale_codes.tolist()[0] == 0 and not nx.nvfp4_dequantize(q).numpy()[:16].any()
    assert not nx.nvfp4_dequantize(nx.nvfp4_quantize(np.zeros(16, F32))).numpy().any()
    one = nx.nvfp4_quantize(x, axis=0, per_tensor=False, pad=True)
    assert one.tensor_scale == 1.0 and one.scale_codes.shape == (1, 64)
    with pytest.raises(ValueError, match="nvfp4_quantize\\(\\): input must be finite"):
        nx.nvfp4_quantize(np.array([np.nan] * 16, F32))


def test_h1_hifloat4_provisional_vector():
    x = ((np.arange(64) - 20) / 8).astype(F32)
    x[7], x[40] = 0.01, -0.3
    h = nx.hif4_quantize(x)
    sc = int(h.scale_codes.tolist()[0])
    assert (1 + (sc & 3) / 4) * 2.0 ** ((sc >> 2) - 48) == 0.75
    assert h.l2.tolist() == [[0, 0, 0, 0, 0, 1, 1, 1]]
    assert h.l3.tolist() == [[1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 1]]
    out = nx.hif4_dequantize(h).numpy()
    assert out[:8].tolist() == [-2.625, -2.25, -2.25, -2.25, -1.875, -1.875, -1.875, 0]
    assert out[56:].tolist() == [4.5, 4.5, 4.5, 5.25, 5.25, 5.25, 5.25, 5.25]
    assert out[40] == -0.375
    assert abs(np.abs(out - x).max() / np.abs(x).max() - 0.0698) < 5e-4
    assert not nx.hif4_dequantize(nx.hif4_quantize(np.zeros(64, F32))).numpy().any()
