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
