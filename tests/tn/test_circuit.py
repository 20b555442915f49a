"""Circuits as tensor networks against a NumPy state-vector simulator: every gate, GHZ, QFT and
random circuits on 20+ qubits to 1e-12, expectation values, and gradients through angles."""

import math

import numpy as np
import pytest

import tensorix as tx
from tensorix.testing import assert_close, gradcheck
from tensorix.tn import Circuit, gate_matrix

from ._oracles import (
    SZ,
    StateVector,
    entangled_input,
    local,
    one_qubit,
    qft,
    random_brickwork,
    record,
    two_qubit,
)


def _amplitude_errors(circuit, sim, rng, count=3, optimize="auto"):
    n = circuit.n
    picks = [tuple(rng.integers(0, 2, n)) for _ in range(count)]
    picks.append(tuple(np.unravel_index(np.abs(sim.psi).argmax(), sim.psi.shape)))
    return max(abs(complex(circuit.amplitude(b, optimize=optimize)) - sim.psi[b])
               for b in picks)


@pytest.mark.parametrize("name", ["H", "X", "Y", "Z", "S", "T", "RX", "RY", "RZ"])
def test_one_qubit_gates(name):
    theta = 0.7 if name.startswith("R") else None
    assert_close(gate_matrix(name, theta), one_qubit(name, theta))


@pytest.mark.parametrize("name", ["CNOT", "CZ", "SWAP", "CPHASE"])
def test_two_qubit_gates_in_a_circuit(rng, name):
    theta = 0.9 if name == "CPHASE" else None
    c, sim = Circuit(3), StateVector(3)
    for q in range(3):
        record(c, sim, "RY", q, theta=float(rng.uniform(0, 3)))
    record(c, sim, name, 2, 0, theta=theta)
    assert_close(c.statevector(), sim.psi.reshape(-1))


def test_ghz_on_24_qubits():
    n = 24
    c = Circuit(n)
    c.h(0)
    for q in range(n - 1):
        c.cnot(q, q + 1)
    assert abs(complex(c.amplitude("0" * n)) - 2 ** -0.5) < 1e-12
    assert abs(complex(c.amplitude("1" * n)) - 2 ** -0.5) < 1e-12
    assert abs(complex(c.amplitude("01" * (n // 2)))) < 1e-12


def test_qft_on_20_qubits_equals_the_state_vector(rng):
    n = 20
    c, sim = Circuit(n), StateVector(n)
    entangled_input(c, sim, rng)
    qft(c, sim)
    assert _amplitude_errors(c, sim, rng, count=1) < 1e-12  # ~5 s per amplitude


def test_small_qft_is_the_discrete_fourier_transform():
    n = 5
    c, sim = Circuit(n), StateVector(n)
    record(c, sim, "X", 1)
    record(c, sim, "X", 4)
    qft(c, sim)
    x = 0b01001
    dft = np.exp(2j * np.pi * x * np.arange(2 ** n) / 2 ** n) / 2 ** (n / 2)
    assert_close(c.statevector(), dft)


def _random_circuit(rng, n, depth):
    c, sim = Circuit(n), StateVector(n)
    random_brickwork(c, sim, rng, depth)
    return c, sim


def test_random_circuit_on_20_qubits_equals_the_state_vector(rng):
    c, sim = _random_circuit(rng, 20, 8)
    assert _amplitude_errors(c, sim, rng) < 1e-12


def test_random_circuit_with_cotengra_paths(rng):
    pytest.importorskip("cotengra")
    c, sim = _random_circuit(rng, 10, 6)
    assert _amplitude_errors(c, sim, rng, optimize="cotengra") < 1e-12


def test_statevector_and_expectations_against_dense(rng, device):
    n = 6
    c, sim = _random_circuit(rng, n, 4)
    assert_close(c.statevector(), sim.psi.reshape(-1), atol=1e-12)
    v = sim.psi.reshape(-1)
    zz = local(SZ, 1, n) @ local(SZ, 4, n)
    assert abs(float(c.expectation("IZIIZI")) - np.real(v.conj() @ zz @ v)) < 1e-12
    x2 = local(one_qubit("X"), 2, n)
    assert abs(float(c.expectation({2: "X"})) - np.real(v.conj() @ x2 @ v)) < 1e-12


def test_complex64_circuits():
    c = Circuit(3, dtype=tx.complex64)
    c.h(0)
    c.cnot(0, 1)
    assert c.statevector().dtype is tx.complex64
    assert abs(complex(c.amplitude("110")) - 2 ** -0.5) < 1e-6


def test_gradients_through_gate_angles_equal_the_parameter_shift_rule():
    angles = tx.tensor([0.3, -1.1, 2.0], dtype=tx.float64, requires_grad=True)

    def energy(a):
        c = Circuit(3)
        c.rx(0, a[0]).ry(1, a[1]).cnot(0, 1).rz(1, a[2]).h(2).cphase(1, 2, a[0] * 0.5)
        return c.expectation("ZZX")

    energy(angles).backward()
    # the parameter-shift rule is exact for exp(-i theta P / 2) rotations; a[0] enters twice
    base = angles.detach().numpy()

    def at(values):
        return float(energy(tx.tensor(values)))

    for k in (1, 2):
        up, down = base.copy(), base.copy()
        up[k] += math.pi / 2
        down[k] -= math.pi / 2
        assert abs(float(angles.grad[k]) - (at(up) - at(down)) / 2) < 1e-12
    assert gradcheck(energy, [angles])


def test_bad_input_errors():
    c = Circuit(2)
    with pytest.raises(IndexError, match="qubit 2 is out of range for 2 qubits"):
        c.h(2)
    with pytest.raises(ValueError, match="distinct"):
        c.cnot(1, 1)
    with pytest.raises(ValueError, match="unknown gate 'FOO'"):
        c.apply_gate("FOO", 0)
    with pytest.raises(ValueError, match="needs an angle"):
        c.apply_gate("RX", 0)
    with pytest.raises(ValueError, match=r"must be a \(4, 4\) Tensor"):
        c.apply_gate(tx.eye(2), 0, 1)
    with pytest.raises(ValueError, match="expected 2 bits"):
        c.amplitude("011")
    with pytest.raises(ValueError, match="Pauli string needs 2 letters"):
        c.expectation("Z")
    assert two_qubit("CZ").shape == (4, 4)
