"""``torch.nn.modules.fold``'s import path; the classes are defined in
``tensorix.nn.layers.shape``."""

from ..layers.shape import Fold, Unfold

__all__ = ["Fold", "Unfold"]
