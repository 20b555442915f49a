"""SGD with momentum, dampening, Nesterov, weight decay and maximize (PyTorch's semantics)."""

from __future__ import annotations

from ..tensor import _make
from .optimizer import Optimizer, check_hparam, decayed_grad, required

__all__ = ["SGD", "sgd_update"]


def sgd_update(p, g, buf, *, lr, momentum, dampening, weight_decay, nesterov, maximize):
    """One SGD step on raw arrays, in place. ``buf`` is the momentum buffer or None (first
    step); returns the buffer to keep."""
    g = decayed_grad(p, g, lr=lr, weight_decay=weight_decay, maximize=maximize)
    if momentum:
        if buf is None:
            buf = g.copy()
        else:
            buf *= momentum
            buf += g if dampening == 0 else (1 - dampening) * g
        g = g + momentum * buf if nesterov else buf
    p -= lr * g
    return buf


class SGD(Optimizer):
    """Stochastic gradient descent. Example: ``SGD(model.parameters(), lr=0.1,
    momentum=0.9)``."""

    _per_parameter = True  # step() may update parts of the list at once

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, *, maximize=False):
        if lr is not required:
            check_hparam("SGD", "lr", lr, lr >= 0.0, ">= 0")
        check_hparam("SGD", "momentum", momentum, momentum >= 0.0, ">= 0")
        check_hparam("SGD", "weight_decay", weight_decay, weight_decay >= 0.0, ">= 0")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _update(self, group, params):
        opts = {k: group[k] for k in ("lr", "momentum", "dampening", "weight_decay",
                                      "nesterov", "maximize")}
        for p in params:
            st = self.state[p]
            buf = st.get("momentum_buffer")
            new = sgd_update(p._data, p.grad._data, None if buf is None else buf._data, **opts)
            if new is not None and buf is None:
                st["momentum_buffer"] = _make(new)
            p._version[0] += 1
