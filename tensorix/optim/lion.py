"""Lion (Chen et al., "Symbolic Discovery of Optimization Algorithms", 2023)."""

from __future__ import annotations

from ..backend import array_module
from .optimizer import Optimizer, as_real, check_betas, check_nonneg, decayed_grad, zero_state

__all__ = ["Lion", "lion_update"]


def lion_update(p, g, exp_avg, *, lr, beta1, beta2, weight_decay, maximize):
    """One Lion step on raw arrays, in place: move by ``lr * sign(beta1*m + (1-beta1)*g)``
    (decoupled weight decay first), then update the momentum with ``beta2``."""
    xp = array_module(p)
    g = decayed_grad(p, g, lr=lr, weight_decay=weight_decay, maximize=maximize,
                     decoupled=True)
    direction = xp.sign(beta1 * exp_avg + (1 - beta1) * g)
    p -= lr * direction
    exp_avg *= beta2
    exp_avg += (1 - beta2) * g


class Lion(Optimizer):
    """Lion: sign-of-momentum updates with one state buffer (half of Adam's memory). Use a
    learning rate 3-10x smaller and a weight decay 3-10x larger than for AdamW.

    Example: ``Lion(model.parameters(), lr=1e-4, betas=(0.9, 0.99), weight_decay=0.1)``.
    """

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, *,
                 maximize=False):
        check_nonneg("Lion", lr=lr)
        betas = check_betas("Lion", betas, upper_inclusive=True)
        check_nonneg("Lion", weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay,
                                      maximize=maximize))

    def _update(self, group, params):
        beta1, beta2 = group["betas"]
        for p in params:
            st = zero_state(self.state[p], p, ("exp_avg",))
            st["step"] += 1
            lion_update(as_real(p._data), as_real(p.grad._data), as_real(st["exp_avg"]._data),
                        lr=group["lr"], beta1=beta1, beta2=beta2,
                        weight_decay=group["weight_decay"], maximize=group["maximize"])
            p._version[0] += 1
