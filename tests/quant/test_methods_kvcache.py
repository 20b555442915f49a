"""The block-floating-point KV cache (tensorix.quant.methods.kvcache)."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.nn import functional as F
from tensorix.numerics import mx_dequantize, mx_quantize
from tensorix.quant.methods import BFPKVCache


def _kv(seed=0, t=12, d=64):
    g = tx.Generator().manual_seed(seed)
    return tx.randn(2, 3, t, d, generator=g), tx.randn(2, 3, t, d, generator=g)


def test_stores_mx_blocks_and_decodes_them_exactly():
    k, v = _kv()
    cache = BFPKVCache("int8", 32)
    cache.append(k[:, :, :5], v[:, :, :5])
    cache.append(k[:, :, 5:], v[:, :, 5:])
    assert len(cache) == 12
    ref = mx_dequantize(mx_quantize(k, "int8", block=32, axis=-1))
    np.testing.assert_array_equal(cache.keys().numpy(), ref.numpy())  # the same codec
    # block floating point with 8-bit mantissas: error <= half a step of the block's scale
    blocks = np.abs(k.numpy()).reshape(2, 3, 12, 2, 32).max(-1, keepdims=True)
    err = np.abs(cache.keys().numpy() - k.numpy()).reshape(2, 3, 12, 2, 32)
    assert np.all(err <= 2.0 ** np.ceil(np.log2(blocks)) * 2.0 ** -7 + 1e-12)
    # 8 bits a value plus one shared 8-bit exponent per 32: 8.25 bits against float32's 32
    assert cache.nbytes == (k.numel() + v.numel()) * (1 + 1 / 32)


def test_decoding_attention_with_the_cache():
    k, v = _kv(1)
    q = tx.randn(2, 3, 12, 64, generator=tx.Generator().manual_seed(2))
    full = F.scaled_dot_product_attention(q, k, v, is_causal=True).numpy()
    errors = {}
    for elem in ("int8", "fp8_e4m3", "fp4_e2m1"):
        cache, outs = BFPKVCache(elem), []
        for t in range(12):  # token by token, as generation runs
            cache.append(k[:, :, t:t + 1], v[:, :, t:t + 1])
            outs.append(F.scaled_dot_product_attention(q[:, :, t:t + 1], cache.keys(),
                                                       cache.values()).numpy())
        errors[elem] = np.abs(np.concatenate(outs, 2) - full).mean()
    # 8-bit mantissas beat fp8's 3-bit ones, which beat fp4's single bit
    assert errors["int8"] < 1e-2 and errors["int8"] < errors["fp8_e4m3"] < errors["fp4_e2m1"]


def test_bad_input():
    with pytest.raises(ValueError, match="'elem' must be one of"):
        BFPKVCache("int5")
    cache = BFPKVCache()
    with pytest.raises(ValueError, match="the cache is empty"):
        cache.keys()
    with pytest.raises(ValueError, match="head dimension 48 of 'k' must be a multiple of"):
        cache.append(tx.randn(1, 1, 2, 48), tx.randn(1, 1, 2, 48))
    cache.append(tx.randn(1, 2, 2, 32), tx.randn(1, 2, 2, 32))
    with pytest.raises(ValueError, match="does not continue the cache"):
        cache.append(tx.randn(1, 3, 2, 32), tx.randn(1, 3, 2, 32))


# -- the integer KV store (COMET's 4-bit cache) -------------------------------------------------
def test_int_store_is_packed_and_decodes_to_fake_quantize_bits():
    from tensorix.quant import QScheme, fake_quantize
    from tensorix.quant.methods import IntKVCache, int_kv_encode

    k, v = _kv(3)
    scheme = QScheme(4, False, "per_group", group_size=64)
    block = int_kv_encode(k, 4, 64)
    assert block.codes.dtype == np.uint8 and block.codes.shape == (2, 3, 12, 32)  # 2 a byte
    np.testing.assert_array_equal(block.dequantize().numpy(), fake_quantize(k, scheme).numpy())
    cache = IntKVCache(4)
    cache.append(k[:, :, :7], v[:, :, :7])
    cache.append(k[:, :, 7:], v[:, :, 7:])
    assert len(cache) == 12 and cache.block == 64
    np.testing.assert_array_equal(cache.values().numpy(), fake_quantize(v, scheme).numpy())
    # half a byte a value, plus a float32 scale and an int8 zero point per token and head:
    # 0.5 + 5/64 bytes against float32's 4 (6.9x smaller)
    n = k.numel() + v.numel()
    assert cache.nbytes == n // 2 + (n // 64) * 5
    assert 4 * n / cache.nbytes > 6.9
    # 8-bit codes stay unpacked (int8); errors shrink with the bits
    errs = [np.abs(int_kv_encode(k, b, 64).dequantize().numpy() - k.numpy()).max()
            for b in (2, 4, 8)]
    assert int_kv_encode(k, 8, 64).codes.dtype == np.int8 and errs[0] > errs[1] > errs[2]


def test_int_store_bad_input():
    from tensorix.quant.methods import IntKVCache, int_kv_encode

    with pytest.raises(ValueError, match="'bits' must be an int in \\[2, 8\\]"):
        IntKVCache(1)
    with pytest.raises(ValueError, match="IntKVCache: the cache is empty"):
        IntKVCache().keys()
    with pytest.raises(ValueError, match="must be a multiple of group 64"):
        int_kv_encode(tx.randn(2, 48), 4, 64)
    with pytest.raises(TypeError, match="must be a float Tensor"):
        int_kv_encode(tx.ones(2, 64, dtype=tx.int8), 4, 64)
