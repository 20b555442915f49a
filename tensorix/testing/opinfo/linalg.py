"""Registry entries for ops/linalg.py (products) and ``tensorix.linalg`` (linalg_decomp.py,
linalg_norm.py).

Samples are well conditioned by construction: ``U diag(s) V^T`` with random orthogonal U, V
and s in [1, 3]; symmetric positive-definite ``Q diag(s) Q^T`` for Cholesky; well separated
singular values / eigenvalues for svd and eigh, whose outputs are compared through
gauge-invariant quantities (absolute values of the vectors, reconstructions). Ops that read
only one triangle of a Hermitian input (cholesky, eigh, eigvalsh) are tested through
``A -> (A + A^T) / 2`` on all sides, as PyTorch's own OpInfos do, so that finite differences
along non-symmetric directions agree with the (symmetric) analytic gradient.
"""

from __future__ import annotations

import math

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, exempt, register
from ._samples import uniform

FLOATS = (tx.float32, tx.float64)
WITH_INT = (tx.float32, tx.float64, tx.int64)
LOWP = (tx.float32, tx.float64, tx.bfloat16, tx.float16)
LOWP_TOL = {"bfloat16": (3e-2, 3e-2), "float16": (3e-3, 3e-3)}


# -- sample matrices ---------------------------------------------------------------------------
def orthogonal(rng, batch, n):
    q, r = np.linalg.qr(rng.standard_normal(tuple(batch) + (n, n)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def well_conditioned(rng, shape, low=1.0, high=3.0):
    """``U diag(s) V^T`` with singular values in [low, high]: condition number <= high/low."""
    *batch, m, n = shape
    k = min(m, n)
    s = rng.uniform(low, high, size=tuple(batch) + (k,))
    u = orthogonal(rng, batch, m)[..., :k]
    v = orthogonal(rng, batch, n)[..., :k]
    return (u * s[..., None, :]) @ np.swapaxes(v, -1, -2)


def spread(rng, batch, k, low, high):
    """k values spread evenly over [low, high] with a little jitter (gaps >= 60% of even)."""
    base = np.linspace(low, high, k) if k > 1 else np.array([(low + high) / 2])
    step = (high - low) / max(k - 1, 1)
    return base + rng.uniform(-0.2, 0.2, size=tuple(batch) + (k,)) * step


def distinct_svals(rng, shape):
    """A matrix with well separated singular values in [1, 3] (svd gradients need gaps)."""
    *batch, m, n = shape
    k = min(m, n)
    s = spread(rng, batch, k, 1.0, 3.0)
    u = orthogonal(rng, batch, m)[..., :k]
    v = orthogonal(rng, batch, n)[..., :k]
    return (u * s[..., None, :]) @ np.swapaxes(v, -1, -2)


def spd(rng, shape, low=1.0, high=3.0):
    *batch, n, _ = shape
    q = orthogonal(rng, batch, n)
    return (q * rng.uniform(low, high, size=tuple(batch) + (n,))[..., None, :]) @ \
        np.swapaxes(q, -1, -2)


def symmetric_distinct(rng, shape):
    """Symmetric with well separated eigenvalues in [-2, 2]."""
    *batch, n, _ = shape
    q = orthogonal(rng, batch, n)
    return (q * spread(rng, batch, n, -2.0, 2.0)[..., None, :]) @ np.swapaxes(q, -1, -2)


def triangular(rng, shape, upper):
    """A triangle with diagonal magnitudes in [1, 2] and small off-diagonal entries."""
    a = uniform(rng, shape, -0.5, 0.5)
    a = np.triu(a) if upper else np.tril(a)
    n = shape[-1]
    d = rng.uniform(1.0, 2.0, size=shape[:-1]) * rng.choice([-1.0, 1.0], size=shape[:-1])
    a[..., np.arange(n), np.arange(n)] = d
    return a


def rank_deficient(rng, shape, rank):
    *batch, m, n = shape
    return well_conditioned(rng, tuple(batch) + (m, rank)) @ \
        well_conditioned(rng, tuple(batch) + (rank, n))


# -- adapters shared by tensorix, torch and NumPy (all three have .mT, .shape, abs, @) ---------
def hermitian_input(fn):
    """``fn((A + A^T) / 2, ...)``: the op sees a symmetric matrix for any perturbation."""
    def wrapped(a, *args, **kwargs):
        return fn((a + a.mT) / 2, *args, **kwargs)
    return wrapped


def _svd_reduced(fn):
    """svd outputs narrowed to k = min(m, n) (the extra columns of full U/Vh are arbitrary)."""
    def wrapped(a, *args, **kwargs):
        u, s, vh = fn(a, *args, **kwargs)
        k = s.shape[-1]
        return u[..., :k], s, vh[..., :k, :]
    return wrapped


def _torch(name, adapter=None):
    """A lazily resolved torch function (torch is optional), through the same adapter."""
    def fn(*args, **kwargs):
        import torch

        f = torch
        for part in name.split("."):
            f = getattr(f, part)
        return (adapter(f) if adapter else f)(*args, **kwargs)
    return fn


def _svd_invariants(out):
    u, s, vh = out
    return abs(u), s, abs(vh), (u * s[..., None, :]) @ vh


def _eigh_invariants(out):
    w, v = out
    return w, abs(v), (v * w[..., None, :]) @ v.mT


def _qr_invariants(out):
    q, r = out
    return abs(q), abs(r), q @ r


def _lstsq_differentiable(fn):
    """(solution, residuals) only: rank and singular_values are not differentiable (as in
    PyTorch) and are checked against torch in tests/test_linalg.py."""
    def wrapped(a, b, *args, **kwargs):
        return tuple(fn(a, b, *args, **kwargs)[:2])
    return wrapped


def _nonempty(out):
    return tuple(x for x in out if 0 not in tuple(x.shape))


# -- NumPy references with PyTorch's argument conventions ---------------------------------------
def _np_solve(a, b, left=True):
    if not left:
        return np.swapaxes(_np_solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    bb = b[..., None] if vector else b
    batch = np.broadcast_shapes(a.shape[:-2], bb.shape[:-2])
    x = np.linalg.solve(np.broadcast_to(a, batch + a.shape[-2:]),
                        np.broadcast_to(bb, batch + bb.shape[-2:]))
    return x[..., 0] if vector else x


def _np_solve_triangular(a, b, upper, left=True, unitriangular=False):
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        n = t.shape[-1]
        t = t.copy()
        t[..., np.arange(n), np.arange(n)] = 1
    return _np_solve(t, b, left=left)


def _np_vector_norm(x, ord=2, dim=None, keepdim=False):
    return np.linalg.vector_norm(x, ord=ord, axis=dim, keepdims=keepdim)


def _np_matrix_norm(a, ord="fro", dim=(-2, -1), keepdim=False):
    return np.linalg.norm(a, ord=ord, axis=tuple(dim), keepdims=keepdim)


def _np_norm(a, ord=None, dim=None, keepdim=False):
    return np.linalg.norm(a, ord=ord, axis=dim, keepdims=keepdim)


def _np_pinv(a, atol=None, rtol=None, hermitian=False):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    if rtol is None:
        rtol = np.finfo(a.dtype).eps * max(a.shape[-2:]) if not atol else 0.0
    cut = np.maximum(atol or 0.0, rtol * s.max(axis=-1, keepdims=True))
    sinv = np.where(s > cut, 1 / s, 0)
    return (np.swapaxes(vh, -1, -2) * sinv[..., None, :]) @ np.swapaxes(u, -1, -2)


def _np_addmm(i, a, b, beta=1, alpha=1):
    return beta * i + alpha * (a @ b)


def _np_addbmm(i, a, b, beta=1, alpha=1):
    return beta * i + alpha * (a @ b).sum(0)


def _np_addr(i, a, b, beta=1, alpha=1):
    return beta * i + alpha * np.outer(a, b)


def _np_matrix_power(a, n):
    return np.linalg.matrix_power(a, n)


def _np_logdet(a):
    sign, logabs = np.linalg.slogdet(a)
    return np.where(sign < 0, np.nan, logabs)


def _np_diagonal(a, offset=0, dim1=-2, dim2=-1):
    return np.diagonal(a, offset, dim1, dim2)


# -- sample generators ----------------------------------------------------------------------------
def _matmul_samples(rng, dtype):
    pairs = [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
             ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2))]
    return [Sample((uniform(rng, a), uniform(rng, b))) for a, b in pairs]


def _square(gen, shapes=((3, 3), (2, 3, 3), (1, 1))):
    def samples(rng, dtype):
        return [Sample((gen(rng, s),)) for s in shapes]
    return samples


def _solve_samples(rng, dtype):
    w = well_conditioned
    return [Sample((w(rng, (3, 3)), uniform(rng, (3, 2)))),
            Sample((w(rng, (2, 3, 3)), uniform(rng, (3,)))),
            Sample((w(rng, (2, 3, 3)), uniform(rng, (2, 3)))),
            Sample((w(rng, (2, 1, 3, 3)), uniform(rng, (4, 3, 2)))),
            Sample((w(rng, (3, 3)), uniform(rng, (2, 3))), {"left": False})]


def _solve_triangular_samples(rng, dtype):
    t = triangular
    return [Sample((t(rng, (3, 3), True), uniform(rng, (3, 2))), {"upper": True}),
            Sample((t(rng, (2, 3, 3), False), uniform(rng, (3, 4))), {"upper": False}),
            Sample((t(rng, (3, 3), False), uniform(rng, (2, 3))),
                   {"upper": False, "left": False}),
            Sample((t(rng, (3, 3), True), uniform(rng, (3, 1))),
                   {"upper": True, "unitriangular": True})]


def _cholesky_samples(rng, dtype):
    return [Sample((spd(rng, (3, 3)),)), Sample((spd(rng, (2, 4, 4)),), {"upper": True}),
            Sample((spd(rng, (1, 1)),))]


def _qr_samples(rng, dtype):
    d = distinct_svals
    return [Sample((d(rng, (4, 3)),)), Sample((d(rng, (2, 3, 3)),), {"mode": "complete"}),
            Sample((d(rng, (3, 5)),), {"mode": "reduced"})]


def _svd_samples(rng, dtype):
    d = distinct_svals
    return [Sample((d(rng, (4, 3)),), {"full_matrices": False}),
            Sample((d(rng, (3, 4)),), {"full_matrices": False}),
            Sample((d(rng, (2, 3, 3)),)), Sample((d(rng, (4, 2)),), {"full_matrices": True})]


def _svdvals_samples(rng, dtype):
    return [Sample((distinct_svals(rng, s),)) for s in ((4, 3), (2, 3, 4), (3, 3))]


def _eigh_samples(rng, dtype):
    s = symmetric_distinct
    return [Sample((s(rng, (3, 3)),)), Sample((s(rng, (2, 4, 4)),), {"UPLO": "U"}),
            Sample((s(rng, (1, 1)),))]


def _pinv_samples(rng, dtype):
    w = well_conditioned
    return [Sample((w(rng, (4, 3)),)), Sample((w(rng, (3, 4)),)), Sample((w(rng, (2, 3, 3)),)),
            Sample((w(rng, (3, 2)),), {"rtol": 1e-3})]


def _lstsq_samples(rng, dtype):
    w = well_conditioned
    return [Sample((w(rng, (5, 3)), uniform(rng, (5, 2)))),
            Sample((w(rng, (5, 3)), uniform(rng, (5,)))),
            Sample((w(rng, (2, 4, 3)), uniform(rng, (2, 4, 2))), {"driver": "gelsd"}),
            Sample((w(rng, (3, 4)), uniform(rng, (3, 2))), {"driver": "gelss"})]


def _matrix_rank_samples(rng, dtype):
    r = rank_deficient
    return [Sample((well_conditioned(rng, (4, 3)),)),
            Sample((r(rng, (2, 4, 4), 2),), {"rtol": 1e-3}),
            Sample((r(rng, (3, 5), 1),), {"atol": 1e-3}),
            Sample((spd(rng, (3, 3)),), {"hermitian": True})]


def _vector_norm_samples(rng, dtype):
    x = uniform(rng, (2, 3, 4))
    out = [Sample((x,), {"ord": o}) for o in (2, 1, math.inf, -math.inf, 0, 3, 0.5, -1.5)]
    out += [Sample((x,), {"dim": 1}), Sample((x,), {"dim": (0, 2), "keepdim": True}),
            Sample((x,), {"ord": math.inf, "dim": -1}), Sample((uniform(rng, (5,)),))]
    return out


def _matrix_norm_samples(rng, dtype):
    a = distinct_svals(rng, (3, 4))
    out = [Sample((a,), {"ord": o}) for o in ("fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf)]
    b = distinct_svals(rng, (2, 3, 3)).transpose(1, 0, 2).copy()
    out += [Sample((b,), {"ord": "nuc", "dim": (0, 2)}),
            Sample((b,), {"ord": 1, "dim": (2, 0), "keepdim": True}),
            Sample((b,), {"ord": math.inf, "keepdim": True})]
    return out


def _norm_samples(rng, dtype):
    x = distinct_svals(rng, (3, 4))
    return [Sample((uniform(rng, (2, 3, 4)),)), Sample((x,), {"ord": "nuc"}),
            Sample((uniform(rng, (5,)),), {"ord": 3}), Sample((x,), {"dim": 1, "ord": 1}),
            Sample((uniform(rng, (2, 3, 4)),), {"dim": (0, 2)})]


def _cond_samples(rng, dtype):
    w = well_conditioned
    return [Sample((w(rng, (3, 3)),)), Sample((w(rng, (4, 3)),), {"p": -2}),
            Sample((w(rng, (2, 3, 3)),), {"p": "fro"}), Sample((w(rng, (3, 3)),), {"p": 1}),
            Sample((w(rng, (3, 3)),), {"p": math.inf})]


def _cross_samples(rng, dtype):
    return [Sample((uniform(rng, (4, 3)), uniform(rng, (4, 3)))),
            Sample((uniform(rng, (2, 1, 3)), uniform(rng, (1, 4, 3)))),
            Sample((uniform(rng, (3, 2)), uniform(rng, (3, 2))), {"dim": 0})]


def _vecdot_samples(rng, dtype):
    return [Sample((uniform(rng, (4, 3)), uniform(rng, (3,)))),
            Sample((uniform(rng, (2, 3)), uniform(rng, (2, 3))), {"dim": 0})]


def _diagonal_samples(rng, dtype):
    x = uniform(rng, (2, 3, 4))
    return [Sample((x,)), Sample((x,), {"offset": 1}), Sample((x,), {"offset": -1}),
            Sample((x,), {"dim1": 0, "dim2": 2, "offset": 2})]


def _multi_dot_samples(rng, dtype):
    u = uniform
    return [Sample((u(rng, (3, 4)), u(rng, (4, 2)))),
            Sample((u(rng, (4,)), u(rng, (4, 5)), u(rng, (5, 2)), u(rng, (2, 3)))),
            Sample((u(rng, (2, 3)), u(rng, (3, 6)), u(rng, (6,))))]


def _chain_samples(rng, dtype):
    u = uniform
    return [Sample((u(rng, (3, 4)), u(rng, (4, 2)))),
            Sample((u(rng, (1, 4)), u(rng, (4, 5)), u(rng, (5, 2)), u(rng, (2, 3))))]


def _pairs(*shape_pairs, **kw):
    def samples(rng, dtype):
        return [Sample((uniform(rng, a), uniform(rng, b)), dict(kw)) for a, b in shape_pairs]
    return samples


def _tensordot_samples(rng, dtype):
    u = uniform
    return [Sample((u(rng, (2, 3, 4)), u(rng, (3, 4, 5)))),
            Sample((u(rng, (2, 3, 4)), u(rng, (4, 3, 5))), {"dims": ([1, 2], [1, 0])}),
            Sample((u(rng, (3, 4)), u(rng, (2, 5))), {"dims": 0}),
            Sample((u(rng, (3, 4)), u(rng, (4, 3))), {"dims": ([0], [1])})]


def _add_product_samples(shape_in, shape_a, shape_b):
    def samples(rng, dtype):
        args = (uniform(rng, shape_in), uniform(rng, shape_a), uniform(rng, shape_b))
        bcast = (uniform(rng, shape_in[-1:]),) + args[1:]
        return [Sample(args), Sample(args, {"beta": 0.5, "alpha": -2.0}),
                Sample(bcast, {"beta": 0, "alpha": 1.5})]
    return samples


def _trace_samples(rng, dtype):
    return [Sample((uniform(rng, (3, 3)),)), Sample((uniform(rng, (3, 5)),))]


def _matrix_power_samples(rng, dtype):
    w = well_conditioned(rng, (2, 3, 3), 0.7, 1.3)
    return [Sample((w, n)) for n in (2, -3, 0, 1, 5, -1)]


_INV = dict(dtypes=FLOATS, gradgrad=True)
_LA = tx.linalg

register(
    OpInfo("matmul", _matmul_samples, np.matmul, gradgrad=True, aliases=("linalg.matmul",),
           dtypes=(tx.float32, tx.float64, tx.bfloat16, tx.float16), tol=LOWP_TOL),
    OpInfo("mm", lambda r, d: [Sample((uniform(r, (3, 4)), uniform(r, (4, 2))))], np.matmul),
    OpInfo("bmm", lambda r, d: [Sample((uniform(r, (2, 3, 4)), uniform(r, (2, 4, 2))))],
           np.matmul),
    # products built on matmul
    OpInfo("dot", _pairs(((5,), (5,))), np.dot, dtypes=WITH_INT, gradgrad=True),
    OpInfo("vdot", _pairs(((5,), (5,))), np.vdot, dtypes=WITH_INT),
    OpInfo("inner", _pairs(((2, 3), (4, 3)), ((3,), (3,)), ((), (2, 3)), ((2, 1, 3), (3,))),
           np.inner, dtypes=WITH_INT),
    OpInfo("outer", _pairs(((3,), (4,))), np.outer, dtypes=WITH_INT, aliases=("ger",)),
    OpInfo("tensordot", _tensordot_samples,
           lambda a, b, dims=2: np.tensordot(a, b, axes=dims), dtypes=WITH_INT),
    OpInfo("kron", _pairs(((2, 3), (3, 2)), ((2,), (3, 2)), ((2, 1, 2), (2, 3))), np.kron,
           dtypes=WITH_INT, gradgrad=True),
    OpInfo("mv", _pairs(((3, 4), (4,))), np.matmul),
    OpInfo("addmm", _add_product_samples((3, 2), (3, 4), (4, 2)), _np_addmm),
    OpInfo("addmv", _add_product_samples((3,), (3, 4), (4,)), _np_addmm),
    OpInfo("addr", _add_product_samples((3, 4), (3,), (4,)), _np_addr),
    OpInfo("baddbmm", _add_product_samples((2, 3, 2), (2, 3, 4), (2, 4, 2)), _np_addmm),
    OpInfo("addbmm", _add_product_samples((3, 2), (2, 3, 4), (2, 4, 2)), _np_addbmm),
    OpInfo("trace", _trace_samples, lambda a: np.trace(a), dtypes=WITH_INT),
    OpInfo("matrix_power", _matrix_power_samples, _np_matrix_power, gradgrad=True,
           aliases=("linalg.matrix_power",)),
    OpInfo("chain_matmul", _chain_samples, lambda *ms: np.linalg.multi_dot(ms),
           torch=lambda *ms: _torch("linalg.multi_dot")(ms)),
    OpInfo("logdet", _square(lambda r, s: spd(r, s)), _np_logdet),
    OpInfo("pinverse", lambda r, d: [Sample((well_conditioned(r, (4, 3)),))],
           lambda a: _np_pinv(a, rtol=1e-15)),
    # tensorix.linalg
    OpInfo("linalg.inv", _square(well_conditioned), np.linalg.inv, aliases=("inverse",), **_INV),
    OpInfo("linalg.det", _square(well_conditioned), np.linalg.det, aliases=("det",), **_INV),
    OpInfo("linalg.slogdet", _square(well_conditioned), np.linalg.slogdet,
           aliases=("slogdet",), output=lambda r: (r[1], r[0] > 0), **_INV),
    OpInfo("linalg.solve", _solve_samples, _np_solve, **_INV),
    OpInfo("linalg.solve_triangular", _solve_triangular_samples, _np_solve_triangular,
           **_INV),
    OpInfo("linalg.cholesky", _cholesky_samples, hermitian_input(np.linalg.cholesky),
           op=hermitian_input(_LA.cholesky), torch=_torch("linalg.cholesky", hermitian_input),
           **_INV),
    OpInfo("linalg.qr", _qr_samples, np.linalg.qr, output=_qr_invariants, **_INV),
    OpInfo("linalg.svd", _svd_samples, _svd_reduced(np.linalg.svd), op=_svd_reduced(_LA.svd),
           torch=_torch("linalg.svd", _svd_reduced), output=_svd_invariants, **_INV),
    OpInfo("linalg.svdvals", _svdvals_samples, lambda a: np.linalg.svd(a, compute_uv=False),
           **_INV),
    OpInfo("linalg.eigh", _eigh_samples, hermitian_input(np.linalg.eigh),
           op=hermitian_input(_LA.eigh), torch=_torch("linalg.eigh", hermitian_input),
           output=_eigh_invariants, **_INV),
    OpInfo("linalg.eigvalsh", _eigh_samples, hermitian_input(np.linalg.eigvalsh),
           op=hermitian_input(_LA.eigvalsh),
           torch=_torch("linalg.eigvalsh", hermitian_input), **_INV),
    OpInfo("linalg.pinv", _pinv_samples, _np_pinv, **_INV),
    OpInfo("linalg.lstsq", _lstsq_samples, None, op=_lstsq_differentiable(_LA.lstsq),
           torch=_torch("linalg.lstsq", _lstsq_differentiable), output=_nonempty, **_INV),
    OpInfo("linalg.matrix_rank", _matrix_rank_samples,
           lambda a, atol=None, rtol=None, hermitian=False: np.linalg.matrix_rank(
               a, atol, hermitian, rtol=rtol),
           grad=False, dtypes=FLOATS),
    OpInfo("linalg.vector_norm", _vector_norm_samples, _np_vector_norm, gradgrad=True,
           dtypes=LOWP, tol=LOWP_TOL),
    OpInfo("linalg.matrix_norm", _matrix_norm_samples, _np_matrix_norm, **_INV),
    OpInfo("linalg.norm", _norm_samples, _np_norm, dtypes=FLOATS),
    # torch's own cond backward fails for p='fro' ("modified by an inplace operation" in its
    # inv_ex), so cond's gradient is checked by gradcheck only
    OpInfo("linalg.cond", _cond_samples, lambda a, p=None: np.linalg.cond(a, p),
           dtypes=FLOATS, skip_torch_grad=True),
    OpInfo("linalg.multi_dot", _multi_dot_samples, lambda *ms: np.linalg.multi_dot(ms),
           op=lambda *ms: _LA.multi_dot(ms),
           torch=lambda *ms: _torch("linalg.multi_dot")(ms)),
    OpInfo("linalg.cross", _cross_samples,
           lambda a, b, dim=-1: np.cross(a, b, axis=dim), dtypes=WITH_INT, gradgrad=True),
    OpInfo("linalg.vecdot", _vecdot_samples,
           lambda x, y, dim=-1: (np.conj(x) * y).sum(dim)),
    OpInfo("linalg.diagonal", _diagonal_samples, _np_diagonal, dtypes=WITH_INT),
)

exempt("the exception class of tensorix.linalg, tested in tests/test_linalg.py",
       "linalg.LinAlgError")
