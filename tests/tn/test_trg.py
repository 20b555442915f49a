"""TRG/HOTRG: the 2-D Ising free energy against Onsager's exact solution."""

import math

import numpy as np
import pytest

import tensorix as tx
from tensorix.testing import gradcheck
from tensorix.tn import ISING_BETA_C, hotrg, ising_tensor, onsager_free_energy, trg

from ._oracles import slow_tier

CATALAN = 0.915965594177219015


def _f(method, beta, chi, **kw):
    return -float(method(ising_tensor(beta, dtype=tx.float64), chi=chi, **kw)) / beta


def test_onsager_at_the_critical_point_is_the_closed_form():
    # ln(Z)/N at beta_c = 2G/pi + ln(2)/2 (G: Catalan's constant)
    exact = -(2 * CATALAN / math.pi + math.log(2) / 2) / ISING_BETA_C
    assert abs(onsager_free_energy(ISING_BETA_C) - exact) < 1e-13


def test_ising_tensor_sums_to_the_partition_function_of_a_2x2_torus():
    beta = 0.37
    T = ising_tensor(beta, dtype=tx.float64)
    # a 2 x 2 periodic lattice: each pair of neighbours is joined by two bonds
    z_network = float(tx.einsum("aibj,bkal,cjdi,dlck->", T, T, T, T))
    spins = np.array([[a, b, c, d] for a in (1, -1) for b in (1, -1) for c in (1, -1)
                      for d in (1, -1)])
    energy = 2 * (spins[:, 0] * spins[:, 1] + spins[:, 2] * spins[:, 3]
                  + spins[:, 0] * spins[:, 2] + spins[:, 1] * spins[:, 3])
    assert abs(z_network - np.exp(beta * energy).sum()) < 1e-9 * z_network


def test_hotrg_at_the_critical_point_fast_ci_variant():
    assert abs(_f(hotrg, ISING_BETA_C, 12) - onsager_free_energy(ISING_BETA_C)) < 1e-5


def test_trg_at_the_critical_point_chi16():
    assert abs(_f(trg, ISING_BETA_C, 16) - onsager_free_energy(ISING_BETA_C)) < 1e-5


@pytest.mark.slow
@slow_tier
def test_trg_at_the_critical_point_chi32():
    err = abs(_f(trg, ISING_BETA_C, 32, steps=30) - onsager_free_energy(ISING_BETA_C))
    assert err < 2e-6


@pytest.mark.parametrize("beta", [0.3, 0.6])
def test_away_from_criticality_both_are_exact_to_1e6(beta):
    exact = onsager_free_energy(beta)
    assert abs(_f(hotrg, beta, 10) - exact) < 1e-6
    assert abs(_f(trg, beta, 16) - exact) < 1e-5


def test_runs_on_the_device_and_in_float32(device):
    T = ising_tensor(ISING_BETA_C, dtype=tx.float32)
    if device == "cuda":
        T = T.to("cuda")
    f = -float(hotrg(T, chi=8, steps=20)) / ISING_BETA_C
    assert abs(f - onsager_free_energy(ISING_BETA_C)) < 1e-4


def test_log_z_is_differentiable_in_the_site_tensor():
    # a generic positive tensor: the Ising one has degenerate singular values, where the
    # SVD's derivative is undefined
    T = (tx.rand(2, 2, 2, 2, dtype=tx.float64, generator=tx.Generator().manual_seed(0))
         + 0.5).requires_grad_(True)
    assert gradcheck(lambda t: trg(t, chi=4, steps=3), [T])
    assert gradcheck(lambda t: hotrg(t, chi=4, steps=3), [T])


def test_bad_input_errors():
    with pytest.raises(ValueError, match="trg: expected a site tensor"):
        trg(tx.randn(2, 2, 2, dtype=tx.float64))
    with pytest.raises(ValueError, match="hotrg: chi must be a positive int"):
        hotrg(ising_tensor(0.4), chi=0)
    with pytest.raises(ValueError, match="trg: T contains inf or nan"):
        trg(ising_tensor(0.4) * float("nan"))
