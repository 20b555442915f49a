"""Neural-network modules: ``Module`` and containers here, layers in ``nn/layers/``, the math
in ``nn.functional``, initialisers in ``nn.init``, utilities in ``nn.utils``."""

from . import parameter
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .module import Module
from .parameter import Buffer, Parameter

__all__ = ["Module", "Parameter", "Buffer", "Sequential", "ModuleList", "ModuleDict",
           "ParameterList", "ParameterDict"]
