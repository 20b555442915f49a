"""Layers that resample or rearrange: Upsample, PixelShuffle/Unshuffle, ChannelShuffle,
padding layers, Fold/Unfold; and the distance layers CosineSimilarity, PairwiseDistance."""

from __future__ import annotations

from ...ops.shape import pad
from .. import functional as F
from ..module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle",
           "PixelUnshuffle", "ChannelShuffle", "Fold", "Unfold", "CosineSimilarity",
           "PairwiseDistance", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d",
           "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d",
           "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
           "CircularPad1d", "CircularPad2d", "CircularPad3d"]


class Upsample(Module):
    """Resize (N, C, *spatial) to ``size`` or by ``scale_factor`` with ``mode`` ('nearest',
    'linear', 'bilinear', 'bicubic', 'trilinear', 'nearest-exact').

    Example: ``nn.Upsample(scale_factor=2, mode='bilinear')``.
    """

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode,
                             self.align_corners, self.recompute_scale_factor)

    def extra_repr(self):
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else \
            f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour 2-d upsampling (deprecated alias of Upsample)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear 2-d upsampling with ``align_corners=True`` (deprecated alias)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """(*, C * r**2, H, W) -> (*, C, H * r, W * r)."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H * r, W * r) -> (*, C * r**2, H, W)."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Interleave channels across ``groups``."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


class Fold(Module):
    """Sliding blocks (N, C*kH*kW, L) back into (N, C, H, W) (see ``F.fold``)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Sliding blocks of (N, C, H, W) as (N, C*kH*kW, L) (see ``F.unfold``)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class CosineSimilarity(Module):
    """Cosine similarity of two inputs along ``dim``."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """p-norm distance ``||x1 - x2 + eps||_p`` over the last dim."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class _PadNd(Module):
    _nd = 1
    _mode = "constant"

    def __init__(self, padding, value=0.0):
        super().__init__()
        n = 2 * self._nd
        self.padding = (padding,) * n if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != n:
            raise ValueError(f"{type(self).__name__}: expected padding of {n} ints, got "
                             f"{self.padding}")
        self.value = value

    def forward(self, input):
        if self._mode == "constant":
            return pad(input, self.padding, "constant", self.value)
        return pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPad(_PadNd):
    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


def _pad_class(name, nd, mode, base, doc):
    return type(name, (base,), {"_nd": nd, "_mode": mode, "__doc__": doc,
                                "__module__": __name__})


ConstantPad1d = _pad_class("ConstantPad1d", 1, "constant", _ConstantPad,
                           "Pad the last dim with a constant ``value``.")
ConstantPad2d = _pad_class("ConstantPad2d", 2, "constant", _ConstantPad,
                           "Pad the last 2 dims with a constant ``value``.")
ConstantPad3d = _pad_class("ConstantPad3d", 3, "constant", _ConstantPad,
                           "Pad the last 3 dims with a constant ``value``.")


class _ZeroPad(_ConstantPad):
    """A constant pad fixed at zero; ZeroPadNd subclasses ConstantPadNd, as in PyTorch."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    extra_repr = _PadNd.extra_repr


class ZeroPad1d(_ZeroPad, ConstantPad1d):
    """Zero-pad the last dim: ``padding`` = int or (left, right)."""


class ZeroPad2d(_ZeroPad, ConstantPad2d):
    """Zero-pad the last 2 dims: ``padding`` = int or (left, right, top, bottom)."""


class ZeroPad3d(_ZeroPad, ConstantPad3d):
    """Zero-pad the last 3 dims."""


ReflectionPad1d = _pad_class("ReflectionPad1d", 1, "reflect", _PadNd,
                             "Mirror-pad the last dim (without repeating the edge).")
ReflectionPad2d = _pad_class("ReflectionPad2d", 2, "reflect", _PadNd,
                             "Mirror-pad the last 2 dims.")
ReflectionPad3d = _pad_class("ReflectionPad3d", 3, "reflect", _PadNd,
                             "Mirror-pad the last 3 dims.")
ReplicationPad1d = _pad_class("ReplicationPad1d", 1, "replicate", _PadNd,
                              "Pad the last dim by repeating the edge value.")
ReplicationPad2d = _pad_class("ReplicationPad2d", 2, "replicate", _PadNd,
                              "Pad the last 2 dims by repeating the edge values.")
ReplicationPad3d = _pad_class("ReplicationPad3d", 3, "replicate", _PadNd,
                              "Pad the last 3 dims by repeating the edge values.")
CircularPad1d = _pad_class("CircularPad1d", 1, "circular", _PadNd,
                           "Pad the last dim by wrapping around.")
CircularPad2d = _pad_class("CircularPad2d", 2, "circular", _PadNd,
                           "Pad the last 2 dims by wrapping around.")
CircularPad3d = _pad_class("CircularPad3d", 3, "circular", _PadNd,
                           "Pad the last 3 dims by wrapping around.")

