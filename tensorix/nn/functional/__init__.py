"""``tensorix.nn.functional``: the stateless math of the layers (modules call these).

Files by family: ``_core`` (linear, softmax, nll/cross-entropy, dropout, embedding), ``_conv``
(convolutions, unfold/fold), ``_pool``, ``_norm``, ``_loss``, ``_attention``, ``_interp``
(interpolate), ``_misc`` (channel dropouts, distances, one_hot, pixel shuffle, embedding_bag)
and ``_activation`` (activations with ``F.*`` signatures that are not plain tensor ops).

Activations that are general tensor ops (gelu, silu, sigmoid, softplus, ...) live in
``tensorix.ops`` and are re-exported here under PyTorch's names.
"""

from ...ops import (
    celu,
    elu,
    gelu,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    logsigmoid,
    mish,
    pad,
    relu6,
    selu,
    sigmoid,
    silu,
    softplus,
    softsign,
    tanh,
    tanhshrink,
)
from . import _activation, _attention, _conv, _core, _interp, _loss, _misc, _norm, _pool
from ._activation import *
from ._attention import *
from ._conv import *
from ._core import *
from ._interp import *
from ._loss import *
from ._misc import *
from ._norm import *
from ._pool import *

# general tensor ops that PyTorch also exposes as F.<name>
_FROM_OPS = ["celu", "elu", "gelu", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu",
             "logsigmoid", "mish", "pad", "relu6", "selu", "sigmoid", "silu", "softplus",
             "softsign", "tanh", "tanhshrink"]

__all__ = (_activation.__all__ + _attention.__all__ + _conv.__all__ + _core.__all__
           + _interp.__all__ + _loss.__all__ + _misc.__all__ + _norm.__all__ + _pool.__all__
           + _FROM_OPS)
