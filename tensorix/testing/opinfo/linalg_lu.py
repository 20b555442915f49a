"""Registry entries for ops/linalg_lu.py: LU (``linalg.lu``, ``linalg.lu_factor``,
``linalg.lu_solve``, the legacy ``lu``/``lu_unpack``/``lu_solve``), ``matrix_exp``, the
Cholesky solves and the legacy ``cholesky``/``qr``/``svd``/``triangular_solve``.

Legacy torch functions that warn on use (``torch.lu``, ``torch.cholesky``, ``torch.qr``,
``torch.triangular_solve``, ``torch.lu_solve``) are compared through their ``torch.linalg``
replacements. Factor inputs of the Cholesky solves go through ``tril``/``triu`` on every side,
so that perturbing the unread triangle changes nothing for either library.
"""

from __future__ import annotations

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, register
from ._samples import uniform
from .linalg import (
    _qr_invariants,
    _svd_invariants,
    _torch,
    distinct_svals,
    hermitian_input,
    spd,
    triangular,
)
from .linalg import well_conditioned as _well

FLOATS = (tx.float32, tx.float64)
_INV = dict(dtypes=FLOATS, gradgrad=True)


def _lu_samples(rng, dtype):
    w = _well
    return [Sample((w(rng, (4, 4)),)), Sample((w(rng, (2, 3, 3)),)),
            Sample((uniform(rng, (3, 5)),)), Sample((uniform(rng, (5, 3)),))]


def _random_lu(rng, shape):
    """A packed LU with a well conditioned U and valid pivots (any such pair is a
    factorisation of some matrix)."""
    *batch, n, _ = shape
    packed = uniform(rng, shape, -0.5, 0.5)
    packed[..., np.arange(n), np.arange(n)] = rng.uniform(1.0, 2.0, size=tuple(batch) + (n,)) \
        * rng.choice([-1.0, 1.0], size=tuple(batch) + (n,))
    piv = np.stack([rng.integers(j, n, size=tuple(batch)) for j in range(n)], -1) + 1
    return packed, piv.astype(np.int32)


def _lu_solve_samples(rng, dtype):
    out = []
    for shape, bshape, kw in (((3, 3), (3, 2), {}), ((2, 4, 4), (4, 1), {}),
                              ((3, 3), (3, 2), {"adjoint": True}),
                              ((3, 3), (2, 3), {"left": False}),
                              ((2, 3, 3), (2, 4, 3), {"left": False, "adjoint": True})):
        packed, piv = _random_lu(rng, shape)
        out.append(Sample((packed, piv, uniform(rng, bshape)), kw))
    return out


def _np_unpack(packed, piv):
    m, n = packed.shape[-2:]
    k = min(m, n)
    low = np.tril(packed[..., :, :k], -1) + np.eye(m, k)
    up = np.triu(packed[..., :k, :])
    perm = np.broadcast_to(np.arange(m), piv.shape[:-1] + (m,)).copy()
    for idx in np.ndindex(piv.shape[:-1]):
        for j, p in enumerate(piv[idx] - 1):
            perm[idx + (j,)], perm[idx + (p,)] = perm[idx + (p,)], perm[idx + (j,)]
    eye = np.eye(m)
    pmat = np.swapaxes(eye[perm], -1, -2)
    return pmat, low, up


def _np_lu_solve(packed, piv, b, left=True, adjoint=False):
    p, low, up = _np_unpack(packed, piv)
    a = p @ low @ up
    a = np.swapaxes(a, -1, -2) if adjoint else a
    if left:
        return np.linalg.solve(a, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


def _unpack_samples(rng, dtype):
    return [Sample(_random_lu(rng, s)) for s in ((3, 3), (2, 4, 4))]


def _expm_samples(rng, dtype):
    return [Sample((uniform(rng, (3, 3)),)), Sample((uniform(rng, (2, 4, 4), -0.3, 0.3),)),
            Sample((uniform(rng, (3, 3)) * 4,)), Sample((np.zeros((2, 2)),))]


def _chol_factor(rng, shape, upper=False):
    low = np.linalg.cholesky(spd(rng, shape))
    return np.swapaxes(low, -1, -2) if upper else low


def _cholesky_solve_samples(rng, dtype):
    return [Sample((uniform(rng, (3, 2)), _chol_factor(rng, (3, 3)))),
            Sample((uniform(rng, (2, 4, 1)), _chol_factor(rng, (2, 4, 4), True)),
                   {"upper": True})]


def _cholesky_inverse_samples(rng, dtype):
    return [Sample((_chol_factor(rng, (3, 3)),)),
            Sample((_chol_factor(rng, (2, 3, 3), True),), {"upper": True})]


def _tri(fn):
    """``fn`` with the factor argument reduced to the triangle the op reads."""
    def wrapped(*args, upper=False, **kwargs):
        *rest, factor = args
        factor = factor.triu() if upper else factor.tril()
        return fn(*rest, factor, upper=upper, **kwargs)
    return wrapped


def _np_cholesky_solve(b, factor, upper=False):
    low = np.swapaxes(np.triu(factor), -1, -2) if upper else np.tril(factor)
    return np.linalg.solve(low @ np.swapaxes(low, -1, -2), b)


def _np_cholesky_inverse(factor, upper=False):
    low = np.swapaxes(np.triu(factor), -1, -2) if upper else np.tril(factor)
    return np.linalg.inv(low @ np.swapaxes(low, -1, -2))


def _triangular_samples(rng, dtype):
    return [Sample((uniform(rng, (3, 2)), triangular(rng, (3, 3), True))),
            Sample((uniform(rng, (2, 3, 2)), triangular(rng, (3, 3), False)),
                   {"upper": False}),
            Sample((uniform(rng, (3, 1)), triangular(rng, (3, 3), True)), {"transpose": True}),
            Sample((uniform(rng, (3, 2)), triangular(rng, (3, 3), False)),
                   {"upper": False, "unitriangular": True})]


def _torch_triangular_solve(b, a, upper=True, transpose=False, unitriangular=False):
    import torch

    t = a.mT if transpose else a
    x = torch.linalg.solve_triangular(t, b, upper=upper != transpose,
                                      unitriangular=unitriangular)
    return x, a.clone()


def _np_triangular_solve(b, a, upper=True, transpose=False, unitriangular=False):
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        t = t.copy()
        t[..., np.arange(t.shape[-1]), np.arange(t.shape[-1])] = 1
    t = np.swapaxes(t, -1, -2) if transpose else t
    return np.linalg.solve(t, b), a


def _legacy_svd_samples(rng, dtype):
    return [Sample((distinct_svals(rng, (4, 3)),)), Sample((distinct_svals(rng, (3, 4)),)),
            Sample((distinct_svals(rng, (2, 3, 3)),))]


def _svd_as_vh(out):
    u, s, v = out
    return _svd_invariants((u, s, v.mT))


def _torch_lu(a, pivot=True):
    import torch

    return torch.linalg.lu_factor(a, pivot=pivot)


def _torch_lu_solve(b, packed, piv):
    import torch

    return torch.linalg.lu_solve(packed, piv, b)


def _np_geqrf(a):
    h, tau = np.linalg.qr(a, mode="raw")  # LAPACK's a, transposed
    return np.swapaxes(h, -1, -2), tau


def _householder(rng, shape):
    a, tau = _np_geqrf(uniform(rng, shape))
    return np.ascontiguousarray(a), tau


def _householder_samples(rng, dtype):
    a, tau = _householder(rng, (4, 3))
    b, tau_b = _householder(rng, (2, 3, 3))
    return [Sample((a, tau)), Sample((b, tau_b)), Sample((a, tau[:2]))]


def _ormqr_samples(rng, dtype):
    a, tau = _householder(rng, (4, 3))
    w, tau_w = _householder(rng, (3, 5))
    return [Sample((a, tau, uniform(rng, (4, 2)))),
            Sample((a, tau, uniform(rng, (2, 4)), False)),
            Sample((a, tau, uniform(rng, (4, 3)), True, True)),
            Sample((w, tau_w, uniform(rng, (2, 3)), False, True))]


def _np_householder(a, tau, full=False):
    m = a.shape[-2]
    q = np.broadcast_to(np.eye(m), a.shape[:-2] + (m, m)).copy()
    for i in range(tau.shape[-1]):
        v = np.zeros(a.shape[:-1])
        v[..., i] = 1
        v[..., i + 1:] = a[..., i + 1:, i]
        h = np.eye(m) - tau[..., i, None, None] * v[..., :, None] * v[..., None, :]
        q = q @ h
    return q if full else q[..., :, :a.shape[-1]]


def _np_ormqr(a, tau, c, left=True, transpose=False):
    q = _np_householder(a, tau, full=True)
    q = np.swapaxes(q, -1, -2) if transpose else q
    return q @ c if left else c @ q


def _legacy_lu_solve_samples(rng, dtype):
    packed, piv = _random_lu(rng, (3, 3))
    return [Sample((uniform(rng, (3, 2)), packed, piv))]


register(
    OpInfo("linalg.lu_factor", _lu_samples, None, **_INV),
    OpInfo("linalg.lu", _lu_samples, None, **_INV),
    OpInfo("linalg.lu_factor_ex", _lu_samples, None, **_INV),
    OpInfo("linalg.lu_solve", _lu_solve_samples, _np_lu_solve, **_INV),
    OpInfo("lu", _lu_samples, None, torch=_torch_lu, **_INV),
    OpInfo("lu_unpack", _unpack_samples, _np_unpack, **_INV),
    OpInfo("lu_solve", _legacy_lu_solve_samples, lambda b, p, v: _np_lu_solve(p, v, b),
           torch=_torch_lu_solve, **_INV),
    OpInfo("matrix_exp", _expm_samples, None, aliases=("linalg.matrix_exp",), **_INV),
    OpInfo("cholesky_solve", _cholesky_solve_samples, _np_cholesky_solve,
           op=_tri(tx.cholesky_solve), torch=_torch("cholesky_solve", _tri), **_INV),
    OpInfo("cholesky_inverse", _cholesky_inverse_samples, _np_cholesky_inverse,
           op=_tri(tx.cholesky_inverse), torch=_torch("cholesky_inverse", _tri), **_INV),
    OpInfo("triangular_solve", _triangular_samples, _np_triangular_solve,
           torch=_torch_triangular_solve, **_INV),
    OpInfo("cholesky", lambda r, d: [Sample((spd(r, (3, 3)),)),
                                     Sample((spd(r, (2, 3, 3)), True))],
           hermitian_input(lambda a, upper=False: np.swapaxes(np.linalg.cholesky(a), -1, -2)
                           if upper else np.linalg.cholesky(a)),
           op=hermitian_input(tx.cholesky),
           torch=_torch("linalg.cholesky", lambda f: hermitian_input(
               lambda a, upper=False: f(a, upper=upper))), **_INV),
    OpInfo("qr", lambda r, d: [Sample((_well(r, (4, 3)),)),
                               Sample((_well(r, (3, 3)), False))],
           lambda a, some=True: np.linalg.qr(a, "reduced" if some else "complete"),
           torch=lambda a, some=True: _torch("linalg.qr")(a, "reduced" if some else
                                                          "complete"),
           output=_qr_invariants, **_INV),
    OpInfo("svd", _legacy_svd_samples, None, output=_svd_as_vh, **_INV),
    OpInfo("geqrf", lambda r, d: [Sample((uniform(r, (4, 3)),)), Sample((uniform(r, (3, 5)),))],
           _np_geqrf, grad=False, dtypes=FLOATS),
    OpInfo("linalg.householder_product", _householder_samples, _np_householder,
           aliases=("orgqr",), **_INV),
    OpInfo("ormqr", _ormqr_samples, _np_ormqr, **_INV),
)
