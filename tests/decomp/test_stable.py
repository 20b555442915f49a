"""The error-preserving correction of degenerate CP (cp_stabilize, Phan et al. 2020): the
error bound holds, the sensitivity never rises, cancelling rank-1 terms are removed, and
CPConv2d.from_conv(stabilize=True) keeps the kernel error of plain CP."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import decomp, nn
from tensorix.decomp.layers import CPConv2d, decompose_conv2d

from ._helpers import rel_err


def _terms(cp):
    """The norms of the rank-1 terms (invariant to how the scale is split over factors)."""
    return decomp.cp_normalize(cp).weights.abs().numpy()


def test_cp_stabilize_removes_cancelling_terms(rng):
    # X = d o b o c + g o h o k, written as rank 3 with two huge, cancelling terms:
    # M (a + d / M) o b o c  and  -M a o b o c
    a, b, c, d, g, h, k = (rng.standard_normal(n) for n in (5, 6, 7, 5, 5, 6, 7))
    M = 1e4
    factors = [np.stack([a + d / M, -a, g], 1), np.stack([b, b, h], 1), np.stack([c, c, k], 1)]
    weights = np.array([M, M, 1.0])
    degenerate = decomp.CPTensor((tx.tensor(weights), [tx.tensor(f) for f in factors]))
    x = np.einsum("i,j,k->ijk", d, b, c) + np.einsum("i,j,k->ijk", g, h, k)
    X = tx.tensor(x)
    assert rel_err(degenerate.to_tensor(), x) < 1e-8 and _terms(degenerate).max() > 1e4
    stable, history = decomp.cp_stabilize(X, degenerate, delta=1e-6, n_iter_max=300,
                                          return_errors=True)
    assert rel_err(stable.to_tensor(), x) <= 1e-6 * (1 + 1e-9)
    assert _terms(stable).max() < 2 * np.linalg.norm(x)           # no term larger than X
    # non-increasing up to rounding (at a 1e-6 bound the error formula cancels 12 digits)
    assert all(b <= a * (1 + 1e-4) for a, b in zip(history, history[1:]))
    assert history[-1] < 1e-5 * history[0]


def test_cp_stabilize_keeps_a_fits_error_and_lowers_its_sensitivity(rng):
    x = rng.standard_normal((8, 6, 3, 3))          # a random "kernel": CP is approximate
    X = tx.tensor(x)
    cp = decomp.parafac(X, 30, n_iter_max=300, random_state=0)
    before = rel_err(cp.to_tensor(), x)
    stable, history = decomp.cp_stabilize(X, cp, n_iter_max=50, return_errors=True)
    assert stable.rank == 30 and stable.shape == cp.shape
    assert rel_err(stable.to_tensor(), x) <= before * (1 + 1e-8)
    assert decomp.cp_sensitivity(stable) == pytest.approx(history[-1])
    assert history[-1] < history[0] and decomp.cp_sensitivity(stable) < \
        decomp.cp_sensitivity(cp)
    assert (_terms(stable) ** 2).sum() < (_terms(cp) ** 2).sum()


def test_cp_sensitivity_is_the_expected_change_under_factor_noise(rng):
    factors = [rng.standard_normal((n, 2)) for n in (4, 5, 3)]
    cp = decomp.CPTensor((None, [tx.tensor(f) for f in factors]))
    base = cp.to_tensor().numpy()
    sigma, trials, total = 1e-5, 400, 0.0
    for _ in range(trials):
        noisy = [tx.tensor(f + sigma * rng.standard_normal(f.shape)) for f in factors]
        total += ((decomp.CPTensor((None, noisy)).to_tensor().numpy() - base) ** 2).sum()
    assert total / trials / sigma ** 2 == pytest.approx(decomp.cp_sensitivity(cp), rel=0.15)


def test_cp_stabilize_on_device_and_float32(device, rng):
    x = rng.standard_normal((6, 5, 4))
    X = tx.tensor(x, dtype=tx.float32).to(device)
    cp = decomp.parafac(X, 6, n_iter_max=50, random_state=0)
    stable = decomp.cp_stabilize(X, cp, n_iter_max=5)
    assert stable.factors[0].device.type == device and stable.factors[0].dtype == tx.float32
    assert rel_err(stable.to_tensor().to("cpu").double(), x) <= \
        rel_err(cp.to_tensor().to("cpu").double(), x) + 1e-4


def test_cp_stabilize_bad_input():
    X = tx.randn(4, 5, 6, dtype=tx.float64)
    cp = decomp.parafac(X, 3, n_iter_max=5)
    with pytest.raises(ValueError, match=r"cp_stabilize: cp has shape \(4, 5, 6\), the "
                                         r"tensor \(4, 5, 7\)"):
        decomp.cp_stabilize(tx.randn(4, 5, 7, dtype=tx.float64), cp)
    with pytest.raises(ValueError, match="cp_stabilize: delta must be a relative error"):
        decomp.cp_stabilize(X, cp, delta=-1.0)
    with pytest.raises(ValueError, match="cp_stabilize: n_iter_max must be a positive int"):
        decomp.cp_stabilize(X, cp, n_iter_max=0)
    bad = X.clone()
    bad[0, 0, 0] = float("inf")
    with pytest.raises(ValueError, match="cp_stabilize: tensor contains inf or nan"):
        decomp.cp_stabilize(bad, cp)


def test_cp_conv_from_conv_stabilized_keeps_the_kernel_error():
    tx.manual_seed(0)
    conv = nn.Conv2d(6, 8, 3, padding=1)
    kernel = conv.weight.detach()
    plain = CPConv2d.from_conv(conv, 24)
    stable = CPConv2d.from_conv(conv, 24, stabilize=True)
    err_plain = float((plain.to_dense() - kernel).norm() / kernel.norm())
    err_stable = float((stable.to_dense() - kernel).norm() / kernel.norm())
    assert err_stable <= err_plain * (1 + 1e-4) + 1e-6
    x = tx.randn(2, 6, 5, 5)
    dense = nn.functional.conv2d(x, stable.to_dense(), conv.bias, padding=1)
    assert float((stable(x) - dense).abs().max()) < 1e-4
    layer, report = decompose_conv2d(conv, budget=0.5, methods=("cp",), stabilize=True)
    assert isinstance(layer, CPConv2d) and report["cp"][2] < 1.0
