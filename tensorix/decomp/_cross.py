"""TT-cross (Oseledets & Tyrtyshnikov 2010): a tensor train of a black-box tensor from a few
of its entries. Alternating left-to-right and right-to-left sweeps evaluate fibres
``f(I_k, i_k, J_{k+1})`` through the current index sets, orthogonalise them, and pick the next
index sets by maxvol (Goreinov et al. 2010): the rows of the fibre's basis spanning the
largest volume, which make the cross interpolation quasi-optimal.
"""

from __future__ import annotations

import math

import numpy as np

from ..backend import array_module
from ..dtypes import float64
from ..ops.creation import tensor as _as_tensor
from ..tensor import Tensor, _make
from ._base import check_tensor, make_generator
from ._tt import TTTensor, _check_rank

__all__ = ["tensor_train_cross"]


def maxvol(a, tol=1.05, max_iter=100):
    """Row indices ``(r,)`` of a tall raw array ``a (n, r)`` whose ``r x r`` submatrix has a
    locally maximal volume: every row of ``a @ inv(a[rows])`` has entries ``<= tol`` in
    magnitude. Start from partial-pivoting elimination, then swap rows (Goreinov et al.)."""
    xp = array_module(a)
    n, r = a.shape
    rows, work = [], a.copy()
    for j in range(r):  # Gaussian elimination with row pivoting: a good first set
        i = int(abs(work[:, j]).argmax())
        rows.append(i)
        pivot = work[i] / work[i, j]
        work = work - work[:, j:j + 1] * pivot
        work[i] = 0
    b = xp.linalg.solve(a[rows].T, a.T).T  # a @ inv(a[rows]), (n, r)
    for _ in range(max_iter):
        i, j = divmod(int(abs(b).argmax()), r)
        if float(abs(b[i, j])) <= tol:
            break
        # Sherman-Morrison: row i replaces rows[j] in the submatrix
        col = b[:, j].copy()
        row = b[i].copy()
        row[j] -= 1.0
        b = b - col[:, None] * row[None, :] / b[i, j]
        rows[j] = i
    return rows


class _Oracle:
    """The black box: a Tensor (entries looked up) or a function of an ``(n, N)`` int64 index
    Tensor returning ``(n,)`` values; counts the entries asked for."""

    def __init__(self, op, source, shape, dtype):
        self.op, self.source, self.shape, self.n_evals = op, source, shape, 0
        self.dtype = dtype

    def __call__(self, idx):
        self.n_evals += idx.shape[0]
        if isinstance(self.source, Tensor):
            data = self.source._data
            return data[tuple(array_module(data).asarray(idx.T))]
        out = self.source(_as_tensor(idx))
        if not isinstance(out, Tensor) or tuple(out.shape) != (idx.shape[0],):
            got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise ValueError(f"{self.op}: the function must return a Tensor of shape "
                             f"({idx.shape[0]},) for {idx.shape[0]} index rows, got {got}")
        return out.to(self.dtype)._data


def _fibre_indices(left, size, right):
    """All ``(len(left) * size * len(right), N)`` multi-indices ``(l, i, r)``, C order."""
    n_l, n_r = len(left), len(right)
    lpart = np.repeat(left, size * n_r, axis=0)
    mid = np.tile(np.repeat(np.arange(size), n_r), n_l)[:, None]
    rpart = np.tile(right, (n_l * size, 1))
    return np.concatenate([lpart, mid, rpart], axis=1)


def tensor_train_cross(tensor, rank, shape=None, tol=1e-10, n_iter_max=10, n_test=1000,
                       random_state=None, dtype=None, return_info=False):
    """Tensor train of a black-box tensor by TT-cross with maxvol index selection.

    ``tensor``: a Tensor (entries are looked up, never all read) or a function taking an
    ``(n, N)`` int64 Tensor of multi-indices and returning the ``(n,)`` entries, with
    ``shape`` the tensor's shape (and ``dtype`` its floating dtype, default float64).
    ``rank``: an int bound per bond (capped where the dims are smaller) or ``N + 1`` ints.
    Sweeps stop when the relative error on ``n_test`` random entries drops below ``tol``,
    stops improving for two sweeps, or after ``n_iter_max`` sweeps (the best sweep is kept).
    Returns a :class:`TTTensor` (and, with ``return_info``, a
    dict with ``n_evals``: entries asked for by the sweeps, ``n_test_evals`` and ``errors``:
    the test error after each sweep).

    Example::

        f = lambda idx: 1.0 / (1.0 + idx.sum(1).double())   # a Hilbert-like tensor
        tt = tensor_train_cross(f, rank=6, shape=(20, 20, 20, 20))
    """
    op = "tensor_train_cross"
    if isinstance(tensor, Tensor):
        check_tensor(op, tensor, min_ndim=2, finite=True)
        shape, dtype = tuple(tensor.shape), tensor.dtype
    elif callable(tensor):
        if shape is None or len(shape) < 2 or any(int(s) < 1 for s in shape):
            raise ValueError(f"{op}: a function needs shape= with at least 2 positive dims, "
                             f"got {shape!r}")
        shape = tuple(int(s) for s in shape)
        dtype = dtype or float64
    else:
        raise TypeError(f"{op}: expected a Tensor or a function of index rows, got "
                        f"{type(tensor).__name__}")
    ranks = _check_rank(op, shape, rank, ring=False)
    oracle = _Oracle(op, tensor, shape, dtype)
    gen = np.random.default_rng(int(make_generator(random_state).initial_seed()))
    n = len(shape)
    # right index sets J_k (modes k..N-1), random to start; left sets I_k (modes 0..k-1)
    right = [None] + [np.stack([gen.integers(0, s, ranks[k]) for s in shape[k:]], 1)
                      for k in range(1, n)] + [np.zeros((1, 0), dtype=np.int64)]
    left = [np.zeros((1, 0), dtype=np.int64)] + [None] * n
    test = np.stack([gen.integers(0, s, n_test) for s in shape], 1)
    expected = oracle(test)
    n_test_evals, oracle.n_evals = oracle.n_evals, 0
    errors, best, stalled = [], None, 0
    for _ in range(n_iter_max):
        _sweep_right(oracle, shape, ranks, left, right)
        cores = _sweep_left(oracle, shape, ranks, left, right)
        approx = _evaluate(cores, test)
        xp = array_module(approx)
        errors.append(float(xp.linalg.norm(approx - expected) /
                            max(float(xp.linalg.norm(expected)), math.ulp(0.0))))
        if best is None or errors[-1] < best[0]:
            best, stalled = (errors[-1], cores), 0
        else:  # why: at the ranks' accuracy limit the error wanders; keep the best sweep
            stalled += 1
        if errors[-1] < tol or stalled == 2:
            break
    tt = TTTensor([_make(c).to(dtype) for c in best[1]])
    info = dict(n_evals=oracle.n_evals, n_test_evals=n_test_evals, errors=errors)
    return (tt, info) if return_info else tt


def _sweep_right(oracle, shape, ranks, left, right):
    """Left to right: new left index sets from maxvol of each fibre's orthonormal basis."""
    cores = []
    for k in range(len(shape) - 1):
        fibre = oracle(_fibre_indices(left[k], shape[k], right[k + 1]))
        mat = fibre.reshape(len(left[k]) * shape[k], len(right[k + 1]))
        xp = array_module(mat)
        q = xp.linalg.qr(mat)[0]
        rows = maxvol(q)
        ranks[k + 1] = q.shape[1]
        cores.append(xp.linalg.solve(q[rows].T, q.T).T.reshape(len(left[k]), shape[k], -1))
        pairs = np.array([divmod(r, shape[k]) for r in rows])
        left[k + 1] = np.concatenate([left[k][pairs[:, 0]], pairs[:, 1:]], axis=1)
    last = oracle(_fibre_indices(left[-2], shape[-1], right[-1]))
    cores.append(last.reshape(len(left[-2]), shape[-1], 1))
    return cores


def _sweep_left(oracle, shape, ranks, left, right):
    """Right to left, the mirror image: new right index sets; returns right-to-left cores."""
    n = len(shape)
    cores = [None] * n
    for k in range(n - 1, 0, -1):
        fibre = oracle(_fibre_indices(left[k], shape[k], right[k + 1]))
        mat = fibre.reshape(len(left[k]), shape[k] * len(right[k + 1])).T
        xp = array_module(mat)
        q = xp.linalg.qr(mat)[0]
        rows = maxvol(q)
        ranks[k] = q.shape[1]
        core = xp.linalg.solve(q[rows].T, q.T)  # (r_k, I_k * r_{k+1})
        cores[k] = core.reshape(-1, shape[k], len(right[k + 1]))
        pairs = np.array([divmod(r, len(right[k + 1])) for r in rows])
        right[k] = np.concatenate([pairs[:, :1], right[k + 1][pairs[:, 1]]], axis=1)
    first = oracle(_fibre_indices(left[0], shape[0], right[1]))
    cores[0] = first.reshape(1, shape[0], len(right[1]))
    return cores


def _evaluate(cores, idx):
    """Entries of the tensor train at index rows ``idx (n, N)``, without forming it."""
    xp = array_module(cores[0])
    idx = xp.asarray(idx)
    vec = cores[0][0][idx[:, 0]]  # (n, r_1)
    for k, core in enumerate(cores[1:], 1):
        vec = xp.einsum("nr,rns->ns", vec, core[:, idx[:, k]])
    return vec[:, 0]
