"""Low-rank GEMM by randomized SVD, LowRankLinear, rank compensation at equal bytes, and
rank-adaptive Tucker training (ranks shrink by the core's energy)."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn, optim
from tensorix.decomp.layers import (
    LowRankLinear,
    TensorRegression,
    TuckerConv2d,
    low_rank_gemm,
    rank_compensation,
    shrink_tucker_ranks,
    storage_bits,
    storage_bytes,
)
from tensorix.testing import assert_close

from ._helpers import assert_same_on_device, module_gradcheck


def _np(t):
    return t.detach().cpu().numpy()


def test_low_rank_gemm_is_exact_at_the_rank_and_eckart_young_below(device, rng):
    a = rng.standard_normal((60, 8)) @ rng.standard_normal((8, 50))
    b = rng.standard_normal((50, 30))
    out = low_rank_gemm(tx.tensor(a).to(device), tx.tensor(b).to(device), 8, random_state=0)
    assert out.device.type == device
    assert_close(out, a @ b)
    c = rng.standard_normal((40, 30))
    approx = _np(low_rank_gemm(tx.tensor(c), tx.eye(30, dtype=tx.float64), 5, n_iter=6,
                               random_state=0))
    s = np.linalg.svd(c, compute_uv=False)
    # with power iterations the randomized error is within 1% of the optimal one
    assert np.linalg.norm(approx - c) <= 1.01 * np.sqrt((s[5:] ** 2).sum())


def test_low_rank_linear_from_dense_and_gradcheck(device, rng):
    torch = pytest.importorskip("torch")
    lin = nn.Linear(12, 9).double()
    full = LowRankLinear.from_dense(lin, 9)
    x = rng.standard_normal((4, 12))
    ref = torch.nn.functional.linear(torch.tensor(x), torch.tensor(_np(lin.weight)),
                                     torch.tensor(_np(lin.bias)))
    assert_close(full(tx.tensor(x)), ref.numpy())
    low = LowRankLinear.from_dense(lin, 3, method="randomized", n_iter=8)
    s = np.linalg.svd(_np(lin.weight), compute_uv=False)
    err = float((low.to_dense() - lin.weight).norm())
    assert err <= 1.001 * np.sqrt((s[3:] ** 2).sum())
    module_gradcheck(low, tx.tensor(x).requires_grad_())
    assert_same_on_device(low, tx.tensor(x), device=device)


def test_rank_compensation_keeps_bytes_and_trades_precision_for_rank(rng):
    # a weight with a decaying spectrum, as trained weights have
    u, _ = np.linalg.qr(rng.standard_normal((96, 96)))
    v, _ = np.linalg.qr(rng.standard_normal((64, 64)))
    w = (u[:, :64] * np.exp(-np.arange(64) / 12)) @ v.T
    table = rank_compensation(tx.tensor(w, dtype=tx.float32), 6)
    budget = 6 * (96 + 64) * 4
    assert table["fp32"][0] == 6 and table["bf16"][0] == 12
    # MX: rank * 32 / bits, less where a row's block scales (one per started 32) overflow
    assert table["mx_fp8_e4m3"][0] == 23 and table["mx_fp4_e2m1"][0] == 44
    for _rank, nbytes, err in table.values():
        assert nbytes <= budget and 0 < err < 1
    # the fp32 error is the optimal rank-6 one; lower precision at higher rank does better here
    s = np.linalg.svd(w, compute_uv=False)
    assert abs(table["fp32"][2] - np.sqrt((s[6:] ** 2).sum() / (s ** 2).sum())) < 1e-5
    assert table["bf16"][2] < table["fp32"][2] and table["mx_fp8_e4m3"][2] < table["bf16"][2]
    assert storage_bits("mx_fp4_e2m1") == 4.25 and storage_bits("bf16") == 16
    assert storage_bytes((96, 45), "mx_fp4_e2m1") == 96 * (45 / 2 + 2)
    assert storage_bytes((96, 45), "mx_fp4_e2m1") + storage_bytes((45, 64), "mx_fp4_e2m1") \
        > budget >= storage_bytes((96, 44), "mx_fp4_e2m1") + storage_bytes((44, 64),
                                                                           "mx_fp4_e2m1")
    # the rounded factors hold representable values
    q = LowRankLinear.from_dense(tx.tensor(w, dtype=tx.float32), 8, fmt="bf16")
    assert_close(q.U, _np(q.U.to(tx.bfloat16).float()), atol=0, rtol=0)


def test_shrink_tucker_ranks_is_exact_at_zero_tol_and_bounded_otherwise():
    tx.manual_seed(0)
    conv = TuckerConv2d(8, 12, 3, (10, 7), padding=1).double()
    x = tx.randn(2, 8, 6, 6, dtype=tx.float64)
    y = _np(conv(x))
    assert shrink_tucker_ranks(conv, tol=0.0) == (10, 7)
    assert_close(conv(x), y)
    w = _np(conv.to_dense())
    ranks = shrink_tucker_ranks(conv, tol=0.3)
    assert ranks[0] < 10 and ranks[1] <= 7 and conv.rank == ranks
    assert conv.core.shape == (*ranks, 3, 3) and conv.first.shape == (ranks[1], 8, 1, 1)
    assert np.linalg.norm(_np(conv.to_dense()) - w) <= 0.3 * np.linalg.norm(w) + 1e-12


def test_rank_adaptive_tucker_training_finds_the_true_ranks(rng):
    tx.manual_seed(0)
    # targets from a weight of Tucker rank (2, 2, 1) over (6, 5) inputs and 3 outputs
    core = rng.standard_normal((2, 2, 1))
    f = [rng.standard_normal((6, 2)), rng.standard_normal((5, 2)), rng.standard_normal((3, 1))]
    w = np.einsum("pqs,ap,bq,os->abo", core, *f)
    x = rng.standard_normal((400, 6, 5))
    y = tx.tensor(np.einsum("nab,abo->no", x, w))
    x = tx.tensor(x)
    trl = TensorRegression((6, 5), 3, (5, 5, 3), bias=False).double()
    history = [trl.rank]
    for _ in range(6):
        opt = optim.Adam(trl.parameters(), lr=2e-2)  # rebuilt after every shrink
        for _ in range(150):
            loss = nn.functional.mse_loss(trl(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        history.append(shrink_tucker_ranks(trl, tol=0.05))
    assert history[-1] == (2, 2, 1), history
    assert float(nn.functional.mse_loss(trl(x), y)) < 1e-2 * float(y.pow(2).mean())


def test_low_rank_layers_refuse_bad_input():
    with pytest.raises(ValueError, match=r"LowRankLinear: rank must be an int in \[1, 4\]"):
        LowRankLinear(4, 6, 5)
    with pytest.raises(ValueError, match="LowRankLinear.from_dense: method must be"):
        LowRankLinear.from_dense(nn.Linear(4, 4), 2, method="qr")
    with pytest.raises(ValueError, match=r"rank_compensation: rank must be an int in \[1, 4\]"):
        rank_compensation(tx.randn(4, 6), 9)
    with pytest.raises(TypeError, match="shrink_tucker_ranks: expected a TuckerConv2d"):
        shrink_tucker_ranks(nn.Linear(3, 3))
    with pytest.raises(ValueError, match="shrink_tucker_ranks: tol must be in"):
        shrink_tucker_ranks(TuckerConv2d(4, 4, 3, 2), tol=1.5)
