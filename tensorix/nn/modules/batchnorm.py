"""``torch.nn.modules.batchnorm``'s import path; the classes are defined in
``tensorix.nn.layers.normalization``."""

from ..layers.normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]
