"""Unit scaling (Blake, Orr, Luschi, ICML 2023; spec 6): ops whose outputs *and* gradients have
unit variance when their inputs and incoming gradients do, so fp16/fp8 train without loss
scaling.

The primitive pair is :func:`scale_fwd` (scales the forward value only) and :func:`scale_bwd`
(scales the gradient only). A unit-scaled op is ``scale_fwd(op(scale_bwd(x, beta)), alpha)``.
For an input that is not a cut-edge of the graph, alpha and beta must agree or the gradients
stop being proportional to the true ones; a ``constraint`` ties them:

* ``"to_output_scale"`` (default, the library default of unit-scaling 0.3.5): beta := alpha;
* ``"to_grad_input_scale"``: alpha := beta;  ``"gmean"`` / ``"hmean"`` / ``"amean"``: both
  := their geometric / harmonic / arithmetic mean;  ``None``: separate scales (weights and
  other cut edges always keep their own).

Scales: matmul ``(m, k) @ (k, n)``: output k^-1/2, left grad n^-1/2, right grad m^-1/2;
linear: output fan_in^-1/2, input grad fan_out^-1/2, weight/bias grad batch^-1/2; add: 2^-1/2;
residual_add(tau): weights tau/sqrt(1+tau^2) and 1/sqrt(1+tau^2) (the backward share is applied
in residual_split); gelu/silu: 1/std of f(Z) and 1/rms of f'(Z) for Z ~ N(0, 1), computed here
by Gauss-Hermite quadrature; softmax: dim/1.31 and dim/1.65 (unit-scaling's empirical factors);
dropout: sqrt(1-p); cross_entropy: input grad V/sqrt(V-1), the summed loss scaled by 1/batch in
forward only; mse_loss likewise with input grad 1/(2 sqrt 2).

Example::

    y = unit_linear(x, w)          # x: (b, fan_in), w: (fan_out, fan_in) with unit variance
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .. import ops
from ..autograd.function import Function
from ..tensor import Tensor

__all__ = ["scale_fwd", "scale_bwd", "apply_constraint", "unit_matmul", "unit_linear",
           "unit_add", "residual_split", "residual_add", "unit_gelu", "unit_silu",
           "unit_softmax", "unit_dropout", "unit_cross_entropy", "unit_mse_loss",
           "CONSTRAINTS"]


class _ScaleFwd(Function):
    @staticmethod
    def forward(ctx, x, s):
        return x._data * x._data.dtype.type(s)

    @staticmethod
    def backward(ctx, g):
        return g, None


class _ScaleBwd(Function):
    @staticmethod
    def forward(ctx, x, s):
        ctx.s = s
        return x._data

    @staticmethod
    def backward(ctx, g):
        return g * ctx.s, None


def scale_fwd(x: Tensor, s: float) -> Tensor:
    """``x * s`` in the forward pass; the gradient passes unscaled."""
    return _ScaleFwd.apply(x, float(s))


def scale_bwd(x: Tensor, s: float) -> Tensor:
    """``x`` unchanged in the forward pass; the gradient is multiplied by ``s``."""
    return _ScaleBwd.apply(x, float(s))


CONSTRAINTS = {
    None: lambda *s: s,
    "to_output_scale": lambda *s: (s[0],) * len(s),
    "to_grad_input_scale": lambda *s: (s[1],) * len(s),
    "gmean": lambda *s: (math.prod(s) ** (1 / len(s)),) * len(s),
    "hmean": lambda *s: (len(s) / sum(1 / v for v in s),) * len(s),
    "amean": lambda *s: (sum(s) / len(s),) * len(s),
}


def apply_constraint(constraint, *scales):
    """Tie an output scale and grad scales by ``constraint`` (a name in ``CONSTRAINTS``)."""
    if constraint not in CONSTRAINTS:
        raise ValueError(f"unit scaling: unknown constraint {constraint!r}; expected one of "
                         f"{[c for c in CONSTRAINTS if c]} or None")
    return CONSTRAINTS[constraint](*scales)


def unit_matmul(left, right, constraint="to_output_scale") -> Tensor:
    """Unit-scaled ``left @ right`` for ``(..., m, k) @ (k, n)`` (or batched ``right``)."""
    k, n = left.shape[-1], right.shape[-1]
    m = left.numel() // k
    a, bl, br = apply_constraint(constraint, k ** -0.5, n ** -0.5, m ** -0.5)
    return scale_fwd(scale_bwd(left, bl) @ scale_bwd(right, br), a)


def unit_linear(x, weight, bias=None, constraint="to_output_scale") -> Tensor:
    """Unit-scaled ``x @ weight.T + bias``; ``weight`` is ``(fan_out, fan_in)``. The weight and
    bias are cut edges: their grad scale batch^-1/2 is never constrained."""
    fan_out, fan_in = weight.shape
    batch = x.numel() // fan_in
    a, bx = apply_constraint(constraint, fan_in ** -0.5, fan_out ** -0.5)
    y = scale_bwd(x, bx) @ scale_bwd(weight, batch ** -0.5).mT
    if bias is not None:
        y = y + scale_bwd(bias, batch ** -0.5)  # scaled with the output, as unit-scaling does
    return scale_fwd(y, a)


def unit_add(a, b, constraint="to_output_scale") -> Tensor:
    """Unit-scaled ``a + b``: output scale 2^-1/2."""
    s, ga, gb = apply_constraint(constraint, 2 ** -0.5, 1.0, 1.0)
    return scale_fwd(scale_bwd(a, ga) + scale_bwd(b, gb), s)


def residual_split(x, tau=1.0):
    """``(residual, skip)`` views of ``x`` for a residual block; their gradients are weighted
    tau/sqrt(1+tau^2) and 1/sqrt(1+tau^2) so the gradient into ``x`` stays unit."""
    n = math.sqrt(1 + tau * tau)
    return scale_bwd(x, tau / n), scale_bwd(x, 1 / n)


def residual_add(residual, skip, tau=1.0) -> Tensor:
    """``tau/sqrt(1+tau^2) residual + 1/sqrt(1+tau^2) skip`` in the forward pass only."""
    n = math.sqrt(1 + tau * tau)
    return scale_fwd(residual, tau / n) + scale_fwd(skip, 1 / n)


@functools.cache
def _unit_stats(name):
    """(std of f(Z), rms of f'(Z)) for Z ~ N(0,1) by 200-point Gauss-Hermite quadrature."""
    t, w = np.polynomial.hermite_e.hermegauss(200)
    w = w / w.sum()
    phi = np.exp(-t * t / 2) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1 + np.vectorize(math.erf)(t / math.sqrt(2)))
    if name == "gelu":
        f, df = t * cdf, cdf + t * phi
    else:  # silu
        sig = 1 / (1 + np.exp(-t))
        f, df = t * sig, sig * (1 + t * (1 - sig))
    mean = (w * f).sum()
    return math.sqrt((w * (f - mean) ** 2).sum()), math.sqrt((w * df * df).sum())


def _scaled_elementwise(fn, x, out_scale, grad_scale, constraint):
    a, b = apply_constraint(constraint, out_scale, grad_scale)
    return scale_fwd(fn(scale_bwd(x, b)), a)


def unit_gelu(x, constraint="to_output_scale") -> Tensor:
    """Unit-scaled exact GELU ``x * Phi(x)``."""
    s, d = _unit_stats("gelu")
    return _scaled_elementwise(lambda v: v * 0.5 * (1 + ops.erf(v * 2 ** -0.5)), x, 1 / s,
                               1 / d, constraint)


def unit_silu(x, constraint="to_output_scale") -> Tensor:
    """Unit-scaled SiLU ``x * sigmoid(x)``."""
    s, d = _unit_stats("silu")
    return _scaled_elementwise(lambda v: v * ops.sigmoid(v), x, 1 / s, 1 / d, constraint)


def _softmax(x, dim):
    z = x - ops.amax(x.detach(), dim=dim, keepdim=True)
    e = ops.exp(z)
    return e / e.sum(dim=dim, keepdim=True)


def unit_softmax(x, dim=-1, constraint="to_output_scale") -> Tensor:
    """Unit-scaled softmax along ``dim`` (unit-scaling's empirical factors dim/1.31 and
    dim/1.65, for large dims)."""
    n = x.shape[dim]
    return _scaled_elementwise(lambda v: _softmax(v, dim), x, n / 1.31, n / 1.65, constraint)


def unit_dropout(x, p=0.5, training=True, generator=None) -> Tensor:
    """Dropout keeping unit variance: the usual 1/(1-p) rescale times sqrt(1-p)."""
    if not 0 <= p < 1:
        raise ValueError(f"unit_dropout(): p must be in [0, 1), got {p}")
    if not training or p == 0:
        return x
    keep = ops.rand(*x.shape, generator=generator, device=x.device) >= p
    s = (1 - p) ** 0.5
    return scale_fwd(scale_bwd(x, s) * keep.to(x.dtype) / (1 - p), s)


def unit_cross_entropy(logits, target, reduction="mean") -> Tensor:
    """Unit-scaled cross entropy of ``(batch, V)`` logits and integer targets: the logit
    gradient has unit scale (V/sqrt(V-1)); ``"mean"`` divides in the forward pass only."""
    if logits.ndim != 2:
        raise ValueError(f"unit_cross_entropy(): logits must be (batch, V), got "
                         f"{tuple(logits.shape)}")
    batch, vocab = logits.shape
    x = scale_bwd(logits, vocab / math.sqrt(vocab - 1))
    lse = ops.logsumexp(x, dim=-1)
    picked = ops.gather(x, 1, target.reshape(-1, 1).to(np.int64)).reshape(-1)
    loss = (lse - picked).sum()
    return scale_fwd(loss, 1 / batch) if reduction == "mean" else loss


def unit_mse_loss(input, target, reduction="mean") -> Tensor:
    """Unit-scaled mean squared error: the input gradient of the summed loss, 2 (x - t), is
    scaled by 1/(2 sqrt 2) (unit for independent unit-variance x and t)."""
    d = scale_bwd(input, 1 / (2 * math.sqrt(2))) - target
    loss = (d * d).sum()
    return scale_fwd(loss, 1 / input.numel()) if reduction == "mean" else loss
