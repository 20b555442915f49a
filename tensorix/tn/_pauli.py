"""Pauli strings: their matrices without Kronecker chains, their action on state vectors, and
the Pauli-basis decomposition of an operator by a fast per-qubit transform (O(n 4^n) instead
of 4^n traces of 2^n x 2^n products).

Qubit 0 is the most significant bit of a basis index, as in :class:`Circuit` and ``np.kron``.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..ops.creation import tensor as _tensor
from ..ops.linalg import tensordot
from ..tensor import Tensor

__all__ = ["pauli_matrix", "pauli_apply", "pauli_decompose", "pauli_compose", "pauli_terms"]

_LETTERS = "IXYZ"


def _check_string(op, string, n=None):
    if not isinstance(string, str) or not string or any(c not in _LETTERS for c in
                                                        string.upper()):
        raise ValueError(f"{op}: expected a Pauli string of letters I, X, Y, Z, got {string!r}")
    if n is not None and len(string) != n:
        raise ValueError(f"{op}: the Pauli string {string!r} has {len(string)} letters for "
                         f"{n} qubits")
    return string.upper()


def _permutation_and_phase(string):
    """``P|r> = phase[r] |r ^ flip>``: X and Y flip their bit, Y and Z give ``(-1)^bit``, Y
    an extra ``i``. One pass over the 2^n basis states."""
    n = len(string)
    r = np.arange(2 ** n)
    flip, phase = 0, np.ones(2 ** n, dtype=complex)
    for q, c in enumerate(string):
        bit = (r >> (n - 1 - q)) & 1
        if c in "XY":
            flip |= 1 << (n - 1 - q)
        if c in "YZ":
            phase = phase * (1 - 2 * bit)
        if c == "Y":
            phase = phase * 1j
    return r ^ flip, phase


def _real_if_possible(string, dtype):
    dtype = dt.as_dtype(dtype) if dtype is not None else None
    if dtype is None:
        return dt.complex128 if string.count("Y") % 2 else dt.float64
    if string.count("Y") % 2 and not dtype.is_complex:
        raise TypeError(f"pauli_matrix: {string!r} has an odd number of Y: it is imaginary and "
                        f"needs a complex dtype, got {dtype}")
    return dtype


def pauli_matrix(string, dtype=None, device=None):
    """The ``(2**n, 2**n)`` matrix of a Pauli string (``'XZIY'``), written as the signed
    permutation it is (``2**n`` nonzeros) instead of a chain of Kronecker products. Real
    (float64) unless the string has an odd number of Y.

    Example: ``pauli_matrix('ZZ')`` is ``diag(1, -1, -1, 1)``.
    """
    string = _check_string("pauli_matrix", string)
    dtype = _real_if_possible(string, dtype)
    target, phase = _permutation_and_phase(string)
    m = np.zeros((2 ** len(string),) * 2, dtype=complex)
    m[target, np.arange(len(target))] = phase
    return _tensor(m if dtype.is_complex else m.real, dtype=dtype, device=device)


def pauli_apply(string, psi):
    """``P @ psi`` for a state ``psi (2**n,)`` or a batch of columns ``(2**n, k)``, in
    ``O(2**n)`` per column: a gather and a phase, never the matrix. Differentiable in ``psi``.

    Example: ``pauli_apply('XI', psi)`` swaps the halves of ``psi``.
    """
    if not isinstance(psi, Tensor):
        raise TypeError(f"pauli_apply: expected psi to be a tensorix Tensor, got "
                        f"{type(psi).__name__}")
    n = int(psi.shape[0]).bit_length() - 1
    if psi.ndim not in (1, 2) or 2 ** n != psi.shape[0]:
        raise ValueError(f"pauli_apply: expected psi of shape (2**n,) or (2**n, k), got "
                         f"{tuple(psi.shape)}")
    string = _check_string("pauli_apply", string, n)
    target, phase = _permutation_and_phase(string)
    source = np.argsort(target)  # (P psi)[t] = phase[s] psi[s] with t = target[s]
    dtype = psi.dtype if not string.count("Y") % 2 else psi.dtype.to_complex()
    coef = phase[source]
    coef = _tensor(coef if dtype.is_complex else coef.real, dtype=dtype, device=psi.device)
    idx = _tensor(source, dtype=dt.int64, device=psi.device)
    picked = psi.to(dtype).index_select(0, idx)
    return picked * (coef if psi.ndim == 1 else coef.unsqueeze(1))


def _basis(dtype, device, inverse):
    """``B[p, a, b]``: ``sigma_p[b, a] / 2`` (coefficients) or ``sigma_p[a, b]`` (rebuild)."""
    sig = np.array([[[1, 0], [0, 1]], [[0, 1], [1, 0]], [[0, -1j], [1j, 0]],
                    [[1, 0], [0, -1]]])
    b = sig if inverse else sig.transpose(0, 2, 1) / 2
    return _tensor(b, dtype=dtype, device=device)


def pauli_decompose(matrix):
    """Coefficients ``c[p_0, ..., p_{n-1}] = Tr(P^H M) / 2**n`` of ``matrix (2**n, 2**n)`` in the
    Pauli basis (index 0, 1, 2, 3 = I, X, Y, Z per qubit), so that ``M = sum_P c_P P``. Shape
    ``(4,) * n``, complex. A per-qubit transform: ``O(n 4**n)``. Differentiable.

    Example: ``pauli_decompose(pauli_matrix('XZ'))[1, 3]`` is ``1``.
    """
    if not isinstance(matrix, Tensor):
        raise TypeError(f"pauli_decompose: expected a tensorix Tensor, got "
                        f"{type(matrix).__name__}")
    n = int(matrix.shape[0]).bit_length() - 1 if matrix.ndim == 2 else -1
    if n < 1 or tuple(matrix.shape) != (2 ** n, 2 ** n):
        raise ValueError(f"pauli_decompose: expected a (2**n, 2**n) matrix with n >= 1, got "
                         f"shape {tuple(matrix.shape)}")
    if not bool(matrix.isfinite().all()):
        raise ValueError("pauli_decompose: matrix contains inf or nan values")
    dtype = matrix.dtype if matrix.dtype.is_complex else matrix.dtype.to_complex()
    x = matrix.to(dtype).reshape((2,) * (2 * n))  # (a_0 .. a_{n-1}, b_0 .. b_{n-1})
    # interleave to (a_0, b_0, a_1, b_1, ...) and fold each pair with the basis
    x = x.permute(*[k for q in range(n) for k in (q, n + q)])
    basis = _basis(dtype, matrix.device, inverse=False)
    for _ in range(n):
        x = tensordot(x, basis, dims=([0, 1], [1, 2]))  # the pair's Pauli index goes last
    return x


def pauli_compose(coeffs):
    """Inverse of :func:`pauli_decompose`: ``sum_P c_P P`` for ``coeffs (4,) * n``, shape
    ``(2**n, 2**n)``. Example: ``pauli_compose(pauli_decompose(M))`` equals ``M``."""
    if not isinstance(coeffs, Tensor) or coeffs.ndim < 1 or any(s != 4 for s in coeffs.shape):
        shape = tuple(coeffs.shape) if isinstance(coeffs, Tensor) else type(coeffs).__name__
        raise ValueError(f"pauli_compose: expected a Tensor of shape (4,) * n, got {shape}")
    n = coeffs.ndim
    dtype = coeffs.dtype if coeffs.dtype.is_complex else coeffs.dtype.to_complex()
    x = coeffs.to(dtype)
    basis = _basis(dtype, coeffs.device, inverse=True)
    for _ in range(n):
        x = tensordot(x, basis, dims=([0], [0]))  # (.., a_q, b_q) appended
    x = x.permute(*[2 * q for q in range(n)], *[2 * q + 1 for q in range(n)])
    return x.reshape(2 ** n, 2 ** n)


def pauli_terms(coeffs, tol=1e-12):
    """The nonzero terms of a coefficient tensor as ``{'XZ': c, ...}`` (``|c| > tol``).
    Example: ``pauli_terms(pauli_decompose(pauli_matrix('XZ')))`` is ``{'XZ': (1+0j)}``."""
    values = coeffs.detach().cpu().numpy()
    return {"".join(_LETTERS[i] for i in idx): complex(values[idx])
            for idx in zip(*np.nonzero(np.abs(values) > tol))}
