"""SMMF against the paper's algorithm (arXiv 2412.08894, Algorithms 1-4), written here in
float64 with dense moments that are compressed and decompressed each step, and its memory
against Adam's."""

import math

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn
from tensorix.optim.smmf import SMMF, square_shape


def _nnmf(a):
    """Algorithm 4 (compression): row and column sums, the shorter side normalised."""
    r, c = a.sum(axis=1), a.sum(axis=0)
    if a.shape[0] < a.shape[1]:
        r = r / r.sum() if r.sum() != 0 else r
    else:
        c = c / c.sum() if c.sum() != 0 else c
    return r, c


def paper_smmf(w, grads, lr, beta1, eps, wd, gamma, lam, vector_reshape=True):
    """The paper's update for one parameter ``w`` over the gradient sequence ``grads``."""
    w = w.copy()
    dense = sum(s > 1 for s in w.shape) == 1 and not vector_reshape
    if dense:
        n, m = w.size, 1
    else:  # Algorithm 2: the most square matricization
        m = max(d for d in range(1, math.isqrt(w.size) + 1) if w.size % d == 0)
        n = w.size // m
    rm, cm, sign = np.zeros(n), np.zeros(m), np.zeros((n, m), bool)
    rv, cv = np.zeros(n), np.zeros(m)
    for t, g in enumerate(grads, start=1):
        w *= 1 - lr * wd
        g = g.reshape(n, m)
        mom = np.where(sign, 1.0, -1.0) * np.outer(rm, cm)  # Algorithm 3: decompression
        v = np.outer(rv, cv)
        b1, b2 = beta1 * lam ** (t - 1), 1 - t ** gamma
        mom = b1 * mom + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        sign = mom > 0
        rm, cm = _nnmf(np.abs(mom))
        rv, cv = _nnmf(v)
        w -= lr * (mom / (np.sqrt(v) + eps)).reshape(w.shape)
    return w


@pytest.mark.parametrize("shape, vector_reshape", [((6, 4), True), ((3, 5, 2), True),
                                                   ((12,), True), ((7,), False), ((7,), True),
                                                   ((1,), True), ((16, 9), True)])
def test_smmf_equals_the_papers_update(shape, vector_reshape):
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal(shape)
    grads = [rng.standard_normal(shape) for _ in range(5)]
    kw = dict(lr=0.01, beta1=0.9, eps=1e-8, wd=0.1, gamma=-0.5, lam=0.999)
    want = paper_smmf(w0, grads, vector_reshape=vector_reshape, **kw)
    p = nn.Parameter(tx.tensor(w0))
    opt = SMMF([p], lr=0.01, weight_decay=0.1, vector_reshape=vector_reshape)
    for g in grads:
        p.grad = tx.tensor(g)
        opt.step()
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-13, atol=1e-14)


def test_smmf_without_first_moment_and_l2():
    rng = np.random.default_rng(1)
    w0, g = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    p = nn.Parameter(tx.tensor(w0))
    opt = SMMF([p], lr=0.1, beta1=None, weight_decay=0.5, weight_decay_mode="adam")
    p.grad = tx.tensor(g)
    opt.step()
    # L2; at t=1 beta2_1 = 0, so this step's V is G^2 (the update uses it before compression)
    g2 = (g + 0.5 * w0).reshape(6, 4)
    want = w0 - 0.1 * (g2 / (np.abs(g2) + 1e-8)).reshape(4, 6)
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-13)


def test_smmf_state_is_a_fraction_of_adams(device):
    tx.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 256)).to(device)
    x = tx.randn(8, 256, device=device)
    sizes = {}
    for name, opt in (("adam", tx.optim.Adam(model.parameters())),
                      ("smmf", SMMF(model.parameters()))):
        model(x).square().mean().backward()
        opt.step()
        sizes[name] = sum(v.numel() * v.element_size() for st in opt.state.values()
                          for v in st.values() if isinstance(v, tx.Tensor))
        model.zero_grad()
    numel = sum(p.numel() for p in model.parameters())
    assert sizes["adam"] == 2 * 4 * numel
    # signs: 1 bit per element; factors: n + m floats per moment and parameter
    assert sizes["smmf"] < numel / 8 + 2 * 4 * 4 * 1024
    assert sizes["adam"] / sizes["smmf"] > 40


def test_square_shape_and_errors():
    assert [square_shape(k) for k in (12, 16, 7, 1, 100)] == [(4, 3), (4, 4), (7, 1), (1, 1),
                                                             (10, 10)]
    p = [nn.Parameter(tx.ones(3))]
    with pytest.raises(ValueError, match="SMMF: invalid decay_rate"):
        SMMF(p, decay_rate=0.5)
    with pytest.raises(ValueError, match="SMMF: invalid weight_decay_mode"):
        SMMF(p, weight_decay_mode="l1")
