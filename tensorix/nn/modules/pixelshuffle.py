"""``torch.nn.modules.pixelshuffle``'s import path; the classes are defined in
``tensorix.nn.layers.shape``."""

from ..layers.shape import PixelShuffle, PixelUnshuffle

__all__ = ["PixelShuffle", "PixelUnshuffle"]
