"""Pauli strings against Kronecker products and traces; the MPS classifier on the digits."""

from functools import reduce

import numpy as np
import pytest

import tensorix as tx
from tensorix.testing import assert_close, gradcheck
from tensorix.tn import (
    MPSClassifier,
    pauli_apply,
    pauli_compose,
    pauli_decompose,
    pauli_matrix,
    pauli_terms,
    pixel_feature_map,
)

from ._digits import train_on_digits
from ._oracles import I2, SX, SY, SZ

PAULI = {"I": I2, "X": SX, "Y": SY, "Z": SZ}


def _kron(string):
    return reduce(np.kron, [PAULI[c] for c in string])


@pytest.mark.parametrize("string", ["X", "Y", "ZZ", "XYZI", "YYIZX", "iXyZ"])
def test_pauli_matrix_equals_the_kronecker_product(string, device):
    m = pauli_matrix(string)
    assert m.dtype is (tx.complex128 if string.upper().count("Y") % 2 else tx.float64)
    assert_close(m, _kron(string.upper()))


def test_pauli_apply_equals_the_matrix_product(rng):
    psi = rng.standard_normal((32, 3)) + 1j * rng.standard_normal((32, 3))
    for string in ("XYZIY", "ZZZZZ", "IIIII"):
        assert_close(pauli_apply(string, tx.tensor(psi)), _kron(string) @ psi)
        assert_close(pauli_apply(string, tx.tensor(psi[:, 0])), _kron(string) @ psi[:, 0])


def test_pauli_decompose_equals_the_traces_and_inverts(rng, device):
    n = 3
    m = rng.standard_normal((8, 8)) + 1j * rng.standard_normal((8, 8))
    coeffs = pauli_decompose(tx.tensor(m))
    assert tuple(coeffs.shape) == (4, 4, 4)
    letters = "IXYZ"
    for idx in np.ndindex(4, 4, 4):
        p = _kron("".join(letters[i] for i in idx))
        assert abs(complex(coeffs[idx]) - np.trace(p.conj().T @ m) / 2 ** n) < 1e-12
    assert_close(pauli_compose(coeffs), m)


def test_pauli_terms_of_a_hamiltonian():
    h = 0.5 * _kron("XX") + 0.5 * _kron("YY") - 1.5 * _kron("ZI")
    terms = pauli_terms(pauli_decompose(tx.tensor(h)))
    assert set(terms) == {"XX", "YY", "ZI"}
    assert abs(terms["ZI"] + 1.5) < 1e-12


def test_pauli_decompose_is_differentiable(rng):
    m = tx.tensor(rng.standard_normal((4, 4)), requires_grad=True)
    assert gradcheck(lambda x: pauli_decompose(x).real, [m])


def test_pauli_bad_input():
    with pytest.raises(ValueError, match="letters I, X, Y, Z"):
        pauli_matrix("XQ")
    with pytest.raises(TypeError, match="needs a complex dtype"):
        pauli_matrix("Y", dtype=tx.float64)
    with pytest.raises(ValueError, match="has 2 letters for 3 qubits"):
        pauli_apply("XX", tx.ones(8))
    with pytest.raises(ValueError, match=r"\(2\*\*n, 2\*\*n\) matrix"):
        pauli_decompose(tx.ones(3, 3))
    with pytest.raises(ValueError, match="inf or nan"):
        pauli_decompose(tx.full((2, 2), float("nan")))


def test_feature_map_is_unit_norm():
    phi = pixel_feature_map(tx.tensor([[0.0, 0.5, 1.0]]))
    assert_close(phi.norm(dim=-1), np.ones((1, 3)), atol=1e-6)
    assert_close(phi[0, 2], [0.0, 1.0], atol=1e-6)


def test_mps_classifier_matches_a_dense_contraction(rng):
    gen = tx.Generator().manual_seed(0)
    model = MPSClassifier(6, 3, bond_dim=4, dtype=tx.float64, generator=gen, std=0.3)
    x = tx.tensor(rng.random((5, 6)))
    logits = model(x).detach().numpy()
    phi = pixel_feature_map(x).numpy()
    cores = [c.detach().numpy() for c in model.cores]
    label = model.label.detach().numpy()
    for b in range(5):
        left = np.einsum("s,asc->c", phi[b, 0], cores[0])
        for i in (1, 2):
            left = np.einsum("a,s,asc->c", left, phi[b, i], cores[i])
        right = np.einsum("s,asc->a", phi[b, 5], cores[5])
        for i in (4, 3):
            right = np.einsum("c,s,asc->a", right, phi[b, i], cores[i])
        full = np.einsum("a,alc,c->l", left, label, right)
        # the classifier rescales per sample: same direction, same argmax
        assert_close(logits[b] / np.linalg.norm(logits[b]), full / np.linalg.norm(full))


def test_mps_classifier_learns_the_digits_fast_variant():
    accuracy = train_on_digits(lambda gen: MPSClassifier(64, 10, bond_dim=6, generator=gen),
                               epochs=4, lr=0.02, batch=50)
    assert accuracy > 0.8  # 4 epochs; docs/tn.md reports a longer run


def test_mps_classifier_bad_input():
    with pytest.raises(ValueError, match="bond_dim must be a positive int"):
        MPSClassifier(8, 2, bond_dim=0)
    with pytest.raises(ValueError, match=r"expected x of shape \(batch, 8\)"):
        MPSClassifier(8, 2)(tx.rand(3, 7))
