"""Weight normalisation (Salimans & Kingma): ``w = g * v / ||v||``, recomputed before each
forward from the parameters ``<name>_g`` and ``<name>_v``."""

from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ..parameter import Parameter

__all__ = ["weight_norm", "remove_weight_norm"]


def _norm_except_dim(v, dim):
    if dim is None or dim == -1:  # PyTorch's convention: -1 means the norm of everything
        return v.norm()
    dim = dim % v.ndim
    axes = tuple(i for i in range(v.ndim) if i != dim)
    return v.norm(2, axes, keepdim=True) if axes else v.abs()


class WeightNorm:
    """The forward pre-hook that rebuilds ``module.<name>`` from ``g`` and ``v``."""

    def __init__(self, name, dim):
        self.name, self.dim = name, dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Reparameterise ``module.<name>`` as magnitude ``<name>_g`` times direction
    ``<name>_v``; returns the module.

    Example: ``m = nn.utils.weight_norm(nn.Linear(20, 40))`` has ``weight_g`` (40, 1) and
    ``weight_v`` (40, 20).
    """
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, WeightNorm) and hook.name == name:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter "
                               f"{name}")
    if dim is None:
        dim = -1
    fn = WeightNorm(name, dim)
    weight = getattr(module, name)
    del module._parameters[name]
    with no_grad():
        g = _norm_except_dim(weight, dim).detach().clone()
        v = weight.detach().clone()
    module.register_parameter(name + "_g", Parameter(g))
    module.register_parameter(name + "_v", Parameter(v))
    object.__setattr__(module, name, fn.compute_weight(module))
    handle = module.register_forward_pre_hook(fn)
    fn.handle = handle
    return module


def remove_weight_norm(module, name="weight"):
    """Fold ``<name>_g``/``<name>_v`` back into a plain parameter ``<name>``."""
    for hook in list(module._forward_pre_hooks.values()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            with no_grad():
                weight = hook.compute_weight(module).detach().clone()
            hook.handle.remove()
            del module._parameters[name + "_g"]
            del module._parameters[name + "_v"]
            module.__dict__.pop(name, None)
            module.register_parameter(name, Parameter(weight))
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
