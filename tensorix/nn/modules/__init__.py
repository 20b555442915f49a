"""``tensorix.nn.modules``: torch's ``torch.nn.modules.<family>`` import paths
(``from tensorix.nn.modules.linear import Linear``), one small module per torch file,
each re-exporting the classes tensorix defines in ``nn/layers/`` (the one definition).
Families or classes tensorix lacks (e.g. ``LazyConv2d``, ``CTCLoss``) are absent.
"""

from . import (
    activation,
    batchnorm,
    channelshuffle,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    instancenorm,
    linear,
    loss,
    module,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
)
from .activation import *
from .batchnorm import *
from .channelshuffle import *
from .container import *
from .conv import *
from .distance import *
from .dropout import *
from .flatten import *
from .fold import *
from .instancenorm import *
from .linear import *
from .loss import *
from .module import *
from .normalization import *
from .padding import *
from .pixelshuffle import *
from .pooling import *
from .rnn import *
from .sparse import *
from .transformer import *
from .upsampling import *

__all__ = (activation.__all__ + batchnorm.__all__ + channelshuffle.__all__ + container.__all__ +
           conv.__all__ + distance.__all__ + dropout.__all__ + flatten.__all__ + fold.__all__ +
           instancenorm.__all__ + linear.__all__ + loss.__all__ + module.__all__ +
           normalization.__all__ + padding.__all__ + pixelshuffle.__all__ + pooling.__all__ +
           rnn.__all__ + sparse.__all__ + transformer.__all__ + upsampling.__all__)
