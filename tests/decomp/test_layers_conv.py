"""Factorized convolutions: each forward equals torch's conv2d with the dense kernel, float64
gradchecks, exact decomposition at full rank, the layer-wise choice at a size budget."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn
from tensorix.decomp.layers import (
    CPConv2d,
    LowRankConv2d,
    SeparableConv2d,
    TuckerConv2d,
    decompose_conv2d,
    factorize_convs,
)
from tensorix.testing import assert_close

from ._helpers import assert_same_on_device, module_gradcheck

GEOMETRY = dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2))
LAYERS = [(CPConv2d, 5), (TuckerConv2d, (4, 3)), (LowRankConv2d, 4), (SeparableConv2d, 5)]


def _np(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("cls,rank", LAYERS, ids=lambda v: getattr(v, "__name__", str(v)))
def test_factorized_conv_equals_torch_conv_with_the_dense_kernel(device, cls, rank, rng):
    torch = pytest.importorskip("torch")
    layer = cls(6, 8, (3, 5), rank, **GEOMETRY).double().to(device)
    x = rng.standard_normal((2, 6, 9, 11))
    out = layer(tx.tensor(x).to(device))
    ref = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(_np(layer.to_dense())),
                                     torch.tensor(_np(layer.bias)), **GEOMETRY)
    assert out.device.type == device and out.shape == tuple(ref.shape)
    assert_close(out, ref.numpy())


@pytest.mark.parametrize("cls,rank", LAYERS, ids=lambda v: getattr(v, "__name__", str(v)))
def test_factorized_conv_gradcheck(device, cls, rank):
    layer = cls(3, 4, 3, rank if cls is not TuckerConv2d else (3, 2), stride=2, padding=1,
                bias=True).double()
    x = tx.randn(1, 3, 5, 5, dtype=tx.float64)
    module_gradcheck(layer, x.requires_grad_())
    assert_same_on_device(layer, x.detach(), device=device)


def test_from_conv_is_exact_at_full_rank():
    conv = nn.Conv2d(5, 7, (3, 2), padding=1).double()
    x = tx.randn(2, 5, 6, 6, dtype=tx.float64)
    for layer in (LowRankConv2d.from_conv(conv, 7), SeparableConv2d.from_conv(conv, 14),
                  TuckerConv2d.from_conv(conv, (7, 5))):
        assert_close(layer.to_dense(), _np(conv.weight))
        assert_close(layer(x), _np(conv(x)))


def test_cp_conv_recovers_a_low_rank_kernel(rng):
    factors = [rng.standard_normal((n, 3)) for n in (8, 6, 3, 3)]
    kernel = np.einsum("tr,sr,hr,wr->tshw", *factors)
    conv = nn.Conv2d(6, 8, 3, padding=1).double()
    with tx.no_grad():
        conv.weight.copy_(tx.tensor(kernel))
    cp = CPConv2d.from_conv(conv, 3)
    assert float((cp.to_dense() - conv.weight).norm() / conv.weight.norm()) < 1e-8
    x = tx.randn(1, 6, 7, 7, dtype=tx.float64)
    assert_close(cp(x), _np(conv(x)), atol=1e-7, rtol=1e-6)


def test_truncated_svd_layers_have_the_eckart_young_error():
    conv = nn.Conv2d(4, 6, 3).double()
    w = _np(conv.weight)
    s_channel = np.linalg.svd(w.reshape(6, -1), compute_uv=False)
    s_sep = np.linalg.svd(w.transpose(1, 2, 0, 3).reshape(12, 18), compute_uv=False)
    for layer, s, r in ((LowRankConv2d.from_conv(conv, 2), s_channel, 2),
                        (SeparableConv2d.from_conv(conv, 5), s_sep, 5)):
        err = float((layer.to_dense() - conv.weight).norm())
        assert abs(err - np.sqrt((s[r:] ** 2).sum())) < 1e-10


def test_decompose_conv2d_picks_the_smallest_error_within_the_budget():
    tx.manual_seed(0)
    conv = nn.Conv2d(16, 24, 3, padding=1).double()
    budget = 0.3
    layer, report = decompose_conv2d(conv, budget, methods=("svd", "cp", "tucker", "separable"))
    assert set(report) == {"svd", "cp", "tucker", "separable"}
    dense = conv.weight.numel()
    for _rank, stored, err in report.values():
        assert stored <= budget * dense and 0 < err < 1
    best = min(report, key=lambda m: report[m][2])
    assert isinstance(layer, {"svd": LowRankConv2d, "cp": CPConv2d, "tucker": TuckerConv2d,
                              "separable": SeparableConv2d}[best])
    kernel_err = float((layer.to_dense() - conv.weight).norm() / conv.weight.norm())
    assert abs(kernel_err - report[best][2]) < 1e-12
    # a budget nothing fits leaves the conv as it is
    same, none = decompose_conv2d(conv, 1e-4)
    assert same is conv and none == {}


def test_factorize_convs_replaces_every_conv_of_a_model():
    tx.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(16, 16, 3, groups=4))
    chosen = factorize_convs(model, budget=0.5, methods=("svd", "separable"), skip=("0",))
    assert list(chosen) == ["2"]  # "0" skipped, the grouped conv left alone
    assert isinstance(model[0], nn.Conv2d) and isinstance(model[4], nn.Conv2d)
    assert type(model[2]).__name__ == {"svd": "LowRankConv2d",
                                       "separable": "SeparableConv2d"}[chosen["2"][0]]
    assert model(tx.randn(2, 1, 8, 8)).shape == (2, 16, 6, 6)


def test_factorized_convs_refuse_bad_input():
    conv = nn.Conv2d(4, 6, 3)
    with pytest.raises(ValueError, match=r"LowRankConv2d: rank must be an int in \[1, 6\]"):
        LowRankConv2d.from_conv(conv, 7)
    with pytest.raises(ValueError, match=r"TuckerConv2d: rank must be an int in \[1, 4\]"):
        TuckerConv2d(4, 6, 3, rank=(6, 5))
    with pytest.raises(ValueError, match="parafac: rank must be an int"):
        CPConv2d.from_conv(nn.Conv2d(2, 2, 1), 3)
    with pytest.raises(ValueError, match="only groups=1 convolutions"):
        CPConv2d.from_conv(nn.Conv2d(4, 4, 3, groups=2), 2)
    with pytest.raises(TypeError, match="SeparableConv2d.from_conv: expected an nn.Conv2d"):
        SeparableConv2d.from_conv(nn.Linear(3, 3), 2)
    with pytest.raises(ValueError, match="decompose_conv2d: methods must be among"):
        decompose_conv2d(conv, 0.5, methods=("qr",))
    with pytest.raises(ValueError, match="CPConv2d: padding must be non-negative ints"):
        CPConv2d(4, 6, 3, 2, padding="same")
