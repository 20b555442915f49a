"""Standard gamma samples with implicit reparameterization gradients (Figurnov et al. 2018),
the way torch's ``_standard_gamma`` differentiates them.

A sample ``x ~ Gamma(alpha, 1)`` is a deterministic function of ``alpha`` and of the uniform
``u = P(alpha, x)`` behind it (``P`` the regularized lower incomplete gamma). Holding ``u``
fixed, ``dx/dalpha = -(dP/dalpha) / (dP/dx)``, where ``dP/dx`` is the gamma density. ``dP/dalpha``
has no closed form; it is a central difference of the float64 ``igamma`` kernel, with a
relative step that keeps its error near 1e-8 (below the Monte Carlo noise of any use).
Scaled gammas (``rate``), Beta and Dirichlet samples are differentiable functions of these.
"""

from __future__ import annotations

import numpy as np

from .. import backend
from ..autograd.function import Function, once_differentiable
from ..ops.random import _gen, _out
from ..ops.special import igamma_kernel, lgamma_kernel
from ..tensor import Tensor, _make

__all__ = ["standard_gamma"]


class StandardGamma(Function):
    @staticmethod
    def forward(ctx, alpha, generator):
        a = np.asarray(alpha.__array__(), dtype=np.float64)
        x = _gen(generator, "standard_gamma", alpha.device).standard_gamma(a)
        out = _out(x, alpha.dtype, alpha.device, False)
        ctx.save_for_backward(alpha, out)
        return out

    @staticmethod
    @once_differentiable  # the implicit gradient is not itself differentiated
    def backward(ctx, g):
        alpha, x = ctx.saved_tensors
        xp = x.xp
        a, v = alpha._data.astype(np.float64), x._data.astype(np.float64)
        h = 1e-4 * a
        dp_da = (igamma_kernel(a + h, v, False) - igamma_kernel(a - h, v, False)) / (2 * h)
        with backend.quiet():
            log_density = (a - 1) * xp.log(v) - v - lgamma_kernel(a)
            dx_da = -dp_da * xp.exp(-log_density)
        dx_da = xp.where(xp.isfinite(dx_da), dx_da, 0.0).astype(x._data.dtype)
        return g * _make(dx_da), None


def standard_gamma(alpha: Tensor, generator=None) -> Tensor:
    """Samples of ``Gamma(alpha, 1)`` in ``alpha``'s shape and dtype, differentiable in
    ``alpha`` through the implicit reparameterization gradient."""
    return StandardGamma.apply(alpha, generator)
