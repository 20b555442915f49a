"""Two-site DMRG against exact diagonalisation and quimb; TEBD against the exact propagator."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.testing import assert_close
from tensorix.tn import MPS, dmrg2, heisenberg_mpo, ising_mpo, lanczos_ground, tebd

from ._oracles import heisenberg_dense, ising_dense, slow_tier


def _expm_hermitian(H, t):
    w, v = np.linalg.eigh(H)
    return (v * np.exp(t * w)) @ v.conj().T


@pytest.mark.parametrize("L", [6, 9])
def test_dmrg_heisenberg_equals_exact_diagonalisation(L):
    res = dmrg2(heisenberg_mpo(L, dtype=tx.float64), bond_dims=[16, 32])
    exact = np.linalg.eigvalsh(heisenberg_dense(L))[0]
    assert abs(res.energy - exact) < 1e-9
    assert res.converged
    # the returned state is the ground state: its energy, norm and overlap agree
    assert_close(res.state.expectation(heisenberg_mpo(L, dtype=tx.float64)), exact)
    assert abs(float(res.state.norm()) - 1) < 1e-10


def test_dmrg_transverse_ising_and_on_the_device(device):
    L = 8
    H = ising_mpo(L, h=0.9, dtype=tx.float64)
    res = dmrg2(MPS_on(H, device), bond_dims=[16])
    assert abs(res.energy - np.linalg.eigvalsh(ising_dense(L, h=0.9))[0]) < 1e-9


def MPS_on(mpo, device):
    return type(mpo)([w.to(device) for w in mpo.cores])


@pytest.mark.slow
@slow_tier
def test_dmrg_heisenberg_matches_quimb_at_L20():
    quimb_tn = pytest.importorskip("quimb.tensor")
    L = 20
    ours = dmrg2(heisenberg_mpo(L, dtype=tx.float64), bond_dims=[16, 32, 64], cutoff=1e-10)
    theirs = quimb_tn.DMRG2(quimb_tn.MPO_ham_heis(L), bond_dims=[16, 32, 64], cutoffs=1e-10)
    theirs.solve(tol=1e-9, verbosity=0)
    assert abs(ours.energy - float(np.real(theirs.energy))) < 1e-7


def test_lanczos_finds_the_lowest_eigenvalue(rng):
    a = rng.standard_normal((60, 60))
    a = a + a.T
    A = tx.tensor(a)
    value, vec = lanczos_ground(lambda v: A @ v, tx.tensor(rng.standard_normal(60)))
    assert abs(value - np.linalg.eigvalsh(a)[0]) < 1e-9
    assert_close(A @ vec, value * vec, atol=1e-6)


def test_lanczos_on_an_exhausted_krylov_space(rng):
    """A block smaller than the Krylov size with a large norm: rounding-level residuals must
    end the iteration, not become basis vectors (regression: they gave energies below the
    spectrum, and DMRG at L = 20 wandered)."""
    a = rng.standard_normal((12, 12)) * 1e3
    a = a + a.T
    A = tx.tensor(a)
    for seed in range(5):
        x0 = tx.tensor(np.random.default_rng(seed).standard_normal(12))
        value, _ = lanczos_ground(lambda v: A @ v, x0, krylov=24)
        assert abs(value - np.linalg.eigvalsh(a)[0]) < 1e-9 * np.abs(a).max()


def test_dmrg_at_L20_reports_the_energy_of_its_state():
    L = 20
    H = heisenberg_mpo(L, dtype=tx.float64)
    res = dmrg2(H, bond_dims=[16], sweeps=4)
    # variational: the state's energy is the reported one, and sweeps only lower it (up to
    # truncation); before the Lanczos fix the reported energies jumped below the spectrum
    assert abs(float(res.state.expectation(H)) - res.energy) < 1e-8
    assert max(np.diff(res.energies)) < 1e-6
    assert -8.70 < res.energy < -8.68  # the L = 20 ground energy is -8.68247...


def test_tebd_real_time_equals_the_exact_propagator():
    L = 6
    H = heisenberg_dense(L, h=0.0)
    h2 = heisenberg_mpo(2, dtype=tx.float64).to_dense()
    psi = MPS.product_state("010110", dtype=tx.float64)
    out = tebd(psi, h2, dt=0.02, steps=25, max_bond=32)
    assert out.dtype is tx.complex128
    v0 = psi.to_dense().reshape(-1).numpy()
    exact = _expm_hermitian(H, -1j * 0.5) @ v0
    # second-order Trotter: error O(t dt^2)
    assert np.abs(out.to_dense().reshape(-1).numpy() - exact).max() < 1e-4


def test_tebd_imaginary_time_equals_normalised_exp_minus_tau_h():
    L = 6
    H = ising_dense(L, h=1.2)
    terms = [ising_mpo(2, h=1.2 if i in (0, L - 2) else 0.6, dtype=tx.float64).to_dense()
             for i in range(L - 1)]
    # split the field so that every site gets h once: ends have one bond, the rest two
    terms = [tx.tensor(t) for t in _split_field(L, 1.2)]
    psi = MPS.product_state("000000", dtype=tx.float64)
    out = tebd(psi, terms, dt=0.01, steps=50, imaginary=True, max_bond=32)
    v = _expm_hermitian(H, -0.5) @ psi.to_dense().reshape(-1).numpy()
    v /= np.linalg.norm(v)
    got = out.to_dense().reshape(-1).numpy()
    assert abs(abs(got @ v) - 1) < 1e-6


def _split_field(L, h):
    from ._oracles import I2, SX, SZ

    terms = []
    for i in range(L - 1):
        left = h if i == 0 else h / 2
        right = h if i == L - 2 else h / 2
        terms.append((-np.kron(SZ, SZ) - left * np.kron(SX, I2) - right * np.kron(I2, SX)).real)
    return terms


def test_bad_input_errors():
    with pytest.raises(TypeError, match="dmrg2: expected an MPO"):
        dmrg2(np.eye(2))
    with pytest.raises(ValueError, match="max_bond must be a positive int"):
        dmrg2(heisenberg_mpo(4), bond_dims=[0])
    bad = heisenberg_mpo(4, dtype=tx.float64)
    bad.cores[1] = bad.cores[1] * float("inf")
    with pytest.raises(ValueError, match=r"dmrg2: mpo.cores\[1\] contains inf or nan"):
        dmrg2(bad)
    with pytest.raises(ValueError, match="tebd: expected 3 bond terms"):
        tebd(MPS.product_state("0000"), [tx.eye(4)] * 2, 0.1, 1)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_two_site_matvec_equals_the_effective_hamiltonian(rng, dtype):
    from tensorix.tn._dmrg import _lanczos, _two_site_matvec

    def draw(*shape):
        x = rng.standard_normal(shape)
        return (x + 1j * rng.standard_normal(shape) if dtype is np.complex128 else x)

    left, w1, w2, right = draw(5, 3, 4), draw(3, 2, 2, 4), draw(4, 2, 2, 3), draw(6, 3, 7)
    theta = draw(4, 2, 2, 7)
    matvec = _two_site_matvec(np, left, w1, w2, right)
    expected = np.einsum("xwa,wsSv,vtTu,yub,aSTb->xsty", left, w1, w2, right, theta)
    np.testing.assert_allclose(matvec(theta), expected, rtol=1e-12, atol=1e-12)
    # the Lanczos on it finds the lowest eigenvalue of a Hermitian operator
    h = rng.standard_normal((12, 12)) + (1j * rng.standard_normal((12, 12))
                                         if dtype is np.complex128 else 0)
    h = (h + h.conj().T) / 2
    value, vec = _lanczos(lambda v: h @ v, draw(12), np, 24, 1e-14, 5)
    assert abs(value - np.linalg.eigvalsh(h)[0]) < 1e-10
