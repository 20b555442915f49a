"""``torch.nn.modules.conv``'s import path; the classes are defined in
``tensorix.nn.layers.conv``."""

from ..layers.conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]
