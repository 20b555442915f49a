"""Muon (against torch.optim.Muon), Shampoo and SOAP (against their defining properties)."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.optim.matrix import newton_schulz


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (32, 16)])
@pytest.mark.parametrize("kwargs", [{}, dict(nesterov=False, weight_decay=0.0),
                                    dict(adjust_lr_fn="match_rms_adamw", momentum=0.9)])
def test_muon_matches_torch(shape, kwargs):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    w = rng.standard_normal(shape).astype(np.float32)
    tw, xw = torch.tensor(w, requires_grad=True), tx.tensor(w, requires_grad=True)
    topt, xopt = torch.optim.Muon([tw], lr=0.02, **kwargs), tx.optim.Muon([xw], lr=0.02, **kwargs)
    for _ in range(3):
        g = rng.standard_normal(shape).astype(np.float32)
        tw.grad, xw.grad = torch.tensor(g), tx.tensor(g)
        topt.step()
        xopt.step()
    # the same bfloat16 Newton-Schulz: equal to a float32 rounding
    np.testing.assert_allclose(xw.detach().numpy(), tw.detach().numpy(), rtol=0, atol=2e-7)


def test_muon_arguments():
    with pytest.raises(ValueError, match="2D parameters"):
        tx.optim.Muon([tx.zeros(3, requires_grad=True)])
    with pytest.raises(ValueError, match="not supported"):
        tx.optim.Muon([tx.zeros(3, 3, requires_grad=True)], adjust_lr_fn="other")
    s = np.linalg.svd(newton_schulz(np.random.default_rng(1).standard_normal((20, 8))),
                      compute_uv=False)
    assert s.min() > 0.6 and s.max() < 1.3  # about orthogonal (NS does not converge exactly)


def test_shampoo_first_step_is_the_polar_factor():
    rng = np.random.default_rng(2)
    w = tx.tensor(rng.standard_normal((5, 3)), requires_grad=True)
    g = rng.standard_normal((5, 3))
    w0 = w.detach().numpy().copy()
    w.grad = tx.tensor(g)
    tx.optim.Shampoo([w], lr=0.5, epsilon=1e-12).step()
    u, _, vt = np.linalg.svd(g, full_matrices=False)
    # L^{-1/4} G R^{-1/4} with L = G G^T, R = G^T G is U V^T
    np.testing.assert_allclose(w.detach().numpy(), w0 - 0.5 * u @ vt, atol=1e-6)


def test_soap_without_basis_refresh_is_adamw():
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((4, 3))
    a, b = tx.tensor(w0, requires_grad=True), tx.tensor(w0, requires_grad=True)
    soap = tx.optim.SOAP([a], lr=0.01, betas=(0.9, 0.99), weight_decay=0.1,
                         precondition_frequency=10**9)
    adamw = tx.optim.AdamW([b], lr=0.01, betas=(0.9, 0.99), weight_decay=0.1)
    for _ in range(5):
        g = rng.standard_normal((4, 3))
        a.grad, b.grad = tx.tensor(g), tx.tensor(g)
        soap.step()
        adamw.step()
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("make", [
    lambda ps: tx.optim.Shampoo(ps, lr=0.2, precondition_frequency=2),
    lambda ps: tx.optim.SOAP(ps, lr=0.2, precondition_frequency=3),
    lambda ps: tx.optim.Muon([ps[0]], lr=0.2, weight_decay=0.0),
])
def test_matrix_optimizers_fit_least_squares(make):
    """An ill-conditioned linear regression: each gets the loss down by 20x in 60 steps."""
    rng = np.random.default_rng(4)
    x = tx.tensor(rng.standard_normal((64, 8)) * np.logspace(0, 1.5, 8))
    y = x @ tx.tensor(rng.standard_normal((8, 3)))
    w = tx.zeros(8, 3, dtype=tx.float64, requires_grad=True)
    b = tx.zeros(3, dtype=tx.float64, requires_grad=True)
    opt = make([w, b])
    first = None
    for _ in range(60):
        loss = ((x @ w + b - y) ** 2).mean()
        first = loss.item() if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < first / 20
