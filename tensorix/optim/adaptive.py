"""Adagrad, Adadelta and RMSprop: per-coordinate step sizes from running squared gradients
(PyTorch's update rules, including ``maximize`` and L2 ``weight_decay``)."""

from __future__ import annotations

from ..backend import array_module
from ..tensor import _make
from .optimizer import Optimizer, as_real, check_hparam, check_nonneg, decayed_grad, zero_state

__all__ = ["Adagrad", "Adadelta", "RMSprop", "adagrad_update", "adadelta_update",
           "rmsprop_update"]


def adagrad_update(p, g, state_sum, step, *, lr, lr_decay, weight_decay, eps, maximize):
    """One Adagrad step on raw arrays, in place (``step`` counts from 1)."""
    xp = array_module(p)
    g = decayed_grad(p, g, lr=lr, weight_decay=weight_decay, maximize=maximize)
    clr = lr / (1 + (step - 1) * lr_decay)
    state_sum += g * g
    p -= clr * (g / (xp.sqrt(state_sum) + eps))


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.): steps shrink with the accumulated squared gradient.

    Example: ``Adagrad(model.parameters(), lr=0.01, lr_decay=1e-4)``.
    """

    def __init__(self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0,
                 initial_accumulator_value=0.0, eps=1e-10, *, maximize=False):
        check_nonneg("Adagrad", lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                     initial_accumulator_value=initial_accumulator_value, eps=eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      maximize=maximize))
        # PyTorch creates Adagrad's state eagerly (the accumulator starts at a chosen value)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(group, p)

    def _init_state(self, group, p):
        st = self.state[p]
        if not st:
            xp = p.xp
            st["step"] = 0
            st["sum"] = _make(xp.full_like(p._data, group["initial_accumulator_value"]))
        return st

    def _update(self, group, params):
        for p in params:
            st = self._init_state(group, p)
            st["step"] += 1
            adagrad_update(as_real(p._data), as_real(p.grad._data), as_real(st["sum"]._data),
                           st["step"], lr=group["lr"], lr_decay=group["lr_decay"],
                           weight_decay=group["weight_decay"], eps=group["eps"],
                           maximize=group["maximize"])
            p._version[0] += 1


def adadelta_update(p, g, square_avg, acc_delta, *, lr, rho, eps, weight_decay, maximize):
    """One Adadelta step on raw arrays, in place."""
    xp = array_module(p)
    g = decayed_grad(p, g, lr=lr, weight_decay=weight_decay, maximize=maximize)
    square_avg *= rho
    square_avg += (1 - rho) * (g * g)
    delta = xp.sqrt(acc_delta + eps) / xp.sqrt(square_avg + eps) * g
    acc_delta *= rho
    acc_delta += (1 - rho) * (delta * delta)
    p -= lr * delta


class Adadelta(Optimizer):
    """Adadelta (Zeiler): unit-corrected steps from running averages of squared gradients and
    squared updates. Example: ``Adadelta(model.parameters(), lr=1.0, rho=0.9)``."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, *,
                 maximize=False):
        check_nonneg("Adadelta", lr=lr, eps=eps, weight_decay=weight_decay)
        check_hparam("Adadelta", "rho", rho, 0.0 <= rho <= 1.0, "0 <= rho <= 1")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize))

    def _update(self, group, params):
        for p in params:
            st = zero_state(self.state[p], p, ("square_avg", "acc_delta"))
            st["step"] += 1
            adadelta_update(as_real(p._data), as_real(p.grad._data),
                            as_real(st["square_avg"]._data), as_real(st["acc_delta"]._data),
                            lr=group["lr"], rho=group["rho"], eps=group["eps"],
                            weight_decay=group["weight_decay"], maximize=group["maximize"])
            p._version[0] += 1


def rmsprop_update(p, g, square_avg, grad_avg, buf, *, lr, alpha, eps, weight_decay, momentum,
                   centered, maximize):
    """One RMSprop step on raw arrays, in place. ``grad_avg`` is used when ``centered``,
    ``buf`` (the momentum buffer) when ``momentum > 0``; otherwise they may be None."""
    xp = array_module(p)
    g = decayed_grad(p, g, lr=lr, weight_decay=weight_decay, maximize=maximize)
    square_avg *= alpha
    square_avg += (1 - alpha) * (g * g)
    if centered:
        grad_avg += (1 - alpha) * (g - grad_avg)  # lerp toward g, as PyTorch
        avg = xp.sqrt(square_avg - grad_avg * grad_avg)
    else:
        avg = xp.sqrt(square_avg)
    avg += eps
    if momentum > 0:
        buf *= momentum
        buf += g / avg
        p -= lr * buf
    else:
        p -= lr * (g / avg)


class RMSprop(Optimizer):
    """RMSprop (Hinton): divide by a running RMS of the gradient; ``centered`` subtracts the
    squared running mean, ``momentum`` adds a velocity buffer.

    Example: ``RMSprop(model.parameters(), lr=0.01, momentum=0.9, centered=True)``.
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                 centered=False, *, maximize=False):
        check_nonneg("RMSprop", lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay,
                     alpha=alpha)
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      maximize=maximize))

    def _update(self, group, params):
        for p in params:
            st = zero_state(self.state[p], p, ("square_avg",))
            xp = p.xp
            # created on first need: a scheduler (OneCycleLR) may turn momentum on later
            if group["momentum"] > 0 and "momentum_buffer" not in st:
                st["momentum_buffer"] = _make(xp.zeros_like(p._data))
            if group["centered"] and "grad_avg" not in st:
                st["grad_avg"] = _make(xp.zeros_like(p._data))
            st["step"] += 1
            grad_avg, buf = st.get("grad_avg"), st.get("momentum_buffer")
            rmsprop_update(as_real(p._data), as_real(p.grad._data),
                           as_real(st["square_avg"]._data),
                           None if grad_avg is None else as_real(grad_avg._data),
                           None if buf is None else as_real(buf._data),
                           lr=group["lr"], alpha=group["alpha"], eps=group["eps"],
                           weight_decay=group["weight_decay"], momentum=group["momentum"],
                           centered=group["centered"], maximize=group["maximize"])
            p._version[0] += 1
