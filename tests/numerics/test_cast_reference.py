"""Every cast against independent references, over all codes of every format.

* ``ref_decode``: the value of one code straight from the definition of spec 1.1, in pure
  Python; compared with ``decode`` and with ml_dtypes for all 2^bits codes.
* ``RefEncoder``: rounding by *search* in the sorted table of representable values (no bit
  tricks): the neighbours below/above |x|, the tie broken by the parity of the magnitude code,
  the overflow neighbour ``max + ulp`` carrying the parity of ``max_code + 1``. Inputs are
  every rounding boundary (midpoints, and midpoints +-1 float32 ulp / +-2^-30 relative for the
  float64 path), every representable value, overflow points and random values of both signs,
  under every deterministic rounding mode with and without saturation. The table fast path and
  the integer algorithm are both compared.
"""

import math

import numpy as np
import pytest

import tensorix as tx
from tensorix import _codec
from tensorix import numerics as nx

ELEMENT = ["bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1"]
MODES = ["rne", "rna", "rtz", "rup", "rdn"]


def ref_decode(code, ebits, mbits, bias, kind):
    """Spec 1.1, one code at a time."""
    if kind == "e8m0":
        return math.nan if code == 0xFF else math.ldexp(1.0, code - bias)
    sign = -1.0 if code >> (ebits + mbits) & 1 else 1.0
    e = code >> mbits & ((1 << ebits) - 1)
    m = code & ((1 << mbits) - 1)
    top = (1 << ebits) - 1
    if kind == "ieee" and e == top:
        return sign * math.inf if m == 0 else math.nan
    if kind == "fn" and e == top and m == (1 << mbits) - 1:
        return math.nan
    if e == 0:
        return sign * math.ldexp(m, 1 - bias - mbits)
    return sign * math.ldexp((1 << mbits) + m, e - bias - mbits)


@pytest.mark.parametrize("name", ELEMENT + ["e8m0"])
def test_decode_all_codes_against_reference_and_ml_dtypes(name):
    f = nx.FORMATS[name]
    codes = np.arange(1 << f.bits, dtype=f.code_dtype)
    want = np.array([ref_decode(int(c), f.ebits, f.mbits, f.bias, f.kind) for c in codes])
    got = nx.decode(codes, f, np.float64)
    np.testing.assert_array_equal(got, want)  # NaN positions must agree too
    with np.errstate(invalid="ignore"):
        ml = codes.view(f.tx_dtype.np).astype(np.float64)
    np.testing.assert_array_equal(ml, want)
    assert np.array_equal(nx.decode(codes, f), want.astype(np.float32), equal_nan=True)


class RefEncoder:
    def __init__(self, f):
        self.f = f
        mags = np.arange(f.max_code + 1)
        vals = np.array([ref_decode(int(c), f.ebits, f.mbits, f.bias, f.kind) for c in mags])
        ulp = math.ldexp(1.0, f.emax - f.mbits)
        self.vals = np.append(vals, f.max + ulp)  # the overflow neighbour, code max_code + 1
        self.codes = np.append(mags, f.max_code + 1)
        assert np.all(np.diff(self.vals) > 0)

    def __call__(self, x, mode, saturate):
        f = self.f
        ax = np.abs(x)
        neg = np.signbit(x)
        hi = np.minimum(np.searchsorted(self.vals, ax, side="left"), len(self.vals) - 1)
        lo = np.where(self.vals[hi] == ax, hi, hi - 1)
        exact = self.vals[hi] == ax
        beyond = ax > self.vals[-1]
        lo = np.clip(lo, 0, None)
        vlo, vhi = self.vals[lo], self.vals[hi]
        mid = (vlo + vhi) / 2  # exact: the formats have <= 11 significant bits
        if mode == "rne":
            even_lo = self.codes[lo] % 2 == 0
            up = (ax > mid) | ((ax == mid) & ~even_lo)
        elif mode == "rna":
            up = ax >= mid
        elif mode == "rtz":
            up = np.zeros_like(ax, dtype=bool)
        elif mode == "rup":
            up = ~neg
        else:
            up = neg
        pick = np.where(exact, hi, np.where(up, hi, lo))
        code = self.codes[pick]
        over = (code > f.max_code) | beyond
        if f.kind == "finite" or saturate:
            ovf = f.max_code
        else:
            ovf = f.inf_code if f.kind == "ieee" else f.nan_code
        code = np.where(over | np.isinf(x), ovf, code)
        return (code | (neg.astype(np.int64) << (f.bits - 1))).astype(np.int64)


def boundary_points(f, rng, n_random=4000):
    enc = RefEncoder(f)
    v = enc.vals
    mids = (v[:-1] + v[1:]) / 2
    m32 = mids.astype(np.float32)
    assert np.array_equal(m32.astype(np.float64), mids)
    pts32 = [v[:-1].astype(np.float32), m32, np.nextafter(m32, np.float32(np.inf)),
             np.nextafter(m32, np.float32(0)),
             np.float32([min(f.max * 4, 3e38), 3e38, np.inf])]
    logs = rng.uniform(math.log2(f.min_subnormal) - 3, min(f.emax + 2, 127.9), n_random)
    pts32.append(np.exp2(logs).astype(np.float32))
    x32 = np.concatenate(pts32)
    x32 = np.concatenate([x32, -x32])
    rel = np.concatenate([mids * (1 + 2.0**-30), mids * (1 - 2.0**-30), np.exp2(logs)])
    x64 = np.concatenate([rel, -rel, [1e300, -1e300, 5e-324]])
    return enc, x32, x64


@pytest.mark.parametrize("name", ELEMENT)
def test_encode_matches_reference_at_every_boundary(name):
    f = nx.FORMATS[name]
    rng = np.random.default_rng(7)
    enc, x32, x64 = boundary_points(f, rng)
    for mode in MODES:
        for sat in (False, True):
            for x in (x32, x64):
                want = enc(x.astype(np.float64), mode, sat)
                got = nx.encode(x, f, rounding=mode, saturate=sat).astype(np.int64)
                bad = np.flatnonzero(got != want)
                assert bad.size == 0, (mode, sat, x.dtype, x[bad[:5]], got[bad[:5]],
                                       want[bad[:5]])


@pytest.mark.parametrize("name", ELEMENT)
def test_integer_algorithm_equals_fast_paths(name):
    """The table / ml_dtypes fast paths and the integer algorithm are one function."""
    f = nx.FORMATS[name]
    _, x32, x64 = boundary_points(f, np.random.default_rng(3), 500)
    for x in (x32, x64):
        bits = nx.f32_bits(x)
        for mode in MODES:
            for sat in (False, True):
                code, is_nan, neg = _codec.encode_bits(bits, f, mode, sat)
                slow = _codec.finish(code, is_nan, neg, f)
                fast = nx.encode(x, f, rounding=mode, saturate=sat)
                assert np.array_equal(slow, fast), (mode, sat)


@pytest.mark.parametrize("name", ELEMENT)
def test_round_trip_every_code(name):
    f = nx.FORMATS[name]
    codes = np.arange(1 << f.bits, dtype=f.code_dtype)
    vals = nx.decode(codes, f, np.float64)
    ok = ~np.isnan(vals)
    for mode in MODES:
        back = nx.encode(vals[ok], f, rounding=mode)
        assert np.array_equal(back, codes[ok]), mode


@pytest.mark.parametrize("name", ["fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1",
                                  "bf16", "fp16"])
def test_rne_agrees_with_ml_dtypes_on_float32(name):
    """Spec 1.3: ml_dtypes' float32 -> format casts are correct (finite results)."""
    f = nx.FORMATS[name]
    _, x32, _ = boundary_points(f, np.random.default_rng(11), 2000)
    x32 = x32[np.abs(x32) <= f.max]
    ours = nx.encode(x32, f)
    theirs = x32.astype(f.tx_dtype.np).view(np.uint8 if f.bits <= 8 else np.uint16)
    assert np.array_equal(ours, theirs)


def test_e8m0_against_reference_all_modes():
    f = nx.FORMATS["e8m0"]
    k = np.arange(-127, 128)
    base = np.ldexp(1.0, k)
    x = np.concatenate([base, base * 1.5, base * 1.25, base * 1.75, base * (1.5 - 2.0**-20)])
    x = x[(x > 2.0**-127) & (x < 1.5 * 2.0**127)]
    e = np.floor(np.log2(x)).astype(np.int64)  # exact here: no value sits near a power of 2
    frac = x / np.ldexp(1.0, e) - 1
    want = {"rne": e + 127 + (frac >= 0.5), "rna": e + 127 + (frac >= 0.5),
            "rtz": e + 127, "rdn": e + 127, "rup": e + 127 + (frac > 0)}
    for mode, w in want.items():
        got = nx.encode(x, f, rounding=mode).astype(np.int64)
        assert np.array_equal(got, w), mode
        got32 = nx.encode(x.astype(np.float32), f, rounding=mode).astype(np.int64)
        assert np.array_equal(got32, w), mode


def test_bf16_float64_round_to_odd_many_points():
    """1.2: the float64 path has 0 mismatches against exact rounding at bf16 boundaries."""
    rng = np.random.default_rng(5)
    codes = rng.integers(0x0001, 0x7F7F, 20000).astype(np.uint16)
    v = nx.decode(codes, "bf16", np.float64)
    nxt = nx.decode(codes + 1, "bf16", np.float64)
    mids = (v + nxt) / 2
    eps = np.ldexp(1.0, np.frexp(mids)[1] - 45)
    x = np.concatenate([mids + eps, mids - eps])
    want = np.concatenate([codes + 1, codes])
    assert np.array_equal(nx.encode(x, "bf16"), want)
    # Tensor.to and tensor(..., dtype=) round the same way, whatever ml_dtypes does with float64
    assert np.array_equal(tx.tensor(x).to(tx.bfloat16).numpy().view(np.uint16), want)
    assert np.array_equal(tx.tensor(x, dtype=tx.bfloat16).numpy().view(np.uint16), want)
