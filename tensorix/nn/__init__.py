"""Neural-network modules: ``Module`` and containers here, layers in ``nn/layers/`` (one file
per family), the math in ``nn.functional``, initialisers in ``nn.init``, utilities in
``nn.utils``.

Example::

    from tensorix import nn
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    loss = nn.CrossEntropyLoss()(model(x), y)
"""

from . import functional, init, layers, modules, parameter, utils
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .layers import *
from .module import Module
from .parameter import Buffer, Parameter

__all__ = (["Module", "Parameter", "Buffer", "Sequential", "ModuleList", "ModuleDict",
            "ParameterList", "ParameterDict", "functional", "init", "utils"]
           + layers.__all__)


def __getattr__(name):
    # nn.parallel sits on tensorix.distributed (a layer above nn): loaded on first use, as
    # torch.nn.parallel is reached after `import torch.nn`
    if name == "parallel":
        import importlib

        return importlib.import_module(f"{__name__}.parallel")
    raise AttributeError(f"module 'tensorix.nn' has no attribute {name!r}")
