"""Registry entries for ``tensorix.numerics``: element-format casts (encode, decode, quantize,
cast), the MX block formats, NVFP4, fp4/fp6 packing, stochastic rounding with a seed, L-Mul
and the Ozaki-scheme GEMM.

The references are written here from the formats' fields alone (sign, exponent and mantissa
bits, bias, kind of Inf/NaN; docs/specs/numerics.md), not from numerics' code: every value of a
format is listed, and rounding picks the nearest one, ties to the even code. Results are
compared bit for bit (tolerance 0), on the CPU and on the "cuda" device. These ops round, so
they are not in the gradient checks (their straight-through gradients are tested in
tests/numerics).
"""

from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np

from ... import dtypes as dt
from ... import numerics
from ...formats import get_format
from ..registry import OpInfo, Sample, exempt, register

EXACT = {"float32": (0.0, 0.0), "float64": (0.0, 0.0)}
ELEMENTS = ("fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1")


def _host(out):
    """Raw device arrays (encode/decode of a device tensor give the device's array) on the
    host; Tensors and NumPy arrays as they are."""
    if isinstance(out, (tuple, list)):
        return type(out)(_host(o) for o in out)
    if type(out).__name__ == "ndarray" and not isinstance(out, np.ndarray):
        return out.get()
    return out


def _entry(name, samples, **kw):
    kw.setdefault("tol", EXACT)
    return OpInfo(f"numerics.{name}", samples, torch=False, grad=False, output=_host, **kw)


# -- the reference: every value of a format, from its fields ------------------------------------
@functools.cache
def _table(fmt):
    """(values of the codes 0 .. 2^bits - 1 as float64, codes of the finite non-negative values
    sorted by value, those values)."""
    f = get_format(fmt)
    m_bits, e_all = f.mbits, (1 << f.ebits) - 1
    values = []
    for code in range(1 << f.bits):
        s, e, m = code >> (f.ebits + m_bits), (code >> m_bits) & e_all, code & ((1 << m_bits) - 1)
        if f.kind == "ieee" and e == e_all:
            v = np.inf if m == 0 else np.nan
        elif f.kind == "fn" and e == e_all and m == (1 << m_bits) - 1:
            v = np.nan
        elif e == 0:
            v = m / 2.0 ** m_bits * 2.0 ** (1 - f.bias)
        else:
            v = (1 + m / 2.0 ** m_bits) * 2.0 ** (e - f.bias)
        values.append(-v if s else v)
    values = np.array(values)
    pos = [c for c in range(1 << (f.bits - 1)) if np.isfinite(values[c])]
    return values, np.array(pos), values[pos]


def _ref_codes(x, fmt, saturate=False):
    """Codes of ``x`` rounded to nearest, ties to the even code; beyond the largest value:
    the largest (``saturate``), else Inf where the format has it, else NaN."""
    f, (_, codes, vals) = get_format(fmt), _table(fmt)
    a = np.abs(np.asarray(x, np.float64))
    i = np.clip(np.searchsorted(vals, a), 1, len(vals) - 1)
    lo, hi = vals[i - 1], vals[i]
    up = (hi - a < a - lo) | ((hi - a == a - lo) & (codes[i - 1] % 2 == 1))
    out = np.where(up, codes[i], codes[i - 1])
    over = a > vals[-1]
    if saturate:
        out = np.where(over, codes[-1], out)
    else:  # past max + half an ulp rounds up out of range
        half = (vals[-1] - vals[-2]) / 2
        far = (a > vals[-1] + half) | ((a == vals[-1] + half) & (codes[-1] % 2 == 1))
        out = np.where(over & ~far, codes[-1], out)
        out = np.where(far, f.inf_code if f.inf_code is not None else f.nan_code, out)
    out = np.where(np.signbit(x), out | f.sign_bit, out)
    return out.astype(f.code_dtype)


def ref_encode(x, fmt, saturate=False):
    return _ref_codes(x, fmt, saturate)


def ref_decode(codes, fmt):
    return _table(fmt)[0][np.asarray(codes, np.int64)].astype(np.float32)


def ref_quantize(x, fmt, saturate=False):
    return _table(fmt)[0][_ref_codes(x, fmt, saturate).astype(np.int64)].astype(x.dtype)


# -- samples ---------------------------------------------------------------------------------
def _in_range(rng, fmt, shape=(6, 40)):
    """Values across the format's range: normals, subnormals, ties, zeros of both signs."""
    values, _, vals = _table(fmt)
    big = vals[-1]
    x = rng.standard_normal(shape) * big / 4
    x.flat[:12] = [0.0, -0.0, vals[1] / 2, vals[1] * 1.5, -vals[2], big, -big,
                   (vals[-2] + vals[-1]) / 2, vals[3] / 3, 1.0, -1.0, (vals[4] + vals[5]) / 2]
    return np.clip(x, -big, big)


def _casts(rng, dtype):
    out = [Sample((_in_range(rng, f), f), name=f"{f} ") for f in ELEMENTS]
    return out + [Sample((_in_range(rng, f) * 3, f), {"saturate": True}, name=f"{f} sat ")
                  for f in ELEMENTS]


def _codes(rng, dtype):
    return [Sample((np.arange(1 << get_format(f).bits, dtype=np.uint8), f), name=f"{f} ")
            for f in ELEMENTS]


# -- MX: a power-of-two scale per block, then the element format ---------------------------
def ref_mx_fake_quant(x, elem="fp8_e4m3", block=32, axis=-1, scale_mode="rceil"):
    f, (_, _, vals) = get_format(elem), _table(elem)
    emax = int(np.floor(np.log2(vals[-1])))
    xb = np.moveaxis(x, axis, -1)
    xb = xb.reshape(xb.shape[:-1] + (xb.shape[-1] // block, block))
    amax = np.abs(xb).max(-1, keepdims=True)
    if scale_mode == "floor":  # spec 2.2: floor(log2 amax) - emax of the element format
        k = np.where(amax == 0, -127, np.floor(np.log2(np.where(amax == 0, 1, amax))) - emax)
    else:  # rceil: ceil(log2(amax / max)), the division rounded once in x's dtype
        d = (amax / x.dtype.type(vals[-1])).astype(x.dtype)
        k = np.where(d == 0, -127, np.ceil(np.log2(np.where(d == 0, 1, d))))
    scale = 2.0 ** np.clip(k, -127, 127)
    q = _table(f.name)[0][_ref_codes(xb / scale, elem, saturate=True).astype(np.int64)]
    out = (q * scale).reshape(np.moveaxis(x, axis, -1).shape)
    return np.moveaxis(out, -1, axis).astype(np.float32)


def _mx(rng, dtype):
    x = rng.standard_normal((3, 64)) * np.exp(rng.uniform(-4, 4, (3, 1)))
    x[0, :32] = 0.0  # an all-zero block
    return [Sample((x, e), {"block": 32, "scale_mode": m}, name=f"{e} {m} ")
            for e in ELEMENTS for m in ("rceil", "floor")] + [
        Sample((x.T.copy(), "fp8_e4m3"), {"block": 32, "axis": 0}, name="axis 0 ")]


# -- fp4 / fp6 packing ------------------------------------------------------------------------
def ref_pack_fp4(codes):
    c = np.asarray(codes, np.uint8)
    return (c[..., 0::2] | (c[..., 1::2] << 4)).astype(np.uint8)


def ref_unpack_fp4(packed, n=None):
    p = np.asarray(packed, np.uint8)
    out = np.stack([p & 15, p >> 4], -1).reshape(p.shape[:-1] + (2 * p.shape[-1],))
    return out if n is None else out[..., :n]


def ref_pack_fp6(codes):
    """Four 6-bit codes to three bytes, little-endian: code i at bits 6i .. 6i + 5."""
    c = np.asarray(codes, np.uint32).reshape(codes.shape[:-1] + (-1, 4))
    word = c[..., 0] | c[..., 1] << 6 | c[..., 2] << 12 | c[..., 3] << 18
    out = np.stack([word & 255, word >> 8 & 255, word >> 16 & 255], -1)
    return out.reshape(codes.shape[:-1] + (-1,)).astype(np.uint8)


def ref_unpack_fp6(packed, n=None):
    p = np.asarray(packed, np.uint32).reshape(packed.shape[:-1] + (-1, 3))
    word = p[..., 0] | p[..., 1] << 8 | p[..., 2] << 16
    out = np.stack([word >> s & 63 for s in (0, 6, 12, 18)], -1)
    out = out.reshape(packed.shape[:-1] + (-1,)).astype(np.uint8)
    return out if n is None else out[..., :n]


def _nibbles(rng, dtype):
    return [Sample((rng.integers(0, 16, (3, 8)).astype(np.uint8),)),
            Sample((rng.integers(0, 16, (10,)).astype(np.uint8),))]


def _bytes(bits, width):
    def samples(rng, dtype):
        return [Sample((rng.integers(0, 256, (3, width)).astype(np.uint8),)),
                Sample((rng.integers(0, 256, (width,)).astype(np.uint8),), {"n": width})]
    return samples


def _sixes(rng, dtype):
    return [Sample((rng.integers(0, 64, (3, 8)).astype(np.uint8),)),
            Sample((rng.integers(0, 64, (12,)).astype(np.uint8),))]


# -- Ozaki GEMM: float64 products from int8 GEMMs, against the exact product rounded once ----
def ref_exact_matmul(a, b, **_):
    fa, fb = [[Fraction(float(v)) for v in row] for row in a], \
        [[Fraction(float(v)) for v in row] for row in b.T]
    return np.array([[float(sum(x * y for x, y in zip(r, c))) for c in fb] for r in fa])


def ref_lmul_matmul(a, b, fmt="bf16", variant="bitadd"):
    """Every product an L-Mul, summed in float64 and rounded once to float32."""
    prods = ref_lmul(a[..., :, :, None], b[..., None, :, :], fmt, variant)
    return prods.astype(np.float64).sum(-2).astype(np.float32)


def _lmul_mm(rng, dtype):
    a, b = _signed(rng, (3, 6)), _signed(rng, (6, 5))
    return [Sample((a, b), {"fmt": f, "variant": v}, name=f"{f} {v} ")
            for f in ("bf16", "fp8_e4m3") for v in ("bitadd", "formula")]


def _gemm(rng, dtype):
    a = rng.standard_normal((5, 7)) * np.exp(rng.uniform(-3, 3, (5, 1)))
    b = rng.standard_normal((7, 4))
    return [Sample((a, b), {"slices": 12}), Sample((a, b), {"scheme": "II", "moduli": 20})]


# -- cast: a Tensor of the format's dtype; stochastic rounding with explicit bits or a seed ---
def ref_cast(x, fmt, saturate=False):
    return ref_quantize(x, fmt, saturate).astype(np.float32)


def _cast_samples(rng, dtype):
    return [s for s in _casts(rng, dtype) if get_format(s.args[1]).tx_dtype is not None]


def ref_sr_cast(x, fmt, rbits=None, *, seed=None, offset=0, sr_bits=32):
    """Spec 3: between adjacent values a < |x| < b, b where ``d + r >= 2^R`` with
    ``d = RNE(frac(q) 2^R)``, ``q = (|x| - a) / (b - a)`` and ``r`` the low R random bits (drawn
    by the Philox stream of ``seed`` where no bits are given)."""
    if rbits is None:  # Philox4x32-10, itself checked against the Random123 answers
        rbits = numerics.random_bits(seed, offset, x.shape)
    r = np.asarray(rbits, np.int64) & ((1 << sr_bits) - 1)
    _, codes, vals = _table(fmt)
    a = np.abs(np.asarray(x, np.float64))
    i = np.clip(np.searchsorted(vals, a, side="right"), 1, len(vals) - 1)
    lo, hi = vals[i - 1], vals[i]
    d = np.round((a - lo) / (hi - lo) * 2.0 ** sr_bits)  # exact: q has few bits; RNE
    v = np.where(d + r >= 2.0 ** sr_bits, hi, lo)
    return np.copysign(v, x).astype(np.float32)


def _sr(rng, dtype):
    out = []
    for f in ("bf16", "fp8_e4m3", "fp4_e2m1"):
        x = np.clip(_in_range(rng, f)[:, :20], -_table(f)[2][-2], _table(f)[2][-2])
        bits = rng.integers(0, 1 << 32, x.shape)  # int64: tensors have no uint32
        out += [Sample((x, f, bits), name=f"{f} rbits "),
                Sample((x, f), {"seed": 1234, "offset": 5}, name=f"{f} seed ")]
    return out


# -- L-Mul: the spec's two variants on inputs rounded to the format --------------------------
def ref_lmul(x, y, fmt="bf16", variant="bitadd"):
    """(1 + S) 2^(x_e + y_e) with S = x_m + y_m + 2^-l(m) (``formula``); the integer adder
    (``bitadd``) carries c = floor(S) times into the exponent: (1 + S - c) 2^(x_e + y_e + c).
    Inputs of normal products only (the adder flushes what falls below the normal range)."""
    m = get_format(fmt).mbits
    off = 2.0 ** -(m if m <= 3 else (3 if m == 4 else 4))
    a, b = ref_quantize(x.astype(np.float64), fmt), ref_quantize(y.astype(np.float64), fmt)
    ea, eb = np.floor(np.log2(np.abs(np.where(a == 0, 1, a)))), \
        np.floor(np.log2(np.abs(np.where(b == 0, 1, b))))
    total = np.abs(a) / 2.0 ** ea - 1 + np.abs(b) / 2.0 ** eb - 1 + off
    carry = np.floor(total) if variant == "bitadd" else 0
    v = (1 + total - carry) * 2.0 ** (ea + eb + carry)
    return np.where((a == 0) | (b == 0), 0.0, np.sign(a) * np.sign(b) * v).astype(np.float32)


def _signed(rng, shape, lo=0.3, hi=3.0):
    return rng.uniform(lo, hi, shape) * np.where(rng.uniform(size=shape) < 0.5, -1, 1)


def _lmul(rng, dtype):
    x, y = _signed(rng, (4, 9)), _signed(rng, (4, 9))
    x[0, :3], y[1, :2] = 0.0, 0.0
    return [Sample((x, y), {"fmt": f, "variant": v}, name=f"{f} {v} ")
            for f in ("bf16", "fp8_e4m3") for v in ("bitadd", "formula")]


# -- NVFP4: the recipe of spec 1.6, one float32 operation at a time ---------------------------
def ref_nvfp4(x):
    f32 = np.float32
    x = x.astype(f32)
    s_enc = f32(6 * 448) / np.abs(x).max()
    s_dec = f32(1) / s_enc
    xb = x.reshape(x.shape[:-1] + (-1, 16))
    s_b = ref_quantize((np.abs(xb).max(-1, keepdims=True) / f32(6)) * s_enc, "fp8_e4m3",
                       saturate=True)
    with np.errstate(divide="ignore"):
        s_enc_b = np.where(s_b == 0, f32(0), s_enc / np.where(s_b == 0, f32(1), s_b))
    q = ref_quantize(xb * s_enc_b, "fp4_e2m1", saturate=True)
    return ((q * s_b) * s_dec).reshape(x.shape)


def _nvfp4(rng, dtype):
    x = rng.standard_normal((3, 32)) * np.exp(rng.uniform(-3, 3, (3, 1)))
    x[1, :16] = 0.0
    return [Sample((x,))]


def nvfp4_roundtrip(x, **kw):
    """``nvfp4_dequantize(nvfp4_quantize(x))``: the values NVFP4 stores for ``x``."""
    return numerics.nvfp4_dequantize(numerics.nvfp4_quantize(x, **kw))


def _one_gemm(rng, dtype):
    return [Sample(_gemm(rng, dtype)[0].args)]


ONE = (dt.float32,)  # inputs that are codes: the dtype of the matrix plays no part

register(
    _entry("exact_matmul", _one_gemm, ref=ref_exact_matmul, dtypes=(dt.float64,)),
    _entry("lmul_matmul", _lmul_mm, ref=ref_lmul_matmul),
    _entry("encode", _casts, ref=ref_encode),
    _entry("quantize", _casts, ref=ref_quantize),
    _entry("decode", _codes, ref=ref_decode, dtypes=ONE),
    _entry("mx_fake_quant", _mx, ref=ref_mx_fake_quant, aliases=(
        "numerics.mx_quantize", "numerics.mx_dequantize", "numerics.e8m0_scale_exponents")),
    _entry("pack_fp4", _nibbles, ref=ref_pack_fp4, dtypes=ONE),
    _entry("unpack_fp4", _bytes(4, 5), ref=ref_unpack_fp4, dtypes=ONE),
    _entry("pack_fp6", _sixes, ref=ref_pack_fp6, dtypes=ONE),
    _entry("unpack_fp6", _bytes(6, 6), ref=ref_unpack_fp6, dtypes=ONE),
    _entry("ozaki_gemm", _gemm, ref=ref_exact_matmul, dtypes=(dt.float64,),
           aliases=("numerics.ozaki_moduli",)),
    # a Tensor of an fp8/fp6/fp4 dtype: CuPy has none, so cast raises a clear error on CUDA
    _entry("cast", _cast_samples, ref=ref_cast, devices=("cpu",)),
    _entry("sr_cast", _sr, ref=ref_sr_cast, dtypes=ONE, devices=("cpu",)),
    _entry("lmul", _lmul, ref=ref_lmul, aliases=("numerics.lmul_offset_bits",)),
    _entry("nvfp4_dequantize", _nvfp4, ref=ref_nvfp4, op=nvfp4_roundtrip, dtypes=ONE,
           aliases=("numerics.nvfp4_quantize",)),
)

exempt("not an op: formats, threads and metrics (tests/numerics/test_formats.py, "
       "test_ozaki_lmul.py)", "numerics.get_format", "numerics.set_num_threads",
       "numerics.get_num_threads", "numerics.componentwise_error", "numerics.f32_bits")
exempt("random streams: Random123's known answers in tests/numerics/test_sr_packing.py; "
       "sr_cast's entry uses them", "numerics.philox4x32", "numerics.random_bits")
exempt("HiFloat4 is a proposal [P]: its vectors are in tests/numerics/test_blocks.py",
       "numerics.hif4_quantize", "numerics.hif4_dequantize")
exempt("L-Mul attention: a softmax between two lmul_matmuls (entries above); "
       "tests/numerics/test_ozaki_lmul.py", "numerics.lmul_attention")
exempt("precision policies: GEMMs whose operands round by the entries above "
       "(tests/numerics/test_layers.py, test_autocast_gpt.py, test_training.py)",
       "numerics.autocast", "numerics.get_policy", "numerics.matmul", "numerics.linear",
       "numerics.round_tensor", "numerics.conv1d", "numerics.conv2d", "numerics.conv3d",
       "numerics.convert_to_policy")
exempt("16-bit optimizer updates: spec 3's S1-S4 vectors in tests/numerics/test_training.py",
       "numerics.sgd_update_", "numerics.apply_update", "numerics.sgd16_update",
       "numerics.adamw16_update")
exempt("unit scaling: composites of registered ops with scales (tests/numerics/"
       "test_training.py)", "numerics.apply_constraint", "numerics.scale_fwd",
       "numerics.scale_bwd", "numerics.unit_matmul", "numerics.unit_linear", "numerics.unit_add",
       "numerics.residual_split", "numerics.residual_add", "numerics.unit_gelu",
       "numerics.unit_silu", "numerics.unit_softmax", "numerics.unit_dropout",
       "numerics.unit_cross_entropy", "numerics.unit_mse_loss")
