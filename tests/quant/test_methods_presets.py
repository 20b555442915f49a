"""The serving presets as flows (COMET W4A4 + KV4, OdysseyLLM W4A8, FlexQ W6A6 / W6A8) on a
small GPT: each layer's schemes, the integer kernel at inference, the 4-bit keys and values,
the error ordering by bits, and bad input."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.demo import CharGPT
from tensorix.quant.methods import PRESETS, ActQuantLinear, kv_quant_, quantize_preset_


def _gpt():
    tx.manual_seed(0)
    return CharGPT(40, 16, d_model=64, n_heads=2, n_layers=1)


def _ids(rng):
    return tx.tensor(rng.integers(0, 40, (3, 16)))


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_flow(name, rng, monkeypatch):
    from tensorix.quant import gemm

    model, ids = _gpt(), _ids(rng)
    with tx.no_grad():
        ref = model(ids).numpy()
    layers = quantize_preset_(model, name, skip=("head",), head_dim=32)
    p = PRESETS[name]
    assert set(layers) == {"blocks.0.attn.qkv", "blocks.0.attn.proj", "blocks.0.mlp.0",
                           "blocks.0.mlp.2"}
    for layer in layers.values():
        assert isinstance(layer, ActQuantLinear)
        assert layer.weight_scheme.bits == p.weight.bits and layer.act_scheme.bits == p.act.bits
    calls = []
    real = gemm.int_linear
    monkeypatch.setattr(gemm, "int_linear", lambda *a, **k: calls.append(1) or real(*a, **k))
    with tx.no_grad():
        out = model(ids).numpy()
    assert len(calls) == 4  # every quantized layer ran the integer kernel
    err = np.abs(out - ref).max() / np.abs(ref).max()
    assert 0 < err < 0.5


def test_error_falls_with_bits(rng):
    errs = {}
    for name in ("comet-w4a4kv4", "odyssey-w4a8", "flexq-w6a6", "flexq-w6a8"):
        model, ids = _gpt(), _ids(rng)
        with tx.no_grad():
            ref = model(ids).numpy()
            quantize_preset_(model, name, skip=("head",), head_dim=32)
            errs[name] = np.abs(model(ids).numpy() - ref).mean()
    assert errs["comet-w4a4kv4"] > errs["flexq-w6a6"] > errs["flexq-w6a8"]
    assert errs["comet-w4a4kv4"] > errs["odyssey-w4a8"]


def test_kv_cache_values_lie_on_the_4bit_grid(rng):
    model = _gpt()
    kv_quant_(model, 4, head_dim=32)
    seen = {}
    model.blocks[0].attn.qkv.register_forward_hook(
        lambda m, a, out: seen.update(out=out.detach().numpy()))  # returns None: a reader
    with tx.no_grad():
        model(_ids(rng))
    out = seen["out"].reshape(-1, 3, 2, 32)  # (tokens, q/k/v, heads, head_dim)
    for part in (1, 2):  # keys and values: at most 16 levels per token and head
        levels = [len(np.unique(out[t, part, h])) for t in range(out.shape[0]) for h in range(2)]
        assert max(levels) <= 16
    assert max(len(np.unique(out[t, 0, 0])) for t in range(out.shape[0])) > 16  # q in float


def test_preset_bad_input():
    with pytest.raises(ValueError, match="unknown preset 'w3a3'"):
        quantize_preset_(_gpt(), "w3a3")
    with pytest.raises(ValueError, match="needs head_dim"):
        quantize_preset_(_gpt(), "comet-w4a4kv4")
    with pytest.raises(ValueError, match="must be a linear layer with 3 \\* heads \\* 48"):
        kv_quant_(_gpt(), 4, head_dim=48)
    with pytest.raises(ValueError, match="no fused 'qkv' layer"):
        kv_quant_(tx.nn.Sequential(tx.nn.Linear(4, 4)), 4, head_dim=4)


def test_comet_kv_reads_through_the_packed_int4_store(rng):
    # the preset's keys and values go through the integer store (packed two codes a byte):
    # the model's output equals the fake-quantized KV model's to the bit, and the store is
    # 6.9x smaller than the float32 keys and values it replaces (head_dim 32: 0.5 + 5/32 B)
    from tensorix.quant import QScheme, fake_quantize

    ids = _ids(rng)
    model, ref = _gpt(), _gpt()
    handles = kv_quant_(model, 4, head_dim=32)
    scheme = QScheme(4, False, "per_group", group_size=32)

    def fake(m, a, out):
        d = out.shape[-1] // 3
        return tx.cat([out[..., :d], fake_quantize(out[..., d:], scheme)], -1)

    ref.blocks[0].attn.qkv.register_forward_hook(fake)
    with tx.no_grad():
        np.testing.assert_array_equal(model(ids).numpy(), ref(ids).numpy())
    hook = model.blocks[0].attn.qkv._forward_hooks[handles["blocks.0.attn.qkv"].id]
    assert hook.float_nbytes / hook.nbytes == pytest.approx(4 / (0.5 + 5 / 32))


def test_preset_with_calibration_runs_gptq_weights(rng):
    # with calibration the weights are GPTQ's (the same as gptq_ on the preset's weight scheme,
    # layer after layer), the layers keep GPTQ's grid, the integer kernel takes GPTQ's codes,
    # and on the calibration data the output is closer to float than round-to-nearest's
    from tensorix.quant import quantize
    from tensorix.quant.methods import gptq_

    calib = [tx.tensor(rng.integers(0, 40, (4, 16))) for _ in range(4)]
    ids = tx.cat(calib, 0)
    model, ref_model, rtn = _gpt(), _gpt(), _gpt()
    with tx.no_grad():
        ref = model(ids).numpy()
    layers = quantize_preset_(model, "odyssey-w4a8", skip=("head",), calibration=calib)
    gptq_(ref_model, calib, PRESETS["odyssey-w4a8"].weight, skip=("head",), pack=False)
    quantize_preset_(rtn, "odyssey-w4a8", skip=("head",))
    ref_mods = dict(ref_model.named_modules())
    for name, layer in layers.items():
        np.testing.assert_allclose(layer.weight.numpy(), ref_mods[name].weight.detach().numpy(),
                                   rtol=1e-6, atol=1e-7)
        s, z = layer.weight_scale, layer.weight_zero_point
        iw = layer._int_weight()
        np.testing.assert_array_equal(iw.codes, quantize(layer.weight, s, z,
                                                         layer.weight_scheme).numpy())
        np.testing.assert_array_equal(iw.scale, s.numpy().astype(np.float32))
    with tx.no_grad():
        err_gptq = np.abs(model(ids).numpy() - ref).mean()
        err_rtn = np.abs(rtn(ids).numpy() - ref).mean()
    assert err_gptq < err_rtn


def test_comet_preset_with_calibration(rng):
    # grouped W4A4 (groups fitted per layer: 64 for the 64-wide inputs) on GPTQ's group grid,
    # through the integer kernel, state_dict keeping the grid
    calib = [tx.tensor(rng.integers(0, 40, (4, 16))) for _ in range(2)]
    model = _gpt()
    layers = quantize_preset_(model, "comet-w4a4kv4", skip=("head",), head_dim=32,
                              calibration=calib)
    for layer in layers.values():
        k = layer.in_features
        assert tuple(layer.weight_scale.shape) == (layer.out_features, k // min(128, k), 1)
    assert "blocks.0.mlp.2.weight_scale" in model.state_dict()
    with tx.no_grad():
        out = model(calib[0]).numpy()
    assert np.isfinite(out).all()
    with pytest.raises(ValueError, match="calibration data is empty"):
        quantize_preset_(_gpt(), "odyssey-w4a8", skip=("head",), calibration=[])
