"""``torch.nn.modules.normalization``'s import path; the classes are defined in
``tensorix.nn.layers.normalization``."""

from ..layers.normalization import GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm

__all__ = ["LocalResponseNorm", "LayerNorm", "GroupNorm", "RMSNorm"]
