"""Matrix product states and operators: canonical forms, SVD compression, norms, overlaps and
expectation values, with the Heisenberg and transverse-field Ising chains as MPOs.

Layouts (quimb's 'lrp' order differs; these follow TensorLy's TT cores): an MPS core is
``(D_left, d, D_right)``, an MPO core ``(D_left, d_out, d_in, D_right)``, with ``D = 1`` at
both ends. Every method is written with tensorix ops, so it runs on any device and float or
complex dtype and is differentiable (SVD truncation ranks are chosen outside the graph).
"""

from __future__ import annotations

import math

from .. import linalg as _linalg
from ..autograd import no_grad
from ..decomp._base import make_generator
from ..ops.einsum import einsum
from ..ops.random import randn
from ..tensor import Tensor
from ._network import Node, TensorNetwork

__all__ = ["MPS", "MPO", "heisenberg_mpo", "ising_mpo", "svd_split"]


def check_data(op, tensor, arg, finite=True):
    """A floating or complex Tensor, all finite: SVD/QR sweeps turn one nan into nan
    everywhere without complaint."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{op}: expected {arg} to be a tensorix Tensor, got "
                        f"{type(tensor).__name__}")
    if not (tensor.dtype.is_floating_point or tensor.dtype.is_complex):
        raise TypeError(f"{op}: expected {arg} to have a floating or complex dtype, got "
                        f"{tensor.dtype}")
    if finite and not bool(tensor.isfinite().all()):
        raise ValueError(f"{op}: {arg} contains inf or nan values")


def check_bond(op, max_bond, cutoff):
    if max_bond is not None and (not isinstance(max_bond, int) or max_bond < 1):
        raise ValueError(f"{op}: max_bond must be a positive int or None, got {max_bond!r}")
    if not (isinstance(cutoff, (int, float)) and 0 <= cutoff < 1):
        raise ValueError(f"{op}: cutoff must be a float in [0, 1), got {cutoff!r}")


def svd_split(matrix, max_bond=None, cutoff=0.0):
    """Truncated SVD ``matrix (m, n) ~ U (m, k) @ diag(S) @ Vh (k, n)``: ``k`` is at most
    ``max_bond`` and the smallest kept so that the discarded singular values hold at most a
    ``cutoff**2`` fraction of ``sum S**2`` (relative Frobenius error <= cutoff).

    Example: ``U, S, Vh = svd_split(M, max_bond=8, cutoff=1e-10)``.
    """
    U, S, Vh = _linalg.svd(matrix, full_matrices=False)
    with no_grad():  # the rank is a discrete choice: outside the graph
        s2 = [float(v) ** 2 for v in S.tolist()]
    total, keep, tail = sum(s2), len(s2), 0.0
    while keep > 1 and tail + s2[keep - 1] <= cutoff ** 2 * total:
        tail += s2[keep - 1]
        keep -= 1
    keep = min(keep, max_bond or keep)
    return U[:, :keep], S[:keep], Vh[:keep]


def _conj(t):
    return t.conj() if t.dtype.is_complex else t


class _Chain:
    """What MPS and MPO share: a list of cores whose last and first bond dims chain."""

    _ndim = 3
    _layout = "(D_left, d, D_right)"

    def __init__(self, cores):
        name = type(self).__name__
        cores = list(cores)
        if not cores:
            raise ValueError(f"{name}: expected at least one core")
        for i, c in enumerate(cores):
            check_data(name, c, f"cores[{i}]", finite=False)
            if c.ndim != self._ndim:
                raise ValueError(f"{name}: cores must be {self._ndim}-d {self._layout}, "
                                 f"cores[{i}] has shape {tuple(c.shape)}")
        for i in range(len(cores) - 1):
            if cores[i].shape[-1] != cores[i + 1].shape[0]:
                raise ValueError(f"{name}: bond between sites {i} and {i + 1} does not match: "
                                 f"cores[{i}] ends with {cores[i].shape[-1]}, cores[{i + 1}] "
                                 f"starts with {cores[i + 1].shape[0]}")
        if cores[0].shape[0] != 1 or cores[-1].shape[-1] != 1:
            raise ValueError(f"{name}: the end bonds must have dimension 1, got "
                             f"{cores[0].shape[0]} and {cores[-1].shape[-1]}")
        self.cores = cores

    @property
    def L(self):
        return len(self.cores)

    @property
    def bond_dims(self):
        return [int(c.shape[-1]) for c in self.cores[:-1]]

    @property
    def dtype(self):
        return self.cores[0].dtype

    @property
    def device(self):
        return self.cores[0].device


class MPS(_Chain):
    """A matrix product state ``psi[s_0, ..., s_{L-1}] = A_0[s_0] A_1[s_1] ... A_{L-1}[s_{L-1}]``
    with cores ``A_i (D_i, d_i, D_{i+1})``, ``D_0 = D_L = 1``. ``center`` is the orthogonality
    centre when known (cores left of it left-orthonormal, right of it right-orthonormal).

    Example::

        >>> psi = MPS.random(8, bond_dim=4, dtype=tensorix.float64, seed=0)
        >>> phi = psi.compress(max_bond=2)
        >>> float(psi.normalize().norm())
        1.0
    """

    def __init__(self, cores, center=None):
        super().__init__(cores)
        self.center = center

    @classmethod
    def random(cls, L, phys_dim=2, bond_dim=4, dtype=None, device=None, seed=None):
        """A random normalised MPS of ``L`` sites with bonds ``min(bond_dim, d**k, d**(L-k))``
        (a larger bond than the dimensions allow would be redundant)."""
        if not isinstance(L, int) or L < 1:
            raise ValueError(f"MPS.random: L must be a positive int, got {L!r}")
        gen = make_generator(seed)
        bonds = [1] + [min(bond_dim, phys_dim ** k, phys_dim ** (L - k)) for k in range(1, L)]
        bonds.append(1)
        cores = [randn(bonds[k], phys_dim, bonds[k + 1], generator=gen, dtype=dtype)
                 for k in range(L)]
        cores = [c.to(device) if device is not None else c for c in cores]
        return cls(cores).canonicalize(0).normalize()

    @classmethod
    def product_state(cls, states, dtype=None, device=None):
        """The product state of local vectors ``states[i] (d,)``, or of a bit string
        (``'0101'``: computational basis states)."""
        from ..ops.creation import zeros

        if isinstance(states, str):
            vecs = []
            for b in states:
                v = zeros(2, dtype=dtype, device=device)
                v[int(b)] = 1.0
                vecs.append(v)
            states = vecs
        return cls([s.reshape(1, -1, 1) for s in states], center=0)

    @classmethod
    def from_dense(cls, psi, max_bond=None, cutoff=0.0):
        """The MPS of a dense state ``psi (d_0, ..., d_{L-1})`` by successive SVDs (TT-SVD),
        truncated to ``max_bond``/``cutoff``; the centre ends on the last site."""
        check_data("MPS.from_dense", psi, "psi")
        check_bond("MPS.from_dense", max_bond, cutoff)
        dims, cores, rest = tuple(psi.shape), [], psi.reshape(1, -1)
        for d in dims[:-1]:
            left = rest.shape[0]
            U, S, Vh = svd_split(rest.reshape(left * d, -1), max_bond, cutoff)
            cores.append(U.reshape(left, d, -1))
            rest = S.unsqueeze(1).to(Vh.dtype) * Vh
        cores.append(rest.reshape(rest.shape[0], dims[-1], 1))
        return cls(cores, center=len(dims) - 1)

    def to_dense(self):
        """The full state, shape ``(d_0, ..., d_{L-1})`` (exponential in L)."""
        out = self.cores[0].reshape(-1, self.cores[0].shape[-1])
        for c in self.cores[1:]:
            out = (out @ c.reshape(c.shape[0], -1)).reshape(-1, c.shape[-1])
        return out.reshape([int(c.shape[1]) for c in self.cores])

    def to_network(self, site="k{}", bond="b{}", tag="I{}"):
        """A :class:`TensorNetwork` with physical indices ``site.format(i)`` and tags."""
        nodes = []
        for i, c in enumerate(self.cores):
            data, inds = c, [bond.format(i), site.format(i), bond.format(i + 1)]
            if i == 0:
                data, inds = data[0], inds[1:]
            if i == self.L - 1:
                data, inds = data[..., 0], inds[:-1]
            nodes.append(Node(data, inds, {tag.format(i)}))
        return TensorNetwork(nodes)

    # -- canonical forms --------------------------------------------------------------------
    def canonicalize(self, center):
        """Mixed canonical form with orthogonality centre ``center`` (by QR sweeps from both
        ends, or from the known centre only). ``canonicalize(L - 1)`` is the left canonical
        form, ``canonicalize(0)`` the right one."""
        if not isinstance(center, int) or not -self.L <= center < self.L:
            raise IndexError(f"MPS.canonicalize: center {center!r} is out of range for "
                             f"{self.L} sites")
        center %= self.L
        cores = list(self.cores)
        lo, hi = (0, self.L - 1) if self.center is None else (self.center, self.center)
        for i in range(lo, center):
            Dl, d, Dr = cores[i].shape
            q, r = _linalg.qr(cores[i].reshape(Dl * d, Dr))
            cores[i] = q.reshape(Dl, d, -1)
            cores[i + 1] = einsum("ab,bsc->asc", r, cores[i + 1])
        for i in range(hi, center, -1):
            Dl, d, Dr = cores[i].shape
            q, r = _linalg.qr(cores[i].reshape(Dl, d * Dr).mT)
            cores[i] = q.mT.reshape(-1, d, Dr)
            cores[i - 1] = einsum("asb,cb->asc", cores[i - 1], r)
        return MPS(cores, center=center)

    def compress(self, max_bond=None, cutoff=1e-12):
        """SVD compression to bonds ``<= max_bond`` with a relative error per cut ``<= cutoff``
        (left canonical form, then truncating right to left; the result is right canonical)."""
        check_bond("MPS.compress", max_bond, cutoff)
        cores = list(self.canonicalize(self.L - 1).cores)
        for i in range(self.L - 1, 0, -1):
            Dl, d, Dr = cores[i].shape
            U, S, Vh = svd_split(cores[i].reshape(Dl, d * Dr), max_bond, cutoff)
            cores[i] = Vh.reshape(-1, d, Dr)
            cores[i - 1] = einsum("asb,bc->asc", cores[i - 1], U * S.to(U.dtype))
        return MPS(cores, center=0)

    # -- norms and expectation values -------------------------------------------------------
    def overlap(self, other):
        """``<self|other>`` (conjugating ``self``), by a left-to-right transfer sweep."""
        if not isinstance(other, MPS) or other.L != self.L:
            raise ValueError(f"MPS.overlap: expected an MPS of {self.L} sites, got {other!r}")
        env = None
        for a, b in zip(self.cores, other.cores):
            if a.shape[1] != b.shape[1]:
                raise ValueError(f"MPS.overlap: physical dimensions differ: {a.shape[1]} vs "
                                 f"{b.shape[1]}")
            a = _conj(a)
            env = einsum("asc,bsd->cd", a, b) if env is None else \
                einsum("ab,asc,bsd->cd", env, a, b)
        return env.reshape(())

    def norm(self):
        """``sqrt(<psi|psi>)`` (from the centre core alone when the form is canonical)."""
        if self.center is not None:
            return self.cores[self.center].norm()
        return self.overlap(self).real.sqrt() if self.dtype.is_complex else \
            self.overlap(self).sqrt()

    def normalize(self):
        n = self.norm()
        c = 0 if self.center is None else self.center
        cores = list(self.cores)
        cores[c] = cores[c] / n.to(cores[c].dtype)
        return MPS(cores, self.center)

    def expectation(self, mpo):
        """``<psi|O|psi> / <psi|psi>`` for an :class:`MPO` ``O`` on the same sites."""
        if not isinstance(mpo, MPO) or mpo.L != self.L:
            raise ValueError(f"MPS.expectation: expected an MPO of {self.L} sites, got {mpo!r}")
        env = None
        for a, w in zip(self.cores, mpo.cores):
            if w.shape[2] != a.shape[1]:
                raise ValueError(f"MPS.expectation: MPO site dimension {w.shape[2]} does not "
                                 f"match the state's {a.shape[1]}")
            w = w.to(a.dtype)
            env = einsum("asc,wstv,btd->cvd", _conj(a), w, a) if env is None else \
                einsum("awb,asc,wstv,btd->cvd", env, _conj(a), w, a)
        value = env.reshape(()) / self.overlap(self)
        return value.real if value.dtype.is_complex else value

    def apply_gate(self, gate, site, max_bond=None, cutoff=1e-12):
        """Apply a two-site gate ``gate (d*d, d*d)`` (or ``(d, d, d, d)`` as out, out, in, in)
        to sites ``site, site + 1`` and split back by a truncated SVD; the centre moves to
        ``site + 1`` (truncation is optimal because the centre is first moved to ``site``)."""
        if not 0 <= site < self.L - 1:
            raise IndexError(f"MPS.apply_gate: site {site} must be in [0, {self.L - 2}]")
        psi = self.canonicalize(site)
        cores = list(psi.cores)
        a, b = cores[site], cores[site + 1]
        d1, d2 = a.shape[1], b.shape[1]
        g = gate.to(a.dtype).reshape(d1, d2, d1, d2)
        theta = einsum("stuv,aub,bvc->astc", g, a, b)
        Dl, Dr = a.shape[0], b.shape[2]
        U, S, Vh = svd_split(theta.reshape(Dl * d1, d2 * Dr), max_bond, cutoff)
        cores[site] = U.reshape(Dl, d1, -1)
        cores[site + 1] = (S.to(Vh.dtype).unsqueeze(1) * Vh).reshape(-1, d2, Dr)
        return MPS(cores, center=site + 1)


class MPO(_Chain):
    """A matrix product operator with cores ``W_i (D_i, d_out, d_in, D_{i+1})``.

    Example: ``heisenberg_mpo(6).to_dense()`` is the ``64 x 64`` Hamiltonian matrix.
    """

    _ndim = 4
    _layout = "(D_left, d_out, d_in, D_right)"

    def to_dense(self):
        """The operator as a ``(prod d_out, prod d_in)`` matrix (exponential in L)."""
        out = self.cores[0][0]  # (rows so far, columns so far, D)
        for w in self.cores[1:]:
            out = einsum("stb,buvc->sutvc", out, w)
            out = out.reshape(out.shape[0] * out.shape[1], out.shape[2] * out.shape[3], -1)
        return out[..., 0]

    def apply(self, mps):
        """``O|psi>`` as an MPS whose bonds are the products of both bonds (uncompressed)."""
        if not isinstance(mps, MPS) or mps.L != self.L:
            raise ValueError(f"MPO.apply: expected an MPS of {self.L} sites")
        cores = []
        for w, a in zip(self.cores, mps.cores):
            c = einsum("wstv,atb->awsbv", w.to(a.dtype), a)
            cores.append(c.reshape(c.shape[0] * c.shape[1], c.shape[2], -1))
        return MPS(cores)


def _spin_ops(dtype):
    from ..ops.creation import tensor

    def m(rows):
        return tensor(rows, dtype=dtype)

    return {"I": m([[1.0, 0.0], [0.0, 1.0]]), "Sz": m([[0.5, 0.0], [0.0, -0.5]]),
            "S+": m([[0.0, 1.0], [0.0, 0.0]]), "S-": m([[0.0, 0.0], [1.0, 0.0]]),
            "X": m([[0.0, 1.0], [1.0, 0.0]]), "Z": m([[1.0, 0.0], [0.0, -1.0]])}


def _mpo_from_table(L, table, dtype):
    """An MPO from the lower-triangular automaton ``table[(a, b)] = operator``: the first
    site keeps the last row, the last site the first column (standard finite-state MPO)."""
    from ..ops.creation import zeros
    from ..ops.shape import stack

    if not isinstance(L, int) or L < 2:
        raise ValueError(f"MPO: L must be an int >= 2, got {L!r}")
    n = 1 + max(max(k) for k in table)
    zero = zeros(2, 2, dtype=dtype)
    w = stack([stack([table.get((a, b), zero) for b in range(n)]) for a in range(n)])
    w = w.permute(0, 2, 3, 1)  # (a, b, s, t) -> (a, s, t, b)
    return MPO([w[n - 1:]] + [w] * (L - 2) + [w[..., :1]])


def heisenberg_mpo(L, J=1.0, Jz=None, h=0.0, dtype=None):
    """The spin-1/2 XXZ chain ``H = sum_i J (Sx Sx + Sy Sy) + Jz Sz Sz - h sum_i Sz`` with
    ``S = sigma / 2`` and open ends (``Jz`` defaults to ``J``: the Heisenberg chain), as an
    MPO of bond dimension 5. Example: ``heisenberg_mpo(10).to_dense()`` is 1024 x 1024."""
    Jz = J if Jz is None else Jz
    o = _spin_ops(dtype)
    table = {(0, 0): o["I"], (1, 0): o["S+"], (2, 0): o["S-"], (3, 0): o["Sz"],
             (4, 0): -h * o["Sz"], (4, 1): J / 2 * o["S-"], (4, 2): J / 2 * o["S+"],
             (4, 3): Jz * o["Sz"], (4, 4): o["I"]}
    return _mpo_from_table(L, table, dtype)


def ising_mpo(L, J=1.0, h=1.0, dtype=None):
    """The transverse-field Ising chain ``H = -J sum_i Z_i Z_{i+1} - h sum_i X_i`` (Pauli
    matrices, open ends) as an MPO of bond dimension 3. Critical at ``h = J``.
    Example: ``MPS.random(8).expectation(ising_mpo(8))``."""
    o = _spin_ops(dtype)
    table = {(0, 0): o["I"], (1, 0): o["Z"], (2, 0): -h * o["X"], (2, 1): -J * o["Z"],
             (2, 2): o["I"]}
    return _mpo_from_table(L, table, dtype)


def dense_bond_dims(dims):
    """The largest useful bond at each cut of sites with dimensions ``dims``."""
    return [min(math.prod(dims[:k]), math.prod(dims[k:])) for k in range(1, len(dims))]
