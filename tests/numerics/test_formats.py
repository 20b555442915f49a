"""Spec section 1: the format table, conversion test vectors T1.1-T1.7 and the ml_dtypes
quirks Q1-Q4 that our casts must not inherit."""

import ml_dtypes
import numpy as np
import pytest

import tensorix as tx
from tensorix import numerics as nx

F32 = np.float32


def enc(x, fmt, dtype=np.float32, **kw):
    return nx.encode(np.asarray(x, dtype=dtype), fmt, **kw).tolist()


def bits32(*hexes):
    return np.array(hexes, dtype=np.uint32).view(np.float32)


@pytest.mark.parametrize("name,ebits,mbits,bias,max_,max_code,min_normal,min_sub,one", [
    ("bf16", 8, 7, 127, 3.3895313892515355e38, 0x7F7F, 2.0**-126, 2.0**-133, 0x3F80),
    ("fp16", 5, 10, 15, 65504.0, 0x7BFF, 2.0**-14, 2.0**-24, 0x3C00),
    ("fp8_e4m3", 4, 3, 7, 448.0, 0x7E, 2.0**-6, 2.0**-9, 0x38),
    ("fp8_e5m2", 5, 2, 15, 57344.0, 0x7B, 2.0**-14, 2.0**-16, 0x3C),
    ("fp6_e3m2", 3, 2, 3, 28.0, 0x1F, 0.25, 0.0625, 0xC),
    ("fp6_e2m3", 2, 3, 1, 7.5, 0x1F, 1.0, 0.125, 0x8),
    ("fp4_e2m1", 2, 1, 1, 6.0, 0x7, 1.0, 0.5, 0x2),
])
def test_format_table(name, ebits, mbits, bias, max_, max_code, min_normal, min_sub, one):
    f = nx.FORMATS[name]
    assert (f.ebits, f.mbits, f.bias) == (ebits, mbits, bias)
    assert f.max == max_ and f.max_code == max_code
    assert f.min_normal == min_normal and f.min_subnormal == min_sub
    assert int(nx.encode(np.float32(1.0), f)) == one
    info = ml_dtypes.finfo(f.tx_dtype.np)
    assert float(info.max) == f.max and float(info.smallest_subnormal) == f.min_subnormal


def test_e8m0_table_and_t17():
    f = nx.FORMATS["e8m0"]
    assert not f.signed and f.bits == 8 and f.max_code == 0xFE and f.nan_code == 0xFF
    vals = nx.decode(np.array([0x00, 0x7F, 0xFE, 0xFF], np.uint8), "e8m0", np.float64)
    assert vals[:3].tolist() == [5.877471754111438e-39, 1.0, 1.7014118346046923e38]
    assert np.isnan(vals[3])
    assert int(nx.encode(np.float32(1.0), f)) == 0x7F


def test_value_sets():
    def nonneg(name, n):
        return nx.decode(np.arange(n, dtype=np.uint8), name).tolist()

    assert nonneg("fp4_e2m1", 8) == [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    e2m3 = nonneg("fp6_e2m3", 32)
    assert e2m3[:8] == [i / 8 for i in range(8)] and e2m3[-8:] == [4 + i / 2 for i in range(8)]
    e3m2 = nonneg("fp6_e3m2", 32)
    assert e3m2[:4] == [0, .0625, .125, .1875] and e3m2[-4:] == [16, 20, 24, 28]


def test_aliases_resolve():
    assert nx.get_format("e4m3") is nx.get_format(tx.float8_e4m3fn) is nx.FORMATS["fp8_e4m3"]
    assert nx.get_format("float4_e2m1fn") is nx.FORMATS["fp4_e2m1"]
    assert nx.get_format("e4m4").mbits == 4
    with pytest.raises(ValueError, match="get_format: unknown format 'fp7'"):
        nx.get_format("fp7")


def test_formats_are_declared_once_on_the_dtypes():
    from tensorix import _codec, formats

    lowp = [d for d in tx.dtypes.ALL if d.format is not None]
    assert sorted(f.name for f in nx.FORMATS.values()) == sorted(d.format.name for d in lowp)
    for d in lowp:  # one object: the dtype's declaration is the format everything uses
        f = d.format
        assert nx.FORMATS[f.name] is f and f.tx_dtype is d and nx.get_format(d) is f
        assert nx.get_format(d.name) is f and nx.get_format(f"e{f.ebits}m{f.mbits}") is f
        assert _codec.format_of(d) is (f if d.low_precision else None)
    assert not hasattr(formats, "_ALIASES")
    assert tx.float8_e4m3fn.format.max == 448.0 and not tx.float6_e2m3fn.format.has_nan
    assert tx.float32.format is None and nx.get_format("half") is tx.float16.format


def test_t11_e4m3():
    assert enc([448, 464], "e4m3") == [0x7E, 0x7E]
    assert enc([464], "e4m3", saturate=True) == [0x7E]
    assert enc([464.01, 465, 480, np.inf], "e4m3") == [0x7F] * 4
    assert enc([464.01, 465, 480, np.inf], "e4m3", saturate=True) == [0x7E] * 4
    assert enc([-0.0], "e4m3") == [0x80]
    assert enc([17, 19, 1.0625, 1.1875], "e4m3") == [0x58, 0x5A, 0x38, 0x3A]
    assert enc([2.0**-10, 0.00097657, 0.013671875, 0.0146484375], "e4m3") == [0, 1, 7, 8]


def test_t12_e5m2():
    assert enc([61439, 61440], "e5m2") == [0x7B, 0x7C]
    assert enc([61440], "e5m2", saturate=True) == [0x7B]
    assert enc([1.125, 1.375, 2.0**-17, 7.7e-6], "e5m2") == [0x3C, 0x3E, 0, 1]


def test_t13_bf16_from_f32_bits():
    x = bits32(0x3F808000, 0x3F818000, 0x7F7F8000, 0x7F7F7FFF, 0x00008000, 0x00018000,
               0x80000001)
    assert enc(x, "bf16") == [0x3F80, 0x3F82, 0x7F80, 0x7F7F, 0, 2, 0x8000]


def test_t14_fp16_from_f32():
    assert enc([65519.99, 65520, 2.0**-25, 2.0**-25 * 1.0001, 1.5 * 2.0**-24], "fp16") == \
        [0x7BFF, 0x7C00, 0, 1, 2]


def test_t15_fp4_fp6():
    x = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, -5, 7, np.inf]
    got = nx.decode(nx.encode(np.array(x, F32), "e2m1"), "e2m1").tolist()
    assert got == [0, 1, 1, 2, 2, 4, 4, -4, 6, 6]
    assert enc([0.75, 1.75, 3.5, -5, 7], "e2m1") == [0x2, 0x4, 0x6, 0xE, 0x7]
    assert enc([0.0625, 0.1875, 7.25, 7.75, 8], "e2m3") == [0, 0x2, 0x1E, 0x1F, 0x1F]
    assert enc([0.03125, 0.09375, 26, 30, 32], "e3m2") == [0, 0x2, 0x1E, 0x1F, 0x1F]


def test_t16_float64_single_rounding():
    assert enc([1 + 2.0**-8 + 2.0**-30], "bf16", np.float64) == [0x3F81]
    assert enc([1 + 2.0**-4 + 2.0**-30], "e4m3", np.float64) == [0x39]
    assert enc([1 + 2.0**-2 + 2.0**-40], "e2m1", np.float64) == [0x3]
    # numpy's own float64 -> float16 is single-rounded; ours agrees
    assert enc([1 + 2.0**-11 + 2.0**-30], "fp16", np.float64) == [0x3C01]


def test_q1_float64_rounds_once_in_every_cast():
    """Q1: ml_dtypes 0.5/0.6 round float64 through float32 (0.7 does not); every tensorix cast
    rounds once, whichever is installed."""
    x = np.array([1 + 2.0**-8 + 2.0**-30])
    assert enc(x, "bf16", np.float64) == [0x3F81]
    t = nx.cast(tx.tensor(x), "bf16")
    assert t.dtype is tx.bfloat16 and t.numpy().view(np.uint16)[0] == 0x3F81
    assert tx.tensor(x).to(tx.bfloat16).numpy().view(np.uint16)[0] == 0x3F81
    y = np.array([1.0625 + 2.0**-40, 1 + 2.0**-4 + 2.0**-30])  # both round up to 1.125 (0x39)
    assert enc(y, "e4m3", np.float64) == [0x39, 0x39]
    for t in (tx.tensor(y).to(tx.float8_e4m3fn), tx.tensor(y, dtype=tx.float8_e4m3fn),
              tx.full((2,), float(y[0]), dtype=tx.float8_e4m3fn)):
        assert t.numpy().view(np.uint8).tolist() == [0x39, 0x39]


def test_q2_saturation_is_ours():
    x = np.array([465, 1e9, np.inf, -np.inf], F32)
    assert enc(x, "e4m3", saturate=True) == [0x7E, 0x7E, 0x7E, 0xFE]
    assert enc(x, "e5m2", saturate=True) == [0x5F, 0x7B, 0x7B, 0xFB]
    assert enc(x, "e5m2") == [0x5F, 0x7C, 0x7C, 0xFC]
    finite = x[:2].astype(ml_dtypes.bfloat16).view(np.uint16).tolist()
    assert enc(x, "bf16", saturate=True) == finite + [0x7F7F, 0xFF7F]


def test_q3_nan_into_fp6_fp4_raises_or_zero():
    for fmt in ("e2m1", "e2m3", "e3m2"):
        with pytest.raises(ValueError, match=r"encode\(\): NaN has no encoding in fp"):
            nx.encode(np.array([1.0, np.nan], F32), fmt)
        assert enc([np.nan, -np.nan, np.inf, -np.inf], fmt, nan_policy="zero") == \
            [0, 0, nx.get_format(fmt).max_code, nx.get_format(fmt).max_code | 1 << (
                nx.get_format(fmt).bits - 1)]


def test_nan_keeps_sign():
    assert enc([np.nan, -np.nan], "e4m3") == [0x7F, 0xFF]
    assert enc([np.nan, -np.nan], "bf16") == [0x7FC0, 0xFFC0]
    got = enc([np.nan, -np.nan], "e5m2")
    assert got[0] & 0x80 == 0 and got[1] & 0x80 and all(c & 0x7F > 0x7C for c in got)
    assert enc([np.nan], "e5m2", np.float64) == [0x7E]


def test_q4_e8m0_rounds_by_rule_not_astype():
    assert enc([1.5, 3, 6, 0.75, 1.4999999], "e8m0") == [0x80, 0x81, 0x82, 0x7F, 0x7F]
    # clarification 8b: (2^-128, 2^-127) -> 0x00; from 1.5*2^-127 -> 0x01; overflow -> NaN/max
    sub = np.array([0x00400001, 0x00500000, 0x00600000], np.uint32).view(F32)
    assert enc(sub, "e8m0") == [0x00, 0x00, 0x01]
    assert enc([1.5 * 2.0**127, np.inf], "e8m0", np.float64) == [0xFF, 0xFF]
    assert enc([1.5 * 2.0**127, np.inf], "e8m0", np.float64, saturate=True) == [0xFE, 0xFE]
    assert enc([np.nan], "e8m0") == [0xFF]
    for bad in (0.0, -1.0, 2.0**-128, 1e-300):
        with pytest.raises(ValueError, match=r"encode\(\): e8m0 has no code"):
            nx.encode(np.array([bad]), "e8m0")


def test_directed_modes_small_table():
    x = np.array([1.0625, -1.0625, 1.1875, -1.1875, 1.25, 1.001], F32)
    assert enc(x, "e4m3", rounding="rtz") == [0x38, 0xB8, 0x39, 0xB9, 0x3A, 0x38]
    assert enc(x, "e4m3", rounding="rna") == [0x39, 0xB9, 0x3A, 0xBA, 0x3A, 0x38]
    assert enc(x, "e4m3", rounding="rup") == [0x39, 0xB8, 0x3A, 0xB9, 0x3A, 0x39]
    assert enc(x, "e4m3", rounding="rdn") == [0x38, 0xB9, 0x39, 0xBA, 0x3A, 0x38]


def test_argument_errors():
    with pytest.raises(ValueError, match="encode\\(\\): argument 'rounding' must be one of"):
        nx.encode(np.ones(2, F32), "e4m3", rounding="nearest")
    with pytest.raises(ValueError, match="argument 'nan_policy' must be"):
        nx.encode(np.ones(2, F32), "e4m3", nan_policy="ignore")
    with pytest.raises(ValueError, match="rounding='sr' needs explicit random bits"):
        nx.encode(np.ones(2, F32), "e4m3", rounding="sr")
    with pytest.raises(ValueError, match="does not broadcast"):
        nx.encode(np.ones(2, F32), "e4m3", rounding="sr", rbits=np.zeros(3, np.uint32))
    with pytest.raises(TypeError, match="argument 'rbits' must be an unsigned integer"):
        nx.encode(np.ones(2, F32), "e4m3", rounding="sr", rbits=np.zeros(2, F32))
    with pytest.raises(TypeError, match="complex input is not supported"):
        nx.encode(np.ones(2, np.complex64), "e4m3")
    with pytest.raises(ValueError, match="decode\\(\\): codes out of range for 4-bit"):
        nx.decode(np.array([0x10], np.uint8), "e2m1")
    with pytest.raises(TypeError, match="decode\\(\\): argument 'out_dtype' must be"):
        nx.decode(np.array([1], np.uint8), "e2m1", np.float16)
    with pytest.raises(TypeError, match="cast\\(\\): argument 'x' must be a Tensor"):
        nx.cast(np.ones(2), "e4m3")


def test_tensor_cast_and_quantize():
    x = tx.tensor([0.3, 5.0, -7.0], requires_grad=True)
    q = nx.quantize(x, "e2m1")
    assert q.dtype is tx.float32 and q.tolist() == [0.5, 4.0, -6.0]
    q.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]  # straight-through
    c = nx.cast(tx.tensor([480.0, 17.0]), "fp8_e4m3", saturate=True)
    assert c.dtype is tx.float8_e4m3fn and c.to(tx.float32).tolist() == [448.0, 16.0]
    assert nx.cast(tx.tensor([3, 5]), "e2m1").dtype is tx.float4_e2m1fn
    q64 = nx.quantize(tx.tensor([1 + 2.0**-4 + 2.0**-30], dtype=tx.float64), "e4m3")
    assert q64.dtype is tx.float64 and q64.item() == 1.125
