"""Flatten parameters into one vector and back."""

from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...ops.shape import cat
from ...tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters) -> Tensor:
    """All parameters flattened and concatenated into one 1-d tensor (differentiable).

    Example: ``nn.utils.parameters_to_vector(model.parameters()).numel()``.
    """
    params = list(parameters)
    if params:
        dev = params[0].device
        for p in params:
            if p.device != dev:
                raise TypeError("Found two parameters on different devices, this is currently "
                                "not supported.")
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec, parameters) -> None:
    """Copy consecutive slices of the 1-d ``vec`` into ``parameters`` (in place)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected tensorix.Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.numel() != total:
        raise RuntimeError(f"vector_to_parameters(): expected a 1-d vector of {total} elements, "
                           f"got shape {list(vec.shape)}")
    offset = 0
    with no_grad():
        for p in params:
            n = p.numel()
            p.copy_(vec[offset:offset + n].reshape(p.shape))
            offset += n
