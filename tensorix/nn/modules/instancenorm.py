"""``torch.nn.modules.instancenorm``'s import path; the classes are defined in
``tensorix.nn.layers.normalization``."""

from ..layers.normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
