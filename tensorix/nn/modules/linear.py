"""``torch.nn.modules.linear``'s import path; the classes are defined in
``tensorix.nn.layers.linear``."""

from ..layers.linear import Bilinear, Identity, LazyLinear, Linear

__all__ = ["Bilinear", "Identity", "LazyLinear", "Linear"]
