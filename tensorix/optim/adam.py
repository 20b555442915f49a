"""Adam and AdamW (with amsgrad, maximize), PyTorch's update rule."""

from __future__ import annotations

import math

from .. import kernels
from ..backend import array_module, get_device
from .optimizer import Optimizer, as_real, check_betas, check_nonneg, decayed_grad, zero_state

__all__ = ["Adam", "AdamW", "adam_update"]

_KERNELS = (kernels.cuda.adam,)  # the update in one pass, per device (none on the CPU)


def adam_update(p, g, m, v, vmax, step, *, lr, beta1, beta2, eps, weight_decay, decoupled,
                amsgrad, maximize):
    """One Adam(W) step on raw arrays, in place (``step`` counts from 1)."""
    fused = None if amsgrad else kernels.select(_KERNELS, get_device(p), p.dtype)
    if fused is not None and g.dtype == p.dtype:  # one pass over p, g, m, v on the device
        fused(p, g, m, v, step, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
              weight_decay=weight_decay, decoupled=decoupled, maximize=maximize)
        return
    xp = array_module(p)
    g = decayed_grad(p, g, lr=lr, weight_decay=weight_decay, maximize=maximize,
                     decoupled=decoupled)
    # in place, with few temporaries: the update runs for every parameter on every step
    m *= beta1
    m += (1 - beta1) * g
    sq = xp.multiply(g, g, out=xp.empty_like(g))  # an array even for 0-d parameters
    sq *= 1 - beta2
    v *= beta2
    v += sq
    bc1 = 1 - beta1 ** step
    bc2_sqrt = math.sqrt(1 - beta2 ** step)
    if amsgrad:
        xp.maximum(vmax, v, out=vmax)
    denom = xp.sqrt(vmax if amsgrad else v, out=sq)
    denom /= bc2_sqrt
    denom += eps
    step_dir = xp.divide(m, denom, out=denom)
    step_dir *= lr / bc1
    p -= step_dir


class Adam(Optimizer):
    """Adam (Kingma & Ba). ``weight_decay`` adds L2 to the gradient; use AdamW for decoupled
    decay. Example: ``Adam(model.parameters(), lr=1e-3)``."""

    _per_parameter = True  # step() may update parts of the list at once

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, *, maximize=False):
        name = type(self).__name__
        check_nonneg(name, lr=lr, eps=eps)
        betas = check_betas(name, betas)
        check_nonneg(name, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    def _update(self, group, params):
        beta1, beta2 = group["betas"]
        for p in params:
            amsgrad = ("max_exp_avg_sq",) if group["amsgrad"] else ()
            st = zero_state(self.state[p], p, ("exp_avg", "exp_avg_sq") + amsgrad)
            st["step"] += 1
            vmax = st.get("max_exp_avg_sq")
            adam_update(as_real(p._data), as_real(p.grad._data), as_real(st["exp_avg"]._data),
                        as_real(st["exp_avg_sq"]._data),
                        None if vmax is None else as_real(vmax._data), st["step"], lr=group["lr"],
                        beta1=beta1, beta2=beta2, eps=group["eps"],
                        weight_decay=group["weight_decay"], decoupled=self._decoupled,
                        amsgrad=group["amsgrad"], maximize=group["maximize"])
            p._version[0] += 1


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter); default decay 0.01."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
