"""The layer classes, one file per family; ``tensorix.nn`` re-exports them all."""

from . import (
    activation,
    conv,
    dropout,
    linear,
    loss,
    normalization,
    pooling,
    rnn,
    shape,
    sparse,
    transformer,
)
from .activation import *
from .conv import *
from .dropout import *
from .linear import *
from .loss import *
from .normalization import *
from .pooling import *
from .rnn import *
from .shape import *
from .sparse import *
from .transformer import *

__all__ = (activation.__all__ + conv.__all__ + dropout.__all__ + linear.__all__ + loss.__all__
           + normalization.__all__ + pooling.__all__ + rnn.__all__ + shape.__all__
           + sparse.__all__ + transformer.__all__)
