"""``torch.nn.modules.flatten``'s import path; the classes are defined in
``tensorix.nn.layers.linear``."""

from ..layers.linear import Flatten, Unflatten

__all__ = ["Flatten", "Unflatten"]
