"""Quantum circuits as tensor networks: each gate is a node, each qubit wire a chain of index
names, and amplitudes, state vectors and expectation values are network contractions (along
opt_einsum or cotengra paths). States are complex (complex128 by default); gate parameters
may be Tensors that require grad, and gradients flow through the contraction to them.
"""

from __future__ import annotations

import math

from .. import dtypes as dt
from ..ops.creation import tensor as _tensor
from ..ops.creation import zeros
from ..ops.shape import stack
from ..tensor import Tensor
from ._network import Node, TensorNetwork

__all__ = ["Circuit", "gate_matrix", "GATES"]

_R = 1 / math.sqrt(2)
# fixed gates as nested lists (rows: output basis state); parametrised ones are built below
GATES = {
    "I": [[1, 0], [0, 1]], "X": [[0, 1], [1, 0]], "Y": [[0, -1j], [1j, 0]],
    "Z": [[1, 0], [0, -1]], "H": [[_R, _R], [_R, -_R]], "S": [[1, 0], [0, 1j]],
    "T": [[1, 0], [0, complex(_R, _R)]],
    "CNOT": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]],
    "CZ": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, -1]],
    "SWAP": [[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 1]],
}
_PARAMETRISED = {"RX": 1, "RY": 1, "RZ": 1, "CPHASE": 2}


def _angle(theta, dtype, device):
    if isinstance(theta, Tensor):
        if theta.numel() != 1:
            raise ValueError(f"Circuit: a gate angle must be a scalar, got shape "
                             f"{tuple(theta.shape)}")
        theta = theta.reshape(()).to(dtype.to_real())
        return theta if device is None else theta.to(device)
    return _tensor(float(theta), dtype=dtype.to_real(), device=device)


def gate_matrix(name, theta=None, dtype=dt.complex128, device=None):
    """The ``(2, 2)`` or ``(4, 4)`` unitary of gate ``name`` (``'H'``, ``'RX'``, ``'CPHASE'``,
    ...); ``theta`` (float or a scalar Tensor, differentiable) for RX/RY/RZ/CPHASE.
    Two-qubit gates act on ``|control, target>`` with the control the slower index.
    Example: ``gate_matrix('RY', math.pi)`` maps ``|0>`` to ``|1>``."""
    name = name.upper()
    if name in GATES:
        if theta is not None:
            raise ValueError(f"Circuit: gate {name} takes no angle, got {theta!r}")
        return _tensor(GATES[name], dtype=dtype, device=device)
    if name not in _PARAMETRISED:
        raise ValueError(f"Circuit: unknown gate {name!r}; expected one of "
                         f"{sorted(GATES) + sorted(_PARAMETRISED)}")
    if theta is None:
        raise ValueError(f"Circuit: gate {name} needs an angle theta")
    th = _angle(theta, dtype, device)
    c, s = (th / 2).cos().to(dtype), (th / 2).sin().to(dtype)
    one, zero = th.new_ones(()).to(dtype), th.new_zeros(()).to(dtype)
    if name == "RX":
        rows = [[c, -1j * s], [-1j * s, c]]
    elif name == "RY":
        rows = [[c, -s], [s, c]]
    elif name == "RZ":
        rows = [[c - 1j * s, zero], [zero, c + 1j * s]]
    else:  # CPHASE: diag(1, 1, 1, exp(i theta))
        phase = th.cos().to(dtype) + 1j * th.sin().to(dtype)
        rows = [[one, zero, zero, zero], [zero, one, zero, zero], [zero, zero, one, zero],
                [zero, zero, zero, phase]]
    return stack([stack(r) for r in rows])


class Circuit:
    """A circuit on ``n`` qubits starting in ``|0...0>``, kept as a tensor network.

    Gates: ``h x y z s t`` (one qubit), ``rx ry rz`` (angle), ``cnot cz swap`` and
    ``cphase`` (angle), or any unitary with :meth:`apply_gate`. Qubit 0 is the most
    significant bit of a basis index (``amplitude('10')`` is ``<1 0|psi>``).

    Example::

        >>> c = Circuit(3)
        >>> c.h(0); c.cnot(0, 1); c.cnot(1, 2)
        >>> abs(complex(c.amplitude('111'))) ** 2
        0.4999999999999999
    """

    def __init__(self, n, dtype=dt.complex128, device=None):
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"Circuit: n must be a positive int, got {n!r}")
        dtype = dt.as_dtype(dtype)
        self.dtype = dtype if dtype.is_complex else dtype.to_complex()
        self.n, self.device = n, device
        self._layer = [0] * n
        zero = _tensor([1.0, 0.0], dtype=self.dtype, device=device)
        self.network = TensorNetwork([Node(zero, (self._ind(q),), {"PSI0", f"Q{q}"})
                                      for q in range(n)])
        self.gates = []  # (name, qubits) in order, for printing

    def _ind(self, q):
        return f"q{q}_{self._layer[q]}"

    def _check_qubits(self, qubits):
        for q in qubits:
            if not isinstance(q, int) or not 0 <= q < self.n:
                raise IndexError(f"Circuit: qubit {q!r} is out of range for {self.n} qubits")
        if len(set(qubits)) != len(qubits):
            raise ValueError(f"Circuit: a gate's qubits must be distinct, got {qubits}")

    def apply_gate(self, gate, *qubits, theta=None):
        """Apply ``gate`` (a name as in :func:`gate_matrix`, or a ``(2**k, 2**k)`` Tensor) to
        ``qubits`` (``k`` of them, the first the most significant)."""
        self._check_qubits(qubits)
        name = gate.upper() if isinstance(gate, str) else "U"
        if isinstance(gate, str):
            gate = gate_matrix(gate, theta, self.dtype, self.device)
        k = len(qubits)
        if not isinstance(gate, Tensor) or tuple(gate.shape) != (2 ** k, 2 ** k):
            shape = tuple(gate.shape) if isinstance(gate, Tensor) else type(gate).__name__
            raise ValueError(f"Circuit.apply_gate: a gate on {k} qubit(s) must be a "
                             f"({2 ** k}, {2 ** k}) Tensor, got {shape}")
        old = [self._ind(q) for q in qubits]
        for q in qubits:
            self._layer[q] += 1
        new = [self._ind(q) for q in qubits]
        data = gate.to(self.dtype).reshape((2,) * (2 * k))
        self.network.add(Node(data, new + old, {"GATE", name, f"G{len(self.gates)}"}))
        self.gates.append((name, qubits))
        return self

    def h(self, q):
        return self.apply_gate("H", q)

    def x(self, q):
        return self.apply_gate("X", q)

    def y(self, q):
        return self.apply_gate("Y", q)

    def z(self, q):
        return self.apply_gate("Z", q)

    def s(self, q):
        return self.apply_gate("S", q)

    def t(self, q):
        return self.apply_gate("T", q)

    def rx(self, q, theta):
        return self.apply_gate("RX", q, theta=theta)

    def ry(self, q, theta):
        return self.apply_gate("RY", q, theta=theta)

    def rz(self, q, theta):
        return self.apply_gate("RZ", q, theta=theta)

    def cnot(self, control, target):
        return self.apply_gate("CNOT", control, target)

    def cz(self, a, b):
        return self.apply_gate("CZ", a, b)

    def swap(self, a, b):
        return self.apply_gate("SWAP", a, b)

    def cphase(self, control, target, theta):
        return self.apply_gate("CPHASE", control, target, theta=theta)

    # -- contractions -----------------------------------------------------------------------
    @property
    def output_inds(self):
        return tuple(self._ind(q) for q in range(self.n))

    def statevector(self, optimize="auto"):
        """The state ``(2**n,)`` (exponential in n: for checks on small circuits)."""
        out = self.network.contract(self.output_inds, optimize=optimize)
        return out.data.reshape(-1)

    def amplitude(self, bits, optimize="auto"):
        """``<bits|psi>`` for a bit string (``'0110'``) or a sequence of 0/1, as a complex
        0-d Tensor: the network closed with one basis vector per qubit."""
        bits = [int(b) for b in bits]
        if len(bits) != self.n or any(b not in (0, 1) for b in bits):
            raise ValueError(f"Circuit.amplitude: expected {self.n} bits of 0/1, got {bits}")
        closed = TensorNetwork(list(self.network.nodes))
        for q, b in enumerate(bits):
            e = zeros(2, dtype=self.dtype, device=self.device)
            e[b] = 1.0
            closed.add(Node(e, (self._ind(q),), {"BRA"}))
        return closed.contract(optimize=optimize).data

    def expectation(self, ops, optimize="auto"):
        """``<psi|O|psi>`` (a real 0-d Tensor) for ``O`` a product of one-qubit operators:
        a Pauli string (``'ZZI'``, one letter per qubit) or a dict ``{qubit: name or (2, 2)
        Tensor}``, contracted as the ket, the operators and the conjugate bra in one network.
        """
        if isinstance(ops, str):
            if len(ops) != self.n:
                raise ValueError(f"Circuit.expectation: a Pauli string needs {self.n} letters, "
                                 f"got {ops!r}")
            ops = {q: p for q, p in enumerate(ops) if p.upper() != "I"}
        ket = self.network
        bra = ket.conj().reindex({i: i + "*" for i in ket.outer_inds + ket.inner_inds})
        nodes = list(ket.nodes) + list(bra.nodes)
        for q in range(self.n):
            i = self._ind(q)
            op = ops.get(q, "I")
            op = gate_matrix(op, dtype=self.dtype, device=self.device) if isinstance(op, str) \
                else op.to(self.dtype)
            nodes.append(Node(op, (i + "*", i), {"OP"}))
        value = TensorNetwork(nodes).contract(optimize=optimize).data
        return value.real

    def __repr__(self):
        return f"Circuit(n={self.n}, gates={len(self.gates)}, dtype={self.dtype})"
