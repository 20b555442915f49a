"""The op library, one module per family. Each family module exports its public functions in
``__all__`` and the Tensor methods it provides in ``TENSOR_METHODS``; this package installs
those methods on :class:`tensorix.Tensor`, so Tensor methods stay one-line delegations.
"""

import sys

from ..tensor import Tensor
from . import (
    _codes,  # noqa: F401 - the storage-only formats on CUDA: their conversions
    activation,
    arith,
    bitwise,
    combine,
    creation,
    distance,
    einsum,
    elementwise,
    handle,
    indexing,
    inplace,
    integrate,
    linalg,
    linalg_lu,
    movement,
    number,
    pointwise,
    random,
    reduce,
    shape,
    softmax,
    sort,
    special,
    stats,
    structured,
    tensor_info,
    unary,
)
from .activation import *
from .arith import *
from .bitwise import *
from .combine import *
from .creation import *
from .distance import *
from .einsum import *
from .elementwise import *
from .handle import *
from .indexing import *
from .inplace import *
from .integrate import *
from .linalg import *
from .linalg_lu import *
from .movement import *
from .number import *
from .pointwise import *
from .random import *
from .reduce import *
from .shape import *
from .softmax import *
from .sort import *
from .special import *
from .stats import *
from .structured import *
from .tensor_info import *
from .unary import *

# looked up as modules: the star imports rebind names such as ``sort`` to functions
FAMILIES = tuple(sys.modules[f"{__name__}.{n}"] for n in (
    "creation", "random", "elementwise", "unary", "pointwise", "activation", "bitwise",
    "reduce", "sort", "movement", "shape", "indexing", "linalg", "einsum", "inplace",
    "special", "arith", "number", "structured", "stats", "linalg_lu", "handle", "distance",
    "tensor_info", "combine", "integrate", "softmax"))

__all__ = [name for fam in FAMILIES for name in fam.__all__]


def _install():
    for fam in FAMILIES:
        for name, fn in fam.TENSOR_METHODS.items():
            setattr(Tensor, name, fn)
    Tensor.T = property(lambda self: self.permute(*reversed(range(self.ndim))),
                        doc="The dimensions reversed (a view): ``x.T.shape == x.shape[::-1]``.")
    Tensor.mT = property(lambda self: self.transpose(-2, -1),
                         doc="The last two dimensions swapped (a view): batched transpose.")
    Tensor.mH = property(lambda self: self.transpose(-2, -1).conj(),
                         doc="The conjugate transpose of the last two dimensions.")
    Tensor.H = property(lambda self: self.transpose(0, 1).conj() if self.ndim == 2 else
                        self.conj(), doc="The conjugate transpose of a matrix.")


_install()
