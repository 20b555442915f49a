"""Gradient clipping: by total norm and by value."""

from __future__ import annotations

import math

from ...autograd.grad_mode import no_grad
from ...ops.creation import tensor
from ...ops.shape import stack
from ...optim.optimizer import replayed_function
from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _params(parameters):
    if isinstance(parameters, Tensor):
        return [parameters]
    return list(parameters)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` together (the norm of their norms)."""
    tensors = [t for t in _params(tensors) if t is not None]
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    with no_grad():
        norms = [t.detach().norm(norm_type) for t in tensors]
        if math.isinf(norm_type):
            total = stack([n.to(norms[0].dtype) for n in norms]).amax()
        else:
            total = stack([n.to(norms[0].dtype) for n in norms]).norm(norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable "
                           "this error and scale the gradients by the non-finite norm anyway, "
                           "set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None) -> None:
    """Scale the gradients by ``max_norm / (total_norm + 1e-6)`` when that is below 1."""
    grads = [p.grad for p in _params(parameters) if p.grad is not None]
    if not grads:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None) -> Tensor:
    """Rescale the gradients of ``parameters`` in place so that their total ``norm_type``-norm
    is at most ``max_norm``; returns the total norm before clipping.

    Example: ``nn.utils.clip_grad_norm_(model.parameters(), 1.0)`` between backward and step.
    """
    # a list, not the caller's generator: inside tensorix.compile the call is recorded and
    # replayed on every call (it reads and writes .grad, which a graph does not hold)
    return _clip_grad_norm(_params(parameters), max_norm, norm_type, error_if_nonfinite)


@replayed_function
def _clip_grad_norm(params, max_norm, norm_type, error_if_nonfinite):
    grads = [p.grad for p in params if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    clip_grads_with_norm_(params, max_norm, total)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None) -> None:
    """Clamp every gradient of ``parameters`` to [-clip_value, clip_value] in place."""
    _clip_grad_value(_params(parameters), float(clip_value))  # an effect, as clip_grad_norm_


@replayed_function
def _clip_grad_value(params, clip_value):
    with no_grad():
        for p in params:
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)
