"""Tensor regression (with tensor dropout), low-rank multimodal fusion, Monarch and BTT
layers: values against the dense weight (NumPy, torch), float64 gradchecks, the muP rules
measured across widths, clear errors."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import optim
from tensorix.decomp.layers import BTTLinear, LowRankFusion, MonarchLinear, TensorRegression
from tensorix.testing import assert_close

from ._helpers import assert_same_on_device, module_gradcheck


def _np(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("factorization,rank", [("tucker", (3, 2, 2, 4)), ("cp", 5)])
def test_tensor_regression_is_the_dense_contraction(device, factorization, rank, rng):
    trl = TensorRegression((6, 4, 3), 4, rank, factorization=factorization).double()
    with tx.no_grad():
        trl.bias.copy_(tx.tensor(rng.standard_normal(4)))
    x = rng.standard_normal((5, 6, 4, 3))
    # the weight by NumPy from the factors
    f = [_np(u) for u in trl.factors]
    if factorization == "cp":
        w = np.einsum("ar,br,cr,or->abco", *f)
    else:
        w = np.einsum("pqrs,ap,bq,cr,os->abco", _np(trl.core), *f)
    assert_close(trl.to_dense(), w)
    out = trl.to(device)(tx.tensor(x).to(device))
    assert out.device.type == device
    assert_close(out, x.reshape(5, -1) @ w.reshape(-1, 4) + _np(trl.bias))


@pytest.mark.parametrize("factorization,rank", [("tucker", (2, 2, 3)), ("cp", 3)])
def test_tensor_regression_gradcheck(device, factorization, rank):
    trl = TensorRegression((3, 4), 3, rank, factorization=factorization).double()
    x = tx.randn(4, 3, 4, dtype=tx.float64)
    module_gradcheck(trl, x.requires_grad_())
    assert_same_on_device(trl, x.detach(), device=device)


@pytest.mark.parametrize("factorization,rank", [("tucker", 3), ("cp", 4)])
def test_tensor_dropout_drops_whole_components_and_is_unbiased(factorization, rank):
    tx.manual_seed(0)
    trl = TensorRegression((4, 4), 2, rank, factorization=factorization, dropout=0.3,
                           bias=False).double()
    x = tx.randn(3, 4, 4, dtype=tx.float64)
    trl.eval()
    full = _np(trl(x))
    trl.train()
    draws = np.stack([_np(trl(x)) for _ in range(3000)])
    assert len({d.tobytes() for d in draws[:20]}) > 5  # random in training
    assert np.abs(draws.mean(0) - full).max() < 0.1 * np.abs(full).max()
    # one draw is the layer with masked (and rescaled) components: a rank-deficient weight
    tx.manual_seed(5)
    masks = trl._masks(x)
    tx.manual_seed(5)
    one = trl(x)
    factors, core = trl._factors(masks)
    if factorization == "cp":
        w = tx.einsum("az,bz,oz->abo", *factors)
    else:
        w = tx.einsum("pqs,ap,bq,os->abo", core, *factors)
    assert_close(one, _np(x.reshape(3, -1) @ w.reshape(-1, 2)))
    assert all(set(np.unique(_np(m))) <= {0.0, 1 / 0.7} for m in masks)


def test_low_rank_fusion_is_the_tensor_fusion_of_its_weight(device, rng):
    lmf = LowRankFusion((3, 4, 2), 5, rank=3).double()
    zs = [rng.standard_normal((6, d)) for d in (3, 4, 2)]
    ones = [np.concatenate([z, np.ones((6, 1))], 1) for z in zs]
    w = np.einsum("z,zao,zbo,zco->abco", _np(lmf.fusion_weights), *map(_np, lmf.factors))
    assert_close(lmf.to_dense(), w)
    expected = np.einsum("na,nb,nc,abco->no", *ones, w) + _np(lmf.bias)
    out = lmf.to(device)(*[tx.tensor(z).to(device) for z in zs])
    assert out.device.type == device
    assert_close(out, expected)


def test_low_rank_fusion_gradcheck(device):
    lmf = LowRankFusion((2, 3), 4, rank=2).double()
    a, b = tx.randn(3, 2, dtype=tx.float64), tx.randn(3, 3, dtype=tx.float64)
    module_gradcheck(lmf, a.requires_grad_(), b.requires_grad_())
    assert_same_on_device(lmf, a.detach(), b.detach(), device=device)


@pytest.mark.parametrize("cls,kw", [(MonarchLinear, {}), (BTTLinear, dict(rank=2))])
def test_btt_and_monarch_equal_their_dense_matrix(device, cls, kw, rng):
    torch = pytest.importorskip("torch")
    layer = cls(12, 20, in_modes=(3, 4), out_modes=(5, 4), **kw).double()
    left, right = _np(layer.left), _np(layer.right)
    w = np.einsum("lija,aijk->lijk", left, right).reshape(20, 12)
    assert_close(layer.to_dense(), w)
    x = rng.standard_normal((2, 3, 12))
    ref = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w),
                                     torch.tensor(_np(layer.bias)))
    out = layer.to(device)(tx.tensor(x).to(device))
    assert out.device.type == device
    assert_close(out, ref.numpy())


def test_monarch_is_block_diagonal_factors_around_a_permutation():
    m = MonarchLinear(16, 16).double()
    n = 4
    r_blocks = _np(m.right)[0]  # (i2, j1, j2): block j1 maps x[j1, :] to t[:, j1]
    l_blocks = _np(m.left)[..., 0]  # (i1, i2, j1): block i2 maps t[i2, :] to y[:, i2]
    R = np.zeros((16, 16))
    L = np.zeros((16, 16))
    for j1 in range(n):
        R[j1 * n:(j1 + 1) * n, j1 * n:(j1 + 1) * n] = r_blocks[:, j1, :]
    for i2 in range(n):
        L[i2 * n:(i2 + 1) * n, i2 * n:(i2 + 1) * n] = l_blocks[:, i2, :]
    P = np.eye(16).reshape(n, n, 16).transpose(1, 0, 2).reshape(16, 16)  # (a, b) -> (b, a)
    assert_close(m.to_dense(), P @ L @ P @ R)
    assert sum(p.numel() for p in (m.left, m.right)) == 2 * n ** 3


@pytest.mark.parametrize("cls,kw", [(MonarchLinear, {}), (BTTLinear, dict(rank=2))])
def test_btt_gradcheck(device, cls, kw):
    layer = cls(6, 8, in_modes=(2, 3), out_modes=(4, 2), **kw).double()
    x = tx.randn(3, 6, dtype=tx.float64)
    module_gradcheck(layer, x.requires_grad_())
    assert_same_on_device(layer, x.detach(), device=device)


def _first_step_change(layer, groups, x, g):
    y = layer(x).detach()
    opt = optim.Adam(groups)
    (layer(x) * g).sum().backward()
    opt.step()
    with tx.no_grad():
        return float((layer(x) - y).pow(2).mean().sqrt() / x.pow(2).mean().sqrt())


@pytest.mark.parametrize("cls,kw", [(MonarchLinear, {}), (BTTLinear, dict(rank=2))])
def test_mup_keeps_init_gain_and_update_size_width_independent(cls, kw):
    gains, mup, standard = [], [], []
    for n in (64, 1024):
        tx.manual_seed(0)
        x, g = tx.randn(8, n), tx.randn(8, n)
        layer = cls(n, n, **kw)
        gains.append(float(layer(x).pow(2).mean().sqrt() / x.pow(2).mean().sqrt()))
        state = layer.state_dict()
        mup.append(_first_step_change(layer, layer.mup_param_groups(1e-3, 8), x, g))
        layer.load_state_dict(state)
        standard.append(_first_step_change(layer, [{"params": list(layer.parameters()),
                                                    "lr": 1e-3}], x, g))
    assert 0.8 < gains[1] / gains[0] < 1.25
    assert 0.7 < mup[1] / mup[0] < 1.3      # muP: the feature update does not grow with width
    assert standard[1] / standard[0] > 2.5  # one global lr: it grows like sqrt(width)


def test_structured_layers_refuse_bad_input():
    with pytest.raises(ValueError, match=r"TensorRegression: rank must be an int or 3 ints "
                                         r"with 1 <= rank\[k\] <= the weight's shape"):
        TensorRegression((3, 4), 2, rank=(4, 2, 2))
    with pytest.raises(ValueError, match=r"TensorRegression: a CP rank must be an int in "
                                         r"\[1, 4\]"):
        TensorRegression((3, 2), 2, rank=7, factorization="cp")
    with pytest.raises(ValueError, match=r"TensorRegression: expected input of shape "
                                         r"\(N, 3, 4\)"):
        TensorRegression((3, 4), 2, rank=2)(tx.randn(2, 4, 3))
    with pytest.raises(ValueError, match="TensorRegression: dropout must be in"):
        TensorRegression((3, 4), 2, rank=2, dropout=1.0)
    with pytest.raises(ValueError, match="LowRankFusion: expected 2 inputs"):
        LowRankFusion((2, 3), 4, rank=2)(tx.randn(3, 2))
    with pytest.raises(ValueError, match=r"BTTLinear: rank must be an int in \[1, 4\]"):
        BTTLinear(16, 16, rank=5)
    with pytest.raises(ValueError, match="MonarchLinear: in_modes must be 2 positive ints "
                                         "whose product is 12"):
        MonarchLinear(12, 12, in_modes=(4, 4))
    with pytest.raises(ValueError, match=r"MonarchLinear: expected input of shape \(\*, 16\)"):
        MonarchLinear(16, 16)(tx.randn(2, 12))
