"""``tensorix.nn.functional``: the stateless math of the layers (modules call these).

Activations and shape ops that are general tensor ops (relu, gelu, sigmoid, pad, ...) live in
``tensorix.ops`` and are re-exported here under PyTorch's names.
"""

from . import _conv, _core, _pool
from ._conv import *
from ._core import *
from ._pool import *

# general tensor ops that PyTorch also exposes as F.<name>
_FROM_OPS = ("relu", "relu6", "leaky_relu", "elu", "selu", "celu", "gelu", "silu", "mish",
             "hardtanh", "hardsigmoid", "hardswish", "softsign", "tanhshrink", "logsigmoid",
             "sigmoid", "tanh", "softplus", "pad", "threshold")

__all__ = _conv.__all__ + _core.__all__ + _pool.__all__ + list(_FROM_OPS)


def __getattr__(name):
    if name in _FROM_OPS:
        from ... import ops

        if hasattr(ops, name):
            return getattr(ops, name)
    raise AttributeError(f"module 'tensorix.nn.functional' has no attribute {name!r}")
