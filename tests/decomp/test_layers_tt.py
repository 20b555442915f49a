"""TT-Linear and TT-Embedding: forward against the dense layer (NumPy, torch), float64
gradchecks, TT-SVD from a trained weight, initial variance, clear errors."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn
from tensorix.decomp.layers import TTEmbedding, TTLinear, tt_matrix_to_dense
from tensorix.testing import assert_close, gradcheck

from ._helpers import assert_same_on_device, module_gradcheck


def _np(t):
    return t.detach().cpu().numpy()


def _dense_np(cores):
    """The TT-matrix by NumPy alone: W[(i..), (j..)] = prod_k G_k[:, i_k, j_k, :]."""
    full = np.ones((1, 1, 1, 1))
    for g in map(_np, cores):
        a, m, n, _ = full.shape
        full = np.einsum("amnr,rpqs->ampnqs", full, g).reshape(a, m * g.shape[1],
                                                              n * g.shape[2], -1)
    return full[0, :, :, 0]


@pytest.mark.parametrize("modes", [((12,), (5,)), ((3, 4), (5, 1)), ((2, 3, 2), (1, 5, 1))])
def test_tt_linear_forward_equals_the_dense_matrix(device, modes):
    in_modes, out_modes = modes
    layer = TTLinear(12, 5, rank=3, in_modes=in_modes, out_modes=out_modes).double().to(device)
    x = tx.randn(2, 4, 12, dtype=tx.float64).to(device)
    w = _dense_np(layer.cores)
    assert_close(layer.to_dense(), w)
    expected = _np(x) @ w.T + _np(layer.bias)
    out = layer(x)
    assert out.shape == (2, 4, 5) and out.device.type == device
    assert_close(out, expected)


def test_tt_linear_matches_torch_linear_with_the_same_weight(rng):
    torch = pytest.importorskip("torch")
    layer = TTLinear(24, 30, rank=4, d=3).double()
    ref = torch.nn.Linear(24, 30).double()
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(_np(layer.to_dense())))
        ref.bias.copy_(torch.tensor(_np(layer.bias)))
    x = rng.standard_normal((7, 24))
    xt = torch.tensor(x, requires_grad=True)
    ref(xt).pow(2).sum().backward()
    xx = tx.tensor(x, requires_grad=True)
    layer(xx).pow(2).sum().backward()
    assert_close(layer(tx.tensor(x)), ref(torch.tensor(x)).detach().numpy())
    assert_close(xx.grad, xt.grad.numpy())
    assert_close(layer.bias.grad, ref.bias.grad.numpy())


def test_tt_linear_gradcheck(device):
    layer = TTLinear(8, 6, rank=[1, 2, 3, 1], in_modes=(2, 2, 2), out_modes=(1, 3, 2))
    layer = layer.double()
    x = tx.randn(3, 8, dtype=tx.float64)
    module_gradcheck(layer, x.requires_grad_())
    assert_same_on_device(layer, x.detach(), device=device)


def test_tt_linear_from_dense_is_tt_svd_of_the_weight(rng):
    lin = nn.Linear(16, 12).double()
    exact = TTLinear.from_dense(lin, rank=100, in_modes=(4, 4), out_modes=(3, 4))
    assert exact.rank == (1, 12, 1)  # the full rank of the (3*4, 4*4) unfolding
    assert_close(exact.to_dense(), _np(lin.weight))
    x = tx.tensor(rng.standard_normal((5, 16)))
    assert_close(exact(x), _np(lin(x)))
    errs = []
    for r in (1, 2, 4, 8):
        t = TTLinear.from_dense(lin.weight, r, in_modes=(4, 4), out_modes=(3, 4))
        assert t.bias is None and t.rank == (1, r, 1)
        errs.append(float((t.to_dense() - lin.weight).norm()))
    assert errs == sorted(errs, reverse=True) and errs[-1] < errs[0]
    # the rank-r TT of a 2-core TT-matrix is the truncated SVD of the interleaved matrix
    w = _np(lin.weight).reshape(3, 4, 4, 4).transpose(0, 2, 1, 3).reshape(12, 16)
    s = np.linalg.svd(w, compute_uv=False)
    assert abs(errs[1] - np.sqrt((s[2:] ** 2).sum())) < 1e-10


def test_tt_linear_compresses_and_starts_with_linear_variance():
    tx.manual_seed(0)
    layer = TTLinear(1024, 512, rank=8, d=3)
    assert layer.in_modes == (16, 8, 8) and layer.out_modes == (8, 8, 8)
    stored = sum(c.numel() for c in layer.cores)
    assert layer.compression_ratio() == 1024 * 512 / stored > 90
    var = float(layer.to_dense().double().pow(2).mean())
    assert 0.5 < var * 3 * 1024 < 2.0


def test_tt_layers_refuse_bad_shapes_and_ranks():
    with pytest.raises(ValueError, match="TTLinear: in_modes must be 2 positive ints whose "
                                         "product is 12"):
        TTLinear(12, 6, in_modes=(3, 5), out_modes=(2, 3))
    with pytest.raises(ValueError, match=r"TTLinear: rank\[1\] = 7 exceeds 4"):
        TTLinear(6, 4, rank=[1, 7, 1], in_modes=(3, 2), out_modes=(2, 2))
    with pytest.raises(ValueError, match="TTLinear: rank must be positive"):
        TTLinear(6, 4, rank=0)
    with pytest.raises(ValueError, match=r"TTLinear: expected input of shape \(\*, 6\)"):
        TTLinear(6, 4, rank=2, d=2)(tx.randn(3, 5))
    with pytest.raises(ValueError, match="TTEmbedding: voc_modes must be 2 ints whose product "
                                         "is at least num_embeddings = 30"):
        TTEmbedding(30, 4, voc_modes=(5, 5), emb_modes=(2, 2))
    with pytest.raises(TypeError, match="TTLinear.from_dense: expected an nn.Linear"):
        TTLinear.from_dense(nn.ReLU(), rank=2)


def test_tt_embedding_forward_equals_the_dense_table(device):
    emb = TTEmbedding(50, 12, rank=4, d=2).double().to(device)
    assert emb.voc_modes == (8, 7) and emb.emb_modes == (4, 3)
    table = _dense_np(emb.cores)[:50]
    assert_close(emb.to_dense(), table)
    idx = np.array([[0, 49, 7], [13, 13, 21]])
    out = emb(tx.tensor(idx).to(device))
    assert out.shape == (2, 3, 12) and out.device.type == device
    assert_close(out, table[idx])


def test_tt_embedding_gradcheck_and_padding(device):
    emb = TTEmbedding(20, 6, rank=3, voc_modes=(5, 4), emb_modes=(3, 2), padding_idx=2)
    emb = emb.double()
    idx = tx.tensor([[1, 2, 19], [2, 0, 7]])
    module_gradcheck(emb, idx)
    assert_same_on_device(emb, idx, device=device)
    emb, idx = emb.to(device), idx.to(device)
    out = emb(idx)
    assert float(out[0, 1].abs().sum()) == 0.0 and float(out[1, 0].abs().sum()) == 0.0
    emb(tx.tensor([2, 2]).to(device)).sum().backward()  # padding rows pass no gradient
    assert all(float(c.grad.abs().sum()) == 0.0 for c in emb.cores)


def test_tt_embedding_from_dense_matches_torch_embedding(rng):
    torch = pytest.importorskip("torch")
    weight = rng.standard_normal((30, 8))
    ref = torch.nn.Embedding.from_pretrained(torch.tensor(weight))
    emb = TTEmbedding.from_dense(tx.tensor(weight), rank=64, voc_modes=(4, 8),
                                 emb_modes=(2, 4))
    idx = rng.integers(0, 30, (4, 5))
    assert_close(emb(tx.tensor(idx)), ref(torch.tensor(idx)).numpy())
    low = TTEmbedding.from_dense(tx.tensor(weight), rank=3, voc_modes=(4, 8), emb_modes=(2, 4))
    assert low.rank == (1, 3, 1) and float((low.to_dense() - tx.tensor(weight)).norm()) > 0
    with pytest.raises(IndexError, match=r"TTEmbedding: index out of range: expected indices "
                                         r"in \[0, 30\)"):
        emb(tx.tensor([0, 30]))
    with pytest.raises(TypeError, match="TTEmbedding: expected integer indices"):
        emb(tx.tensor([0.0, 1.0]))


def test_tt_matrix_to_dense_is_differentiable():
    cores = [tx.randn(1, 2, 3, 2, dtype=tx.float64, requires_grad=True),
             tx.randn(2, 2, 2, 1, dtype=tx.float64, requires_grad=True)]
    gradcheck(lambda *c: tt_matrix_to_dense(list(c)), cores, name="tt_matrix_to_dense")
