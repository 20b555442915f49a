"""``torch.nn.modules.container``'s import path; the classes are defined in
``tensorix.nn.container``."""

from ..container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]
