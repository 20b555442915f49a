"""Regression tests: results that must not depend on ml_dtypes' version, and bad input that
must get tensorix's own clear error (issue 11 and the numerics reliability list).

The reference for every rounding here is exact rational arithmetic (``fractions``) over the
format's own value table, never a dependency's cast.
"""

import bisect
from fractions import Fraction

import numpy as np
import pytest

import tensorix as tx
from tensorix import numerics as nx

F32 = np.float32
LOWP = [tx.bfloat16, tx.float8_e4m3fn, tx.float8_e5m2, tx.float6_e3m2fn, tx.float6_e2m3fn,
        tx.float4_e2m1fn]


def exact_rne(x, fmt):
    """Codes of float64 ``x`` rounded once to nearest-even in ``fmt``, by search over the exact
    values of every finite code (Fractions); overflow saturates (finite formats) or goes past
    max (marked -1)."""
    f = nx.get_format(fmt)
    codes = np.arange(f.max_code + 1)
    vals = [Fraction(float(v)) for v in nx.decode(codes.astype(f.code_dtype), f, np.float64)]
    ulp = Fraction(2) ** (f.emax - f.mbits)
    out = []
    for v in x.tolist():
        mag, sign = Fraction(abs(v)), (f.sign_bit if np.signbit(v) else 0)
        if mag >= vals[-1] + ulp / 2 and not (mag == vals[-1] + ulp / 2 and f.max_code % 2 == 0):
            out.append(f.max_code | sign if f.kind == "finite" else -1)
            continue
        # the codes' values increase with the code: the nearest is one of the two around mag
        k = bisect.bisect_left(vals, mag)
        i = min((j for j in (k - 1, k) if 0 <= j < len(vals)),
                key=lambda j: (abs(vals[j] - mag), j % 2))
        out.append(int(codes[i]) | sign)
    return out


def near_midpoints(fmt, n, seed):
    """float64 values a hair (2^-40 relative) off the midpoints between neighbouring codes:
    where rounding through float32 first goes wrong."""
    f = nx.get_format(fmt)
    rng = np.random.default_rng(seed)
    c = rng.integers(1, f.max_code, n).astype(f.code_dtype)
    lo, hi = (nx.decode(k, f, np.float64) for k in (c, c + 1))
    mid = (lo + hi) / 2
    x = mid + np.where(rng.random(n) < 0.5, -1, 1) * np.ldexp(mid, -40)
    return x * np.where(rng.random(n) < 0.5, -1, 1)


@pytest.mark.parametrize("d", LOWP, ids=lambda d: d.name)
def test_float64_casts_round_once_on_every_device(d, device):
    """float64 -> low precision rounds once (RNE) in Tensor.to, tensor(dtype=) and full(), on
    the CPU and the "cuda" path alike (issue 11: 1.0625 + 2^-40 -> 1.125, not 1.0)."""
    x = np.concatenate([near_midpoints(d.name, 300, 1), [1.0625 + 2.0**-40]])
    want = exact_rne(x, d.name)
    bits = 16 if d is tx.bfloat16 else 8
    view = np.uint16 if bits == 16 else np.uint8
    for t in (tx.tensor(x, device=device).to(d), tx.tensor(x, dtype=d, device=device),
              tx.tensor(x.tolist(), dtype=d, device=device)):
        got = t.cpu().numpy().view(view).tolist()
        assert got == want
    fill = tx.full((1,), float(x[-1]), dtype=d, device=device).cpu().numpy().view(view)
    assert fill.tolist() == want[-1:]
    if d is tx.float8_e4m3fn:
        one = tx.tensor([1.0625 + 2.0**-40], dtype=tx.float64, device=device)
        assert one.to(d).float().item() == 1.125


@pytest.mark.parametrize("src", [tx.float8_e4m3fn, tx.float8_e5m2, tx.float8_e8m0fnu,
                                 tx.float4_e2m1fn], ids=lambda d: d.name)
@pytest.mark.parametrize("dst", [tx.int64, tx.int32, tx.int8, tx.uint8, tx.float16, tx.bool],
                         ids=lambda d: d.name)
def test_format_to_other_dtypes_is_the_float32_value_cast(src, dst, device):
    """A format's value converts as its exact float32 value does, with no warning (ml_dtypes
    0.7 warns and gives other integers than 0.6 for NaN/Inf/out-of-range)."""
    x = tx.tensor([1.0, -2.0, 6.0, 448.0, 57344.0, 2.0**100, float("inf"), float("nan")],
                  dtype=tx.float32)
    if src is tx.float4_e2m1fn:
        x = x[:3]
    fmt = x.to(src)
    vals = fmt.float().numpy()
    with np.errstate(all="ignore"):
        want = vals.astype(dst.np)
    got = fmt.to(device).to(dst).cpu().numpy()
    np.testing.assert_array_equal(got, want)


def test_fp4_nan_and_e8m0_edges_in_tensor_casts(device):
    """Tensor casts: NaN -> +0 in fp6/fp4 (no NaN code; ml_dtypes gives a sign-inverted zero);
    E8M0 rounds ties up, takes zero and negatives to NaN, and positive values below its range
    to 2^-127 (spec 8b)."""
    nan = tx.tensor([float("nan"), -float("nan")], device=device)
    for d in (tx.float4_e2m1fn, tx.float6_e2m3fn, tx.float6_e3m2fn):
        assert nan.to(d).cpu().numpy().view(np.uint8).tolist() == [0, 0]
    sub = np.array([0x00400001, 0x00500000, 0x00600000], np.uint32).view(F32)
    x = np.concatenate([np.float32([1.5, 3, 0.75, 0.0, -1.0, 2.0**-129]), sub])
    got = tx.tensor(x, device=device).to(tx.float8_e8m0fnu).cpu().numpy().view(np.uint8)
    assert got.tolist() == [0x80, 0x81, 0x7F, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01]


def test_bf16_saturation_of_float16_inf():
    """encode(float16 +-inf, "bf16", saturate=True) is +-max, as for float32/float64 input."""
    for dt in (np.float16, np.float32, np.float64):
        x = np.array([np.inf, -np.inf], dt)
        assert nx.encode(x, "bf16", saturate=True).tolist() == [0x7F7F, 0xFF7F], dt
        assert nx.encode(x, "fp16", saturate=True).tolist() == [0x7BFF, 0xFBFF], dt
        assert nx.encode(x, "bf16").tolist() == [0x7F80, 0xFF80], dt


def test_encode_rejects_non_numeric_input():
    with pytest.raises(TypeError, match=r"encode\(\): argument 'x' must be a real numeric"):
        nx.encode(np.array([None]), "e4m3")
    with pytest.raises(TypeError, match=r"encode\(\): argument 'x' must be a real numeric"):
        nx.encode(np.array(["1.0"]), "bf16")


# -- NVFP4 --------------------------------------------------------------------------------------
def exact_nvfp4(x):
    """Spec 1.6 in unbounded exponent range: the recipe on x * 2^k (amax in [1, 2)), whose
    float32 steps are then all normal; dequantized exactly in Fractions, times 2^-k."""
    amax = float(np.abs(x).max())
    k = 1 - int(np.frexp(amax)[1])
    up = (x.astype(np.float64) * 2.0**k).astype(F32)
    q = nx.nvfp4_quantize(up)
    s_dec = Fraction(float(F32(1) / F32(F32(6 * 448) / F32(np.abs(up).max()))))
    qv = nx.decode(q.codes.numpy(), "fp4_e2m1", np.float64).reshape(-1, 16)
    sb = nx.decode(q.scale_codes.numpy(), "fp8_e4m3", np.float64).reshape(-1)
    vals = [Fraction(float(v)) * Fraction(float(s)) * s_dec / Fraction(2) ** k
            for row, s in zip(qv, sb) for v in row]
    return np.array([float(v) for v in vals]).astype(F32)  # one rounding


@pytest.mark.parametrize("scale", [1.0, 1e-20, 1e-36, 1e-40, 2.0**-149])
def test_nvfp4_tiny_tensors_quantize_as_the_recipe(scale):
    """A tensor with amax below ~8e-36 made s_enc overflow: NaN errors or all zeros. It now
    gives the recipe's codes (scale invariance) and a finite, nonzero dequantization."""
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(32) * scale).astype(F32) if scale != 2.0**-149 else \
        np.array([1e-45] + [0.0] * 15, F32)
    q = nx.nvfp4_quantize(x)
    got = nx.nvfp4_dequantize(q).numpy()
    assert np.all(np.isfinite(got)) and np.abs(got).max() > 0
    np.testing.assert_array_equal(got, exact_nvfp4(x))
    if scale == 2.0**-149:
        assert got[0] == F32(1e-45) and not got[1:].any()


def test_nvfp4_normal_range_is_unchanged():
    """Spec vector N1 still holds bit for bit (the float64 dequantization rounds once)."""
    x = np.array([0.3, -1.2, 6.5, 2.0, 0, 0.05, -3.7, 1.0, 0.75, 4.4, -6.4, 2.6, 0.2, 0.1, -0.6,
                  5.0, 0.1, -0.02, 0.05, 0.07, 0, 0.01, -0.09, 0.03, 0.04, 0.06, -0.08, 0.015,
                  0.025, 0.035, 0.045, 0.055], F32)
    q = nx.nvfp4_quantize(x)
    assert q.scale_codes.numpy().tolist() == [0x7E, 0x4E]
    assert nx.nvfp4_dequantize(q).numpy()[16] == F32(0.1015625)
    np.testing.assert_array_equal(nx.nvfp4_dequantize(q).numpy(), exact_nvfp4(x))


# -- HiFloat4, MX -------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_hif4_rejects_nan_and_inf(bad):
    x = np.zeros(64, F32)
    x[3] = bad
    with pytest.raises(ValueError, match=r"hif4_quantize\(\): input must be finite"):
        nx.hif4_quantize(x)


@pytest.mark.parametrize("elem", ["fp4_e2m1", "fp6_e2m3", "fp6_e3m2", "fp8_e4m3", "fp8_e5m2",
                                  "int8"])
@pytest.mark.parametrize("mode", ["rceil", "floor"])
def test_mx_dequantizes_finite_input_to_finite_float32(elem, mode):
    """MXFP4 of 3e38 was 4 * 2^126 = inf in float32; the top element is now the largest one
    whose value stays finite, and the rest of the block is untouched."""
    for top in (3e38, float(np.finfo(F32).max), 2.5e38):
        x = np.zeros(32, F32)
        x[:3] = [top, -top, 1e37]
        mx = nx.mx_quantize(x, elem, scale_mode=mode)
        got = nx.mx_dequantize(mx).numpy()
        assert np.all(np.isfinite(got)), (top, got[:3])
        assert got[0] == -got[1] and got[0] >= F32(top) * 0.5
        fake = nx.mx_fake_quant(x.astype(np.float64), elem, scale_mode=mode)
        assert np.all(np.isfinite(fake.astype(F32)))


def test_mx_dequantize_rejects_invalid_codes_and_inconsistent_fields():
    mx = nx.mx_quantize(np.ones((2, 32), F32), "fp4_e2m1")
    mx.codes._data[0, 0] = 200  # not an fp4 code (4 bits)
    with pytest.raises(ValueError, match=r"mx_dequantize\(\): MXArray.codes holds invalid "
                                         r"codes \(>= 16\) for 4-bit"):
        nx.mx_dequantize(mx)
    good = nx.mx_quantize(np.ones((2, 32), F32), "fp8_e4m3")
    edits = {"block": (0, ValueError, "argument 'block' must be a positive int"),
             "axis": (5, ValueError, "axis 5 is out of range"),
             "shape": ((2, 64), ValueError, r"MXArray.codes must be uint8 of shape \(2, 64\)"),
             "scale_codes": (tx.zeros(2, 3, dtype=tx.uint8), ValueError,
                             r"MXArray.scale_codes must be uint8 of shape \(2, 1\)"),
             "codes": (tx.zeros(2, 32), ValueError, "MXArray.codes must be uint8"),
             "elem": ("fp32", ValueError, "element format 'fp32' is not an MX element")}
    for field, (value, exc, msg) in edits.items():
        bad = nx.MXArray(**{**good.__dict__, field: value})
        with pytest.raises(exc, match=r"mx_dequantize\(\): .*" + msg):
            nx.mx_dequantize(bad)


@pytest.mark.parametrize("block, exc", [(0, ValueError), (-1, ValueError), (2.0, TypeError),
                                        (True, TypeError), (None, TypeError)])
def test_block_arguments_are_checked_everywhere(block, exc):
    """One helper checks every block format's ``block`` (0 divided by zero, -1 failed in
    reshape)."""
    x = np.ones(64, F32)
    for fn in (nx.mx_quantize, nx.nvfp4_quantize):
        with pytest.raises(exc, match=rf"{fn.__name__}\(\): argument 'block' must be a "
                                      r"positive int"):
            fn(x, block=block)
    q = nx.nvfp4_quantize(x)
    q.block = block
    with pytest.raises(exc, match=r"nvfp4_dequantize\(\): argument 'block' must be"):
        nx.nvfp4_dequantize(q)
