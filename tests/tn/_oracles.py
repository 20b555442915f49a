"""Independent NumPy references for the tensor-network tests: a state-vector simulator, dense
spin-chain Hamiltonians built from Kronecker products, and gate matrices written out."""

import math

import numpy as np
import pytest

SX = np.array([[0, 1], [1, 0]], dtype=complex)
SY = np.array([[0, -1j], [1j, 0]])
SZ = np.array([[1, 0], [0, -1]], dtype=complex)
I2 = np.eye(2)


def local(op, site, n):
    """``op`` on ``site`` of ``n`` sites as a dense matrix (site 0 the slowest index)."""
    return np.kron(np.kron(np.eye(2 ** site), op), np.eye(2 ** (n - site - 1)))


def heisenberg_dense(n, J=1.0, Jz=None, h=0.0):
    Jz = J if Jz is None else Jz
    S = [SX / 2, SY / 2, SZ / 2]
    H = sum(J * local(S[0], i, n) @ local(S[0], i + 1, n) + J * local(S[1], i, n) @
            local(S[1], i + 1, n) + Jz * local(S[2], i, n) @ local(S[2], i + 1, n)
            for i in range(n - 1))
    H = H - h * sum(local(S[2], i, n) for i in range(n))
    return H.real


def ising_dense(n, J=1.0, h=1.0):
    H = -J * sum(local(SZ, i, n) @ local(SZ, i + 1, n) for i in range(n - 1))
    return (H - h * sum(local(SX, i, n) for i in range(n))).real


def one_qubit(name, theta=None):
    c, s = (math.cos(theta / 2), math.sin(theta / 2)) if theta is not None else (0, 0)
    return {"H": np.array([[1, 1], [1, -1]]) / math.sqrt(2), "X": SX, "Y": SY, "Z": SZ,
            "S": np.diag([1, 1j]), "T": np.diag([1, np.exp(1j * math.pi / 4)]),
            "RX": np.array([[c, -1j * s], [-1j * s, c]]), "RY": np.array([[c, -s], [s, c]]),
            "RZ": np.diag([np.exp(-1j * theta / 2), np.exp(1j * theta / 2)])
            if theta is not None else None}[name]


def two_qubit(name, theta=None):
    if name == "CNOT":
        return np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]])
    if name == "CZ":
        return np.diag([1, 1, 1, -1])
    if name == "SWAP":
        return np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 1]])
    return np.diag([1, 1, 1, np.exp(1j * theta)])  # CPHASE


class StateVector:
    """A plain state-vector simulator: the state as an ``(2,) * n`` array, gates by tensordot."""

    def __init__(self, n):
        self.n = n
        self.psi = np.zeros((2,) * n, dtype=complex)
        self.psi[(0,) * n] = 1

    def apply(self, matrix, *qubits):
        k = len(qubits)
        g = np.asarray(matrix, dtype=complex).reshape((2,) * (2 * k))
        out = np.tensordot(g, self.psi, axes=(list(range(k, 2 * k)), list(qubits)))
        self.psi = np.moveaxis(out, list(range(k)), list(qubits))


def record(circuit, sim, name, *qubits, theta=None):
    """Apply one gate to both the tensorix circuit and the reference simulator."""
    circuit.apply_gate(name, *qubits, theta=theta)
    matrix = one_qubit(name, theta) if len(qubits) == 1 else two_qubit(name, theta)
    sim.apply(matrix, *qubits)


# the large-problem tier (minutes on a busy machine: TRG at chi = 32, DMRG at L = 20 against
# quimb): the suite's one slow switch, ``--runslow`` or TENSORIX_RUN_SLOW=1 (tests/conftest.py)
slow_tier = pytest.mark.slow


def entangled_input(circuit, sim, rng):
    """Random RY rotations and a CNOT ladder: a non-trivial input state for the QFT."""
    n = circuit.n
    for q in range(n):
        record(circuit, sim, "RY", q, theta=float(rng.uniform(0, 3)))
    for q in range(n - 1):
        record(circuit, sim, "CNOT", q, q + 1)


def qft(circuit, sim):
    """The quantum Fourier transform (H, controlled phases, the final swaps)."""
    n = circuit.n
    for j in range(n):
        record(circuit, sim, "H", j)
        for k in range(j + 1, n):
            record(circuit, sim, "CPHASE", k, j, theta=math.pi / 2 ** (k - j))
    for j in range(n // 2):
        record(circuit, sim, "SWAP", j, n - 1 - j)


def random_brickwork(circuit, sim, rng, depth):
    """``depth`` layers of random one-qubit gates, then CNOT/CZ on alternating pairs."""
    n = circuit.n
    names = ["H", "X", "Y", "Z", "S", "T", "RX", "RY", "RZ"]
    for layer in range(depth):
        for q in range(n):
            name = names[rng.integers(len(names))]
            theta = float(rng.uniform(0, 2 * math.pi)) if name.startswith("R") else None
            record(circuit, sim, name, q, theta=theta)
        for q in range(layer % 2, n - 1, 2):
            record(circuit, sim, ["CNOT", "CZ"][rng.integers(2)], q, q + 1)
