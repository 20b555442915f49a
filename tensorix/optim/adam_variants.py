"""Adamax, NAdam and RAdam: Adam's relatives, with PyTorch's update rules (``maximize``, L2 or
decoupled ``weight_decay``)."""

from __future__ import annotations

import math

from ..backend import array_module
from ..dtypes import get_default_dtype
from ..tensor import _make
from .optimizer import (
    Optimizer,
    as_real,
    check_betas,
    check_hparam,
    check_nonneg,
    decayed_grad,
    zero_state,
)

__all__ = ["Adamax", "NAdam", "RAdam", "adamax_update", "nadam_update", "radam_update"]


def _check_common(name, lr, eps, betas, weight_decay):
    check_nonneg(name, lr=lr, eps=eps, weight_decay=weight_decay)
    return check_betas(name, betas)


def adamax_update(p, g, exp_avg, exp_inf, step, *, lr, beta1, beta2, eps, weight_decay,
                  maximize):
    """One Adamax step (Adam with an infinity-norm second moment) on raw arrays, in place."""
    xp = array_module(p)
    g = decayed_grad(p, g, lr=lr, weight_decay=weight_decay, maximize=maximize)
    exp_avg += (1 - beta1) * (g - exp_avg)
    exp_inf *= beta2
    xp.maximum(exp_inf, xp.abs(g) + eps, out=exp_inf)
    p -= (lr / (1 - beta1 ** step)) * (exp_avg / exp_inf)


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, sec. 7). Example: ``Adamax(model.parameters(), lr=2e-3)``."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, *,
                 maximize=False):
        betas = _check_common("Adamax", lr, eps, betas, weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize))

    def _update(self, group, params):
        beta1, beta2 = group["betas"]
        for p in params:
            st = zero_state(self.state[p], p, ("exp_avg", "exp_inf"))
            st["step"] += 1
            adamax_update(as_real(p._data), as_real(p.grad._data), as_real(st["exp_avg"]._data),
                          as_real(st["exp_inf"]._data), st["step"], lr=group["lr"],
                          beta1=beta1, beta2=beta2, eps=group["eps"],
                          weight_decay=group["weight_decay"], maximize=group["maximize"])
            p._version[0] += 1


def nadam_update(p, g, exp_avg, exp_avg_sq, mu_product, step, *, lr, beta1, beta2, eps,
                 weight_decay, momentum_decay, decoupled_weight_decay, maximize):
    """One NAdam step on raw arrays, in place. ``mu_product`` is a 0-d array holding the
    product of the momentum coefficients so far (updated in place, in its own precision, as
    PyTorch keeps it in a float32 scalar tensor)."""
    xp = array_module(p)
    g = decayed_grad(p, g, lr=lr, weight_decay=weight_decay, maximize=maximize,
                     decoupled=decoupled_weight_decay)
    mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
    mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
    mu_product *= mu
    mu_prod = float(mu_product)
    mu_prod_next = mu_prod * mu_next
    exp_avg += (1 - beta1) * (g - exp_avg)
    exp_avg_sq *= beta2
    exp_avg_sq += (1 - beta2) * (g * g)
    denom = xp.sqrt(exp_avg_sq / (1 - beta2 ** step))
    denom += eps
    p += (-lr * (1.0 - mu) / (1.0 - mu_prod)) * (g / denom)
    p += (-lr * mu_next / (1.0 - mu_prod_next)) * (exp_avg / denom)


class NAdam(Optimizer):
    """NAdam (Dozat): Adam with Nesterov momentum and a momentum schedule
    (``momentum_decay``). ``decoupled_weight_decay=True`` gives NAdamW.

    Example: ``NAdam(model.parameters(), lr=2e-3, momentum_decay=4e-3)``.
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, maximize=False):
        betas = _check_common("NAdam", lr, eps, betas, weight_decay)
        check_hparam("NAdam", "momentum_decay", momentum_decay, momentum_decay >= 0.0, ">= 0")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize))

    def _update(self, group, params):
        beta1, beta2 = group["betas"]
        for p in params:
            st = self.state[p]
            if not st:
                zero_state(st, p, ("exp_avg", "exp_avg_sq"))
                xp = p.xp
                # float32 like PyTorch's scalar tensor (float64 under a float64 default)
                scalar = "float64" if get_default_dtype().name == "float64" else "float32"
                st["mu_product"] = _make(xp.ones((), dtype=scalar))
            st["step"] += 1
            nadam_update(as_real(p._data), as_real(p.grad._data), as_real(st["exp_avg"]._data),
                         as_real(st["exp_avg_sq"]._data), st["mu_product"]._data, st["step"],
                         lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
                         weight_decay=group["weight_decay"],
                         momentum_decay=group["momentum_decay"],
                         decoupled_weight_decay=group["decoupled_weight_decay"],
                         maximize=group["maximize"])
            p._version[0] += 1


def radam_update(p, g, exp_avg, exp_avg_sq, step, *, lr, beta1, beta2, eps, weight_decay,
                 decoupled_weight_decay, maximize):
    """One RAdam step on raw arrays, in place: the adaptive step is used only once the
    variance of the adaptive learning rate is tractable (rho_t > 5); SGD with momentum
    before."""
    xp = array_module(p)
    g = decayed_grad(p, g, lr=lr, weight_decay=weight_decay, maximize=maximize,
                     decoupled=decoupled_weight_decay)
    exp_avg += (1 - beta1) * (g - exp_avg)
    exp_avg_sq *= beta2
    exp_avg_sq += (1 - beta2) * (g * g)
    bc1 = 1 - beta1 ** step
    bc2 = 1 - beta2 ** step
    corrected = exp_avg / bc1
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * (beta2 ** step) / bc2
    if rho_t > 5.0:
        rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                         ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        adaptive = bc2 ** 0.5 / (xp.sqrt(exp_avg_sq) + eps)
        p -= corrected * lr * adaptive * rect
    else:
        p -= corrected * lr


class RAdam(Optimizer):
    """RAdam (Liu et al.): Adam with a rectified warm-up of the adaptive learning rate.
    ``decoupled_weight_decay=True`` gives RAdamW.

    Example: ``RAdam(model.parameters(), lr=1e-3, weight_decay=0.01,
    decoupled_weight_decay=True)``.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 decoupled_weight_decay=False, *, maximize=False):
        betas = _check_common("RAdam", lr, eps, betas, weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize))

    def _update(self, group, params):
        beta1, beta2 = group["betas"]
        for p in params:
            st = zero_state(self.state[p], p, ("exp_avg", "exp_avg_sq"))
            st["step"] += 1
            radam_update(as_real(p._data), as_real(p.grad._data), as_real(st["exp_avg"]._data),
                         as_real(st["exp_avg_sq"]._data), st["step"], lr=group["lr"],
                         beta1=beta1, beta2=beta2, eps=group["eps"],
                         weight_decay=group["weight_decay"],
                         decoupled_weight_decay=group["decoupled_weight_decay"],
                         maximize=group["maximize"])
            p._version[0] += 1
