"""``tensorix.nn.utils``: gradient clipping, parameter/vector conversion, weight_norm and
sequence padding."""

from . import clip_grad, convert_parameters, rnn
from .clip_grad import *
from .convert_parameters import *
from .rnn import pad_sequence
from .weight_norm import remove_weight_norm, weight_norm

__all__ = (clip_grad.__all__ + convert_parameters.__all__
           + ["weight_norm", "remove_weight_norm", "pad_sequence"])
