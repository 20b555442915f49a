"""Spec section 8: the numerics kernels on CuPy produce the same codes as on NumPy, bit for bit.
Runs only where CuPy sees a GPU (marked ``cuda``); skipped cleanly elsewhere."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import numerics as nx

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not tx.backend.cuda_available(), reason="needs CuPy and a GPU")]

FORMATS = ["bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1"]


def _points(seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(20000) * 10.0 ** rng.uniform(-12, 12, 20000)).astype(np.float32)
    return np.concatenate([x, np.float32([0, -0.0, np.inf, -np.inf, 464, 465, 61440])])


def _gpu(a):
    return tx.device("cuda").xp.asarray(a)


@pytest.mark.parametrize("fmt", FORMATS)
def test_encode_decode_parity(fmt):
    x32 = _points()
    for x in (x32, x32.astype(np.float64) * (1 + 2.0**-30)):
        for mode in ("rne", "rtz", "rna", "rup", "rdn"):
            for sat in (False, True):
                cpu = nx.encode(x, fmt, rounding=mode, saturate=sat, nan_policy="zero")
                gpu = nx.encode(_gpu(x), fmt, rounding=mode, saturate=sat, nan_policy="zero")
                assert np.array_equal(cpu, gpu.get()), (mode, sat)
        rb = nx.random_bits(1, 0, x.shape)
        cpu = nx.encode(x, fmt, rounding="sr", rbits=rb, nan_policy="zero")
        gpu = nx.encode(_gpu(x), fmt, rounding="sr", rbits=_gpu(rb), nan_policy="zero")
        assert np.array_equal(cpu, gpu.get())
    codes = np.arange(1 << nx.get_format(fmt).bits, dtype=nx.get_format(fmt).code_dtype)
    assert np.array_equal(nx.decode(codes, fmt), nx.decode(_gpu(codes), fmt).get(),
                          equal_nan=True)


def test_random_bits_parity():
    assert np.array_equal(nx.random_bits(7, 13, 1001), nx.random_bits(7, 13, 1001, "cuda").get())


@pytest.mark.parametrize("elem", list(nx.MX_ELEMENTS))
def test_mx_and_nvfp4_parity(elem):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((8, 96)) * np.exp2(rng.integers(-30, 30, (8, 1)))).astype(np.float32)
    for mode in ("floor", "rceil"):
        c = nx.mx_quantize(x, elem, scale_mode=mode)
        g = nx.mx_quantize(_gpu(x), elem, scale_mode=mode)
        assert np.array_equal(c.codes.numpy(), g.codes.numpy(force=True))
        assert np.array_equal(c.scale_codes.numpy(), g.scale_codes.numpy(force=True))
    q, qg = nx.nvfp4_quantize(x), nx.nvfp4_quantize(_gpu(x))
    assert np.array_equal(q.codes.numpy(), qg.codes.numpy(force=True))
    assert q.tensor_scale == qg.tensor_scale


def test_ozaki_parity_and_int8_products():
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((64, 128)), rng.standard_normal((128, 32))
    for scheme in ("I", "II"):
        cpu = nx.ozaki_gemm(A, B, scheme)
        gpu = nx.ozaki_gemm(_gpu(A), _gpu(B), scheme).get()
        assert np.array_equal(cpu, gpu), scheme
