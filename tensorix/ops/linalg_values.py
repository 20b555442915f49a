"""The value-only decompositions as primitives: singular values (``SVDVals``) and Hermitian
eigenvalues (``Eigvalsh``) without their vectors, the no-grad paths of ``linalg.svdvals`` and
``linalg.eigvalsh`` (and so of ``linalg.cond``). As wrapped raw arrays, a compiled call kept
the example's values; as primitives a traced graph recomputes them. Their backwards recompute
the vectors with the ``SVD``/``Eigh`` primitives (imported where used: linalg_decomp imports
this module), so they are differentiable to any order."""

from __future__ import annotations

from ..autograd.function import Function

__all__ = ["SVDVals", "Eigvalsh"]


class SVDVals(Function):
    """Singular values alone (no U, Vh): the no-grad path of svdvals, a primitive so that a
    compiled call recomputes them (they were wrapped raw arrays, the trace kept the example's).
    Its backward recomputes U and Vh with SVD, so it is differentiable to any order."""

    @staticmethod
    def forward(ctx, a):
        from .linalg_decomp import _svd

        ctx.save_for_backward(a)
        return _svd(a.xp, a._data, compute_uv=False)

    @staticmethod
    def backward(ctx, g):
        from .linalg_decomp import SVD

        (a,) = ctx.saved_tensors
        u, _, vh = SVD.apply(a, False)
        return (u * g.unsqueeze(-2)) @ vh


class Eigvalsh(Function):
    """Eigenvalues alone: the no-grad path of eigvalsh, a primitive (a compiled call kept the
    example's eigenvalues when they were a wrapped raw array); its backward recomputes the
    eigenvectors with Eigh, so it is differentiable to any order."""

    @staticmethod
    def forward(ctx, a, uplo):
        ctx.save_for_backward(a)
        ctx.uplo = uplo
        return a.xp.linalg.eigvalsh(a._data, UPLO=uplo)

    @staticmethod
    def backward(ctx, g):
        from .linalg_decomp import Eigh

        (a,) = ctx.saved_tensors
        _, v = Eigh.apply(a, ctx.uplo)
        return (v * g.unsqueeze(-2)) @ v.mH, None
