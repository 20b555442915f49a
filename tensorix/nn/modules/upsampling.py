"""``torch.nn.modules.upsampling``'s import path; the classes are defined in
``tensorix.nn.layers.shape``."""

from ..layers.shape import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]
