"""Spec 3 stochastic rounding (S1, S2 and the unbiasedness property), the Philox generator
(Random123 known answers) and packed fp4/fp6 storage (R1)."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import numerics as nx

ALL_R16 = np.arange(1 << 16, dtype=np.uint32)


@pytest.mark.parametrize("ctr,key,want", [
    ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
])
def test_philox_known_answers(ctr, key, want):
    assert nx.philox4x32(np.array(ctr, np.uint32), key).tolist() == want


def test_random_bits_stream_is_sliceable_and_seeded():
    a = nx.random_bits(42, 0, 103)
    assert a.dtype == np.uint32 and a.shape == (103,)
    assert np.array_equal(nx.random_bits(42, 37, (6, 11)).ravel(), a[37:37 + 66])
    assert not np.array_equal(nx.random_bits(43, 0, 103), a)
    # roughly uniform: the mean of the top bit over 4096 words
    assert abs((nx.random_bits(1, 0, 4096) >> 31).mean() - 0.5) < 0.05
    with pytest.raises(ValueError, match="random_bits\\(\\): seed and offset must be"):
        nx.random_bits(-1, 0, 3)


def _sr_values(x, fmt, r, sr_bits):
    xs = np.repeat(np.asarray(x, np.float32)[:, None], r.size, axis=1)
    codes = nx.encode(xs, fmt, rounding="sr", rbits=r[None, :], sr_bits=sr_bits)
    return nx.decode(codes, fmt, np.float64)


def test_s1_mean_over_all_r16_is_exact():
    rng = np.random.default_rng(0)
    normal = (rng.choice([-1, 1], 40) * 10.0 ** rng.uniform(-30, 30, 40)).astype(np.float32)
    sub = np.array([1e-40, -5e-42, 2.0**-149, -2.0**-149, 3e-39, 1.2e-38, -7e-45], np.float32)
    x = np.concatenate([normal, sub, np.float32([65504.1])])
    vals = _sr_values(x, "bf16", ALL_R16, 16)
    assert np.array_equal(vals.mean(axis=1), x.astype(np.float64))


def test_s2_exact_counts():
    up = _sr_values([1 + 2.0**-10], "bf16", ALL_R16, 16)[0]
    assert np.count_nonzero(up == 1.0078125) == 8192 and np.count_nonzero(up == 1.0) == 57344
    x = np.array([0xBB23D70A], np.uint32).view(np.float32)
    v = _sr_values(x, "bf16", ALL_R16, 16)[0]
    assert np.count_nonzero(v == -0.00250244140625) == 55050
    assert np.count_nonzero(v == -0.0024871826171875) == 65536 - 55050


def test_bf16_reference_formula():
    """(bits + r16) & 0xFFFF0000 is the f32 -> bf16 SR reference of spec 3."""
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(5000) * 10.0 ** rng.uniform(-20, 20, 5000)).astype(np.float32)
    r = rng.integers(0, 1 << 16, 5000).astype(np.uint32)
    want = ((x.view(np.uint32) + r) & 0xFFFF0000) >> 16
    got = nx.encode(x, "bf16", rounding="sr", rbits=r, sr_bits=16)
    assert np.array_equal(got, want.astype(np.uint16))


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1",
                                 "fp16"])
def test_sr_is_unbiased_exhaustively_on_short_fractions(fmt):
    """E[SR(x)] = x exactly when frac(q) has <= sr_bits bits: average over all r."""
    f = nx.get_format(fmt)
    codes = np.arange(1, f.max_code, dtype=f.code_dtype)[:: max(1, f.max_code // 200)]
    lo = nx.decode(codes, f, np.float64)
    hi = nx.decode(codes + 1, f, np.float64)
    x = np.concatenate([lo + (hi - lo) * k / 16 for k in (1, 3, 8, 13)])  # 4-bit fractions
    x = np.concatenate([x, -x]).astype(np.float32)
    r = np.arange(16, dtype=np.uint32)
    vals = _sr_values(x, f, r, 4)
    assert np.array_equal(vals.mean(axis=1), x.astype(np.float64))
    # and with 32-bit Philox bits the sample mean is close
    x2 = np.full(20000, x[5], np.float32)
    c = nx.sr_cast(x2, f, seed=3)
    m = nx.decode(c, f, np.float64).mean()
    spread = hi[5 % len(hi)] - lo[5 % len(lo)]
    assert abs(m - float(x[5])) < 5 * abs(spread) / np.sqrt(x2.size) + 1e-12


def test_sr_representable_values_are_unchanged_and_overflow_follows_saturate():
    x = nx.decode(np.arange(0, 0x7F, dtype=np.uint8), "e4m3").astype(np.float32)
    r = nx.random_bits(9, 0, x.shape)
    assert np.array_equal(nx.sr_cast(x, "e4m3", r), np.arange(0, 0x7F, dtype=np.uint8))
    big = np.float32([450.0] * 64)
    c = nx.sr_cast(big, "e4m3", seed=1)
    assert set(c.tolist()) <= {0x7E, 0x7F} and 0x7F in c.tolist()
    assert set(nx.sr_cast(big, "e4m3", seed=1, saturate=True).tolist()) == {0x7E}


def test_sr_cast_tensor_and_seed_required():
    t = nx.sr_cast(tx.tensor([1 + 2.0**-10] * 8), "bf16", seed=0)
    assert t.dtype is tx.bfloat16
    assert set(t.to(tx.float32).tolist()) <= {1.0, 1.0078125}
    with pytest.raises(ValueError, match="sr_cast\\(\\): pass random bits"):
        nx.sr_cast(np.ones(3, np.float32), "bf16")


@pytest.mark.parametrize("order", ["low_first", "high_first"])
def test_fp4_pack_round_trip(order):
    rng = np.random.default_rng(0)
    c = rng.integers(0, 16, (3, 5, 34)).astype(np.uint8)
    p = nx.pack_fp4(c, order=order)
    assert p.shape == (3, 5, 17)
    assert np.array_equal(nx.unpack_fp4(p, order=order), c)
    every = np.arange(256, dtype=np.uint8)
    assert np.array_equal(nx.pack_fp4(nx.unpack_fp4(every, order=order), order=order), every)


def test_fp4_nibble_order_is_explicit():
    c = np.array([0x1, 0x2, 0xF], np.uint8)
    assert nx.pack_fp4(c, pad=True).tolist() == [0x21, 0x0F]
    assert nx.pack_fp4(c, pad=True, order="high_first").tolist() == [0x12, 0xF0]
    assert nx.unpack_fp4(np.array([0x21, 0x0F], np.uint8), n=3).tolist() == [1, 2, 15]
    codes = nx.encode(np.float32([0.5, 6.0]), "e2m1")  # 0x1, 0x7
    assert nx.pack_fp4(codes).tolist() == [0x71]


def test_fp6_pack_round_trip_and_layout():
    rng = np.random.default_rng(1)
    c = rng.integers(0, 64, (4, 40)).astype(np.uint8)
    p = nx.pack_fp6(c)
    assert p.shape == (4, 30)
    assert np.array_equal(nx.unpack_fp6(p), c)
    one = nx.pack_fp6(np.array([0x3F, 0, 0, 0], np.uint8)).tolist()
    assert one == [0x3F, 0, 0]
    assert nx.pack_fp6(np.array([0, 0, 0, 0x3F], np.uint8)).tolist() == [0, 0, 0xFC]
    assert np.array_equal(nx.unpack_fp6(nx.pack_fp6(c[:, :7], pad=True), n=7), c[:, :7])


def test_packing_tensor_in_tensor_out_and_errors():
    t = tx.tensor(np.array([1, 2, 3, 4], np.uint8))
    p = nx.pack_fp4(t)
    assert isinstance(p, tx.Tensor) and p.dtype is tx.uint8 and p.tolist() == [0x21, 0x43]
    with pytest.raises(ValueError, match="pack_fp4\\(\\): codes must fit in 4 bits"):
        nx.pack_fp4(np.array([16, 0], np.uint8))
    with pytest.raises(ValueError, match="must be a multiple of 2; pass pad=True"):
        nx.pack_fp4(np.array([1, 2, 3], np.uint8))
    with pytest.raises(ValueError, match="pack_fp6\\(\\): the last dimension \\(5\\) must be"):
        nx.pack_fp6(np.zeros(5, np.uint8))
    with pytest.raises(ValueError, match="argument 'order' must be"):
        nx.pack_fp4(np.zeros(2, np.uint8), order="big")
    with pytest.raises(TypeError, match="codes must be an unsigned integer array"):
        nx.pack_fp4(np.zeros(2, np.float32))


@pytest.mark.parametrize("sr_bits", [16, 20, 32])
def test_bf16_sr_fast_path_equals_integer_algorithm(sr_bits):
    from tensorix import _codec

    rng = np.random.default_rng(8)
    x = (rng.standard_normal(3000) * 10.0 ** rng.uniform(-40, 37.5, 3000)).astype(np.float32)
    x = np.concatenate([x, np.float32([np.inf, -np.inf, np.nan, -np.nan, 3.3e38, -3.39e38])])
    r = nx.random_bits(4, 0, x.shape)
    for sat in (False, True):
        fast = nx.encode(x, "bf16", rounding="sr", rbits=r, sr_bits=sr_bits, saturate=sat)
        code, is_nan, neg = _codec.encode_bits(nx.f32_bits(x), nx.FORMATS["bf16"], "sr", sat,
                                               r, sr_bits)
        slow = _codec.finish(code, is_nan, neg, nx.FORMATS["bf16"])
        assert np.array_equal(fast, slow)
