"""Differentiable k-means clustering (DKM) with eDKM's uniquification."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.quant.methods import dkm_cluster
from tensorix.testing.gradcheck import gradcheck


def _bf16_valued(shape, seed=0):
    """float64 weights holding bfloat16 values: many repeats, as eDKM exploits."""
    w = tx.randn(*shape, generator=tx.Generator().manual_seed(seed)).to(tx.bfloat16)
    return w.to(tx.float64).detach().requires_grad_(True)


def test_uniquified_equals_plain_values_and_gradients():
    w = _bf16_valued((64, 48))
    assert len(np.unique(w.detach().numpy())) < w.numel() / 2  # many repeated values
    target = tx.randn(64, 48, dtype=tx.float64, generator=tx.Generator().manual_seed(1))
    out = {}
    for unique in (True, False):
        w.grad = None
        wc, c = dkm_cluster(w, 3, unique=unique)
        ((wc - target) ** 2).sum().backward()
        out[unique] = (wc.detach().numpy(), c.detach().numpy(), w.grad.numpy().copy())
    for a, b in zip(out[True], out[False]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("unique", [True, False])
def test_gradient_float64(unique):
    # fixed starting centroids and temperature: otherwise they follow the data (detached)
    w = _bf16_valued((3, 4), seed=2)
    start = tx.tensor([-0.5, 0.5], dtype=tx.float64)
    gradcheck(lambda t: dkm_cluster(t, 1, temperature=0.5, iters=2, centroids=start,
                                    unique=unique)[0], [w], name="dkm_cluster")


def test_clusters_like_k_means():
    w = tx.randn(4096, dtype=tx.float64, generator=tx.Generator().manual_seed(3))
    wc, c = dkm_cluster(w, 2, iters=20)
    c = np.sort(c.detach().numpy())
    # Lloyd-Max levels of a standard normal at 4 levels: +-0.4528, +-1.510
    np.testing.assert_allclose(c, [-1.510, -0.4528, 0.4528, 1.510], atol=0.08)
    hard = c[np.abs(w.numpy()[:, None] - c[None, :]).argmin(1)]
    assert np.mean((hard - w.numpy()) ** 2) < 0.125  # Lloyd-Max MSE 0.1175
    assert np.mean((wc.detach().numpy() - w.numpy()) ** 2) < 0.125


def test_bad_input():
    with pytest.raises(ValueError, match="'bits' must be an int in"):
        dkm_cluster(tx.randn(4), 0)
    with pytest.raises(ValueError, match=r"'centroids' must have shape \(4,\)"):
        dkm_cluster(tx.randn(4), 2, centroids=tx.zeros(3))
    with pytest.raises(TypeError, match="floating-point Tensor"):
        dkm_cluster(tx.tensor([1, 2]), 1)
