"""``tensorix.nn.functional``: the stateless math of the layers (modules call these).

Files by family: ``_core`` (linear, nll/cross-entropy, dropout, embedding), ``_conv``
(convolutions, unfold/fold), ``_pool``, ``_norm``, ``_loss``, ``_attention``, ``_interp``
(interpolate) and ``_misc`` (channel dropouts, distances, one_hot, pixel shuffle,
embedding_bag).

Every activation (relu, gelu, prelu, glu, ..., softmax and log_softmax) lives in one place,
``tensorix/ops/activation.py`` and ``tensorix/ops/softmax.py``, and is re-exported here
under PyTorch's names (their ``FUNCTIONAL`` lists).
"""

from ...ops import pad, tanh
from ...ops.activation import *  # every name of its FUNCTIONAL list
from ...ops.activation import FUNCTIONAL as _ACTIVATIONS
from ...ops.activation import (
                               elu_,
                               glu,
                               hardtanh_,
                               leaky_relu_,
                               prelu,
                               relu_,
                               rrelu,
                               rrelu_,
                               softshrink,
                               threshold,
                               threshold_,
)
from ...ops.softmax import FUNCTIONAL as _SOFTMAX
from ...ops.softmax import gumbel_softmax, log_softmax, softmax, softmin
from . import _attention, _conv, _core, _interp, _loss, _misc, _norm, _pool
from ._attention import *
from ._conv import *
from ._core import *
from ._interp import *
from ._loss import *
from ._misc import *
from ._norm import *
from ._pool import *

# general tensor ops that PyTorch also exposes as F.<name>
_FROM_OPS = ["pad", "tanh"]

__all__ = (_ACTIVATIONS + _SOFTMAX + _attention.__all__ + _conv.__all__
           + _core.__all__ + _interp.__all__ + _loss.__all__ + _misc.__all__ + _norm.__all__
           + _pool.__all__ + _FROM_OPS)
