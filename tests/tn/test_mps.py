"""MPS/MPO: dense round trips, canonical forms, optimal compression, norms, overlaps and
expectation values against dense NumPy, the chain MPOs against Kronecker sums and quimb."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.testing import assert_close, gradcheck
from tensorix.tn import MPO, MPS, heisenberg_mpo, ising_mpo

from ._oracles import heisenberg_dense, ising_dense


def _dense(mps):
    return mps.to_dense().reshape(-1).numpy()


def test_from_dense_round_trip_and_network(rng, device):
    psi = rng.standard_normal((2,) * 7)
    mps = MPS.from_dense(tx.tensor(psi))
    assert mps.bond_dims == [2, 4, 8, 8, 4, 2]
    assert_close(mps.to_dense(), psi)
    out = mps.to_network().contract([f"k{i}" for i in range(7)])
    assert_close(out.data, psi)


@pytest.mark.parametrize("dtype", [tx.float64, tx.complex128])
def test_canonical_forms_are_orthonormal_and_keep_the_state(dtype):
    psi = MPS.random(7, bond_dim=5, dtype=tx.float64, seed=1)
    if dtype.is_complex:
        psi = MPS([c.to(dtype) * (1 + 0.5j) for c in psi.cores])
    before = _dense(psi)
    for center in (0, 3, 6):
        can = psi.canonicalize(center)
        assert can.center == center
        assert_close(_dense(can), before)
        for i, c in enumerate(can.cores):
            Dl, d, Dr = c.shape
            if i < center:
                m = c.reshape(Dl * d, Dr).numpy()
                assert_close(m.conj().T @ m, np.eye(Dr))
            elif i > center:
                m = c.reshape(Dl, d * Dr).numpy()
                assert_close(m @ m.conj().T, np.eye(Dl))
        assert_close(can.norm(), np.linalg.norm(before))


def test_compress_is_the_optimal_truncation_at_each_cut():
    psi = MPS.random(6, bond_dim=8, dtype=tx.float64, seed=2)
    dense = _dense(psi)
    # a one-cut state: truncation to chi at the middle cut equals the matrix's best rank-chi
    matrix = dense.reshape(8, 8)
    small = MPS.from_dense(tx.tensor(dense.reshape((2,) * 6))).compress(max_bond=8)
    assert_close(_dense(small), dense)
    comp = psi.compress(max_bond=3)
    assert max(comp.bond_dims) == 3
    s = np.linalg.svd(matrix, compute_uv=False)
    # the error of any bond-3 MPS is at least the best rank-3 error of the middle cut
    err = np.linalg.norm(_dense(comp) - dense)
    assert err >= np.sqrt((s[3:] ** 2).sum()) - 1e-12
    assert err < 0.5 * np.linalg.norm(dense)
    # cutoff removes only negligible weight
    padded = MPS.from_dense(tx.tensor(dense.reshape((2,) * 6)), cutoff=0.0)
    assert padded.compress(cutoff=1e-12).bond_dims == psi.bond_dims


def test_norm_overlap_and_expectation_against_dense(rng):
    a = MPS.random(8, bond_dim=4, dtype=tx.float64, seed=3)
    b = MPS.random(8, bond_dim=6, dtype=tx.float64, seed=4)
    va, vb = _dense(a), _dense(b)
    assert_close(a.overlap(b), va @ vb)
    H = heisenberg_mpo(8, dtype=tx.float64)
    Hd = heisenberg_dense(8)
    scaled = MPS([c * 3.0 for c in b.cores])
    assert_close(scaled.expectation(H), vb @ Hd @ vb / (vb @ vb))
    assert_close(H.apply(b).to_dense().reshape(-1), Hd @ vb)
    assert_close(MPS([c * 2.0 for c in a.cores]).norm(), 2 ** 8 * np.linalg.norm(va))


def test_chain_mpos_equal_the_kronecker_sums():
    assert_close(heisenberg_mpo(6, J=1.3, Jz=0.7, h=0.2, dtype=tx.float64).to_dense(),
                 heisenberg_dense(6, J=1.3, Jz=0.7, h=0.2))
    assert_close(ising_mpo(5, J=0.8, h=1.1, dtype=tx.float64).to_dense(),
                 ising_dense(5, J=0.8, h=1.1))


def test_heisenberg_mpo_equals_quimbs():
    qu = pytest.importorskip("quimb")
    assert_close(heisenberg_mpo(7, dtype=tx.float64).to_dense(),
                 np.asarray(qu.ham_heis(7, cyclic=False).real))


def test_expectation_is_differentiable():
    cores = [c.requires_grad_(True) for c in MPS.random(5, bond_dim=3, dtype=tx.float64,
                                                          seed=5).cores]
    H = heisenberg_mpo(5, dtype=tx.float64)
    assert gradcheck(lambda *cs: MPS(cs).expectation(H), cores)


def test_apply_gate_on_a_product_state():
    swap = tx.tensor([[1.0, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 1]],
                     dtype=tx.float64)
    psi = MPS.product_state("0110", dtype=tx.float64).apply_gate(swap, 0)
    assert psi.center == 1
    expected = np.zeros(16)
    expected[0b1010] = 1
    assert_close(_dense(psi), expected)


def test_bad_input_errors():
    with pytest.raises(ValueError, match=r"bond between sites 0 and 1 does not match"):
        MPS([tx.randn(1, 2, 3), tx.randn(4, 2, 1)])
    with pytest.raises(ValueError, match="end bonds"):
        MPS([tx.randn(2, 2, 1)])
    with pytest.raises(ValueError, match=r"MPO: cores must be 4-d"):
        MPO([tx.randn(1, 2, 1)])
    psi = MPS.random(4, dtype=tx.float64, seed=0)
    with pytest.raises(ValueError, match="max_bond must be a positive int"):
        psi.compress(max_bond=0)
    with pytest.raises(ValueError, match="cutoff must be a float"):
        psi.compress(cutoff=2.0)
    with pytest.raises(ValueError, match="inf or nan"):
        MPS.from_dense(tx.tensor([[1.0, float("nan")], [0.0, 1.0]]))
    with pytest.raises(IndexError, match="out of range"):
        psi.canonicalize(7)
    with pytest.raises(TypeError, match="floating or complex"):
        MPS([tx.ones(1, 2, 1, dtype=tx.int64)])
    with pytest.raises(ValueError, match="expected an MPO of 4 sites"):
        psi.expectation(heisenberg_mpo(5))


def test_bonds_above_what_the_dimensions_allow_are_capped_not_refused():
    caps = [1, 2, 4, 8, 4, 2, 1]
    big = MPS.random(6, 2, bond_dim=64, dtype=tx.float64, seed=0)
    assert [c.shape[0] for c in big.cores] + [1] == caps
    dense = big.to_dense()
    again = MPS.from_dense(dense, max_bond=10 ** 6)
    assert [c.shape[0] for c in again.cores] + [1] == caps
    assert_close(again.to_dense(), dense)
    from tensorix.tn import dmrg2

    res = dmrg2(heisenberg_mpo(6, dtype=tx.float64), bond_dims=[1000])
    assert all(c.shape[2] <= cap for c, cap in zip(res.state.cores, caps[1:]))
    exact = np.linalg.eigvalsh(heisenberg_dense(6))[0]
    assert abs(res.energy - exact) < 1e-10
