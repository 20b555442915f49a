"""LoRA, TeRA and TLoRA adapters: values against NumPy/torch, zero update at the start,
float64 gradchecks of the trainable parts, merge/unmerge, model-wide wrapping."""

import copy

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn, optim
from tensorix.decomp.layers import (
    LoRALinear,
    TeRALinear,
    TLoRALinear,
    apply_lora,
    merge_and_unload,
)
from tensorix.testing import assert_close

from ._helpers import assert_same_on_device, module_gradcheck

ADAPTERS = [(LoRALinear, dict(r=3, lora_alpha=6)), (TeRALinear, dict(r=2, d=2)),
            (TLoRALinear, dict(r=2, d=2))]
IDS = ["lora", "tera", "tlora"]


def _np(t):
    return t.detach().cpu().numpy()


def _perturb(adapter, rng):
    """Non-zero trainable parameters, as after some training."""
    with tx.no_grad():
        for p in adapter.parameters():
            if p.requires_grad:
                p.copy_(tx.tensor(rng.standard_normal(tuple(p.shape)), dtype=p.dtype))


@pytest.mark.parametrize("cls,kw", ADAPTERS, ids=IDS)
def test_adapters_start_as_the_base_layer_and_freeze_it(cls, kw):
    base = nn.Linear(12, 8)
    adapter = cls(copy.deepcopy(base), **kw)
    x = tx.randn(4, 12)
    assert_close(adapter(x), _np(base(x)))
    assert not adapter.base_layer.weight.requires_grad and not adapter.base_layer.bias.requires_grad
    trainable = [p for p in adapter.parameters() if p.requires_grad]
    assert trainable and all(not n.startswith("base_layer") for n, p in
                             adapter.named_parameters() if p.requires_grad)


def test_lora_matches_a_torch_lora_forward_and_backward(rng):
    torch = pytest.importorskip("torch")
    adapter = LoRALinear(nn.Linear(10, 7).double(), r=3, lora_alpha=6)
    _perturb(adapter, rng)
    w0, b0 = (torch.tensor(_np(t)) for t in (adapter.base_layer.weight, adapter.base_layer.bias))
    a = torch.tensor(_np(adapter.lora_A.weight), requires_grad=True)
    b = torch.tensor(_np(adapter.lora_B.weight), requires_grad=True)
    x = rng.standard_normal((5, 10))
    ref = torch.tensor(x) @ w0.T + b0 + 2.0 * (torch.tensor(x) @ a.T @ b.T)
    ref.pow(2).sum().backward()
    out = adapter(tx.tensor(x))
    out.pow(2).sum().backward()
    assert_close(out, ref.detach().numpy())
    assert_close(adapter.lora_A.weight.grad, a.grad.numpy())
    assert_close(adapter.lora_B.weight.grad, b.grad.numpy())
    assert_close(adapter.delta_weight(), (2.0 * b @ a).detach().numpy())


def test_tera_update_is_the_tucker_network_of_frozen_factors(rng):
    adapter = TeRALinear(nn.Linear(16, 12).double(), r=3, alpha=0.5, d=2, seed=7)
    _perturb(adapter, rng)
    assert adapter.out_modes == (4, 3) and adapter.in_modes == (4, 4)
    assert sum(p.numel() for p in adapter.parameters() if p.requires_grad) == 3 * 4
    core = _np(adapter.core)
    factors = [_np(getattr(adapter, f"factor_{k}")) * _np(adapter.scalings[k]) for k in range(4)]
    dense = np.einsum("abcd,ia,jb,kc,ld->ijkl", core, *factors).reshape(12, 16) * 0.5
    assert_close(adapter.delta_weight(), dense)
    x = rng.standard_normal((3, 16))
    base = adapter.base_layer
    assert_close(adapter(tx.tensor(x)), _np(base(tx.tensor(x))) + x @ dense.T)
    # high rank from 12 trainable numbers: rank(dW) = min(r^d, ...) = 9 > r
    assert np.linalg.matrix_rank(dense) == 9
    # the frozen parts come from the seed: layers of one shape share them
    twin = TeRALinear(nn.Linear(16, 12).double(), r=3, d=2, seed=7)
    assert_close(twin.core, core)
    assert_close(twin.factor_2, _np(adapter.factor_2))


def test_tlora_update_is_a_tt_matrix(rng):
    adapter = TLoRALinear(nn.Linear(12, 8).double(), r=2, lora_alpha=3, d=2)
    _perturb(adapter, rng)
    dense = _np(adapter.tt.to_dense()) * 1.5
    assert_close(adapter.delta_weight(), dense)
    x = rng.standard_normal((2, 5, 12))
    assert_close(adapter(tx.tensor(x)), _np(adapter.base_layer(tx.tensor(x))) + x @ dense.T)


@pytest.mark.parametrize("cls,kw", ADAPTERS, ids=IDS)
def test_adapter_gradcheck(device, cls, kw, rng):
    adapter = cls(nn.Linear(8, 6).double(), **kw)
    _perturb(adapter, rng)
    x = tx.randn(3, 8, dtype=tx.float64)
    module_gradcheck(adapter, x.requires_grad_())
    assert_same_on_device(adapter, x.detach(), device=device)


@pytest.mark.parametrize("cls,kw", ADAPTERS, ids=IDS)
def test_merge_unmerge_round_trip(cls, kw, rng):
    adapter = cls(nn.Linear(12, 8).double(), **kw)
    _perturb(adapter, rng)
    x = tx.tensor(rng.standard_normal((4, 12)))
    w0 = _np(adapter.base_layer.weight).copy()
    y = _np(adapter(x))
    adapter.merge()
    assert adapter.merged
    assert_close(adapter(x), y)
    assert_close(adapter.base_layer.weight, w0 + _np(adapter.delta_weight()))
    with pytest.warns(UserWarning, match="already merged"):
        adapter.merge()
    adapter.unmerge()
    assert_close(adapter.base_layer.weight, w0)
    assert_close(adapter(x), y)
    merged = adapter.merge_and_unload()
    assert type(merged) is nn.Linear
    assert_close(merged(x), y)


def test_apply_lora_wraps_targets_freezes_the_rest_and_trains():
    tx.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                          nn.Linear(16, 1))
    x = tx.randn(64, 8)
    y = (x[:, :1] * x[:, 1:2]).sin()
    wrapped = apply_lora(model, "lora", target_modules=["0", "2"], r=2, lora_alpha=4)
    assert wrapped == ["0", "2"] and isinstance(model[0], LoRALinear)
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    assert names == ["0.lora_A.weight", "0.lora_B.weight", "2.lora_A.weight", "2.lora_B.weight"]
    opt = optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    first = None
    for _ in range(60):
        loss = nn.functional.mse_loss(model(x), y)
        first = float(loss) if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(loss) < 0.8 * first
    before = _np(model(x))
    merge_and_unload(model)
    assert type(model[0]) is nn.Linear and type(model[2]) is nn.Linear
    assert_close(model(x), before, atol=1e-5, rtol=1e-4)


def test_adapters_refuse_bad_input():
    with pytest.raises(TypeError, match="LoRALinear: expected base_layer to be an nn.Linear"):
        LoRALinear(nn.Conv2d(3, 3, 1))
    with pytest.raises(ValueError, match="LoRALinear: r must be a positive int"):
        LoRALinear(nn.Linear(4, 4), r=0)
    with pytest.raises(ValueError, match=r"LoRALinear: lora_dropout must be in \[0, 1\)"):
        LoRALinear(nn.Linear(4, 4), lora_dropout=1.5)
    with pytest.raises(ValueError, match=r"TeRALinear: r must be an int in \[1, 3\]"):
        TeRALinear(nn.Linear(12, 12), r=4, out_modes=(4, 3), in_modes=(3, 4))
    with pytest.raises(ValueError, match="TeRALinear: in_modes must be 2 positive ints"):
        TeRALinear(nn.Linear(12, 12), r=2, in_modes=(5, 3))
    with pytest.raises(ValueError, match="apply_lora: no nn.Linear of the model matches"):
        apply_lora(nn.Sequential(nn.Linear(3, 3)), target_modules=["q_proj"])
    with pytest.raises(ValueError, match="apply_lora: adapter must be one of"):
        apply_lora(nn.Sequential(nn.Linear(3, 3)), "dora")
