"""Convolutions: Conv1d/2d/3d and ConvTranspose1d/2d/3d.

Weights start as kaiming_uniform(a=sqrt(5)) and biases as U(-1/sqrt(fan_in), 1/sqrt(fan_in))
(fan_in of the weight), as in PyTorch. ``padding_mode`` other than 'zeros' pads explicitly
(reflect, replicate, circular) and convolves without padding.
"""

from __future__ import annotations

import math

from ...ops.shape import pad
from .. import functional as F
from .. import init
from ..init import _fans
from ..module import Module
from ._util import new_param, optional_param, pair, single, triple

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _check_args(in_channels, out_channels, groups, padding, stride, padding_mode):
    if groups <= 0:
        raise ValueError("groups must be a positive integer")
    if in_channels % groups:
        raise ValueError("in_channels must be divisible by groups")
    if out_channels % groups:
        raise ValueError("out_channels must be divisible by groups")
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                             "{'valid', 'same'}")
        if padding == "same" and any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
    if padding_mode not in _PADDING_MODES:
        raise ValueError(f"padding_mode must be one of {set(_PADDING_MODES)}, but got "
                         f"padding_mode='{padding_mode}'")


class _ConvNd(Module):
    _nd = 2
    _tuple = staticmethod(pair)

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, device=None,
                 dtype=None):
        super().__init__()
        t = self._tuple
        kernel_size, stride, dilation = t(kernel_size), t(stride), t(dilation)
        padding = padding if isinstance(padding, str) else t(padding)
        _check_args(in_channels, out_channels, groups, padding, stride, padding_mode)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.transposed = dilation, transposed
        self.output_padding, self.groups = t(output_padding), groups
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = _explicit_pads(padding, kernel_size, dilation)
        shape = (in_channels, out_channels // groups) if transposed else \
            (out_channels, in_channels // groups)
        self.weight = new_param(*shape, *kernel_size, device=device, dtype=dtype)
        self.register_parameter("bias", optional_param(bias, out_channels, device=device,
                                                       dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = _fans(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        nd = len(self.kernel_size)
        if self.padding != (0,) * nd:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * nd:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


def _explicit_pads(padding, kernel_size, dilation):
    """F.pad's argument (last dim first) for the non-zero padding modes."""
    nd = len(kernel_size)
    if isinstance(padding, str):
        pads = [0, 0] * nd
        if padding == "same":
            for i, (d, k) in enumerate(zip(dilation, kernel_size)):
                total = d * (k - 1)
                j = nd - 1 - i
                pads[2 * j], pads[2 * j + 1] = total // 2, total - total // 2
        return pads
    pads = []
    for p in reversed(padding):
        pads += [p, p]
    return pads


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         False, 0, groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        fn = (F.conv1d, F.conv2d, F.conv3d)[self._nd - 1]
        if self.padding_mode != "zeros":
            input = pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return fn(input, weight, bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-d convolution layer: (N, C_in, L) -> (N, C_out, L_out).

    Example: ``nn.Conv1d(16, 33, 3, stride=2)``.
    """

    _nd, _tuple = 1, staticmethod(single)


class Conv2d(_Conv):
    """2-d convolution layer: (N, C_in, H, W) -> (N, C_out, H_out, W_out); ``padding`` may be
    an int, a pair, 'valid' or 'same'.

    Example: ``nn.Conv2d(1, 16, 3, padding=1)``.
    """

    _nd, _tuple = 2, staticmethod(pair)


class Conv3d(_Conv):
    """3-d convolution layer: (N, C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out)."""

    _nd, _tuple = 3, staticmethod(triple)


class _ConvTranspose(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{type(self).__name__}")
        if isinstance(padding, str):  # PyTorch accepts it here and fails in forward
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple of "
                             f"ints, got {padding!r} (string paddings apply to Conv only)")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         True, output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        nd = self._nd
        lead = 2 if input.ndim == nd + 2 else 1
        size = list(output_size)
        if len(size) == lead + nd:
            size = size[lead:]
        if len(size) != nd:
            raise ValueError(f"ConvTranspose{nd}D: for {input.ndim}D input, output_size must "
                             f"have {nd} or {lead + nd} elements (got {len(size)})")
        mins = [(input.shape[lead + d] - 1) * self.stride[d] - 2 * self.padding[d]
                + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(nd)]
        maxs = [mins[d] + self.stride[d] - 1 for d in range(nd)]
        for d in range(nd):
            if not mins[d] <= size[d] <= maxs[d]:
                raise ValueError(f"requested an output size of {size}, but valid sizes range "
                                 f"from {mins} to {maxs} (for an input of "
                                 f"{list(input.shape[lead:])})")
        return tuple(size[d] - mins[d] for d in range(nd))

    def forward(self, input, output_size=None):
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self._nd - 1]
        out_pad = self._output_padding(input, output_size)
        return fn(input, self.weight, self.bias, self.stride, self.padding, out_pad,
                  self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """Transposed 1-d convolution: (N, C_in, L) -> (N, C_out, L_out)."""

    _nd, _tuple = 1, staticmethod(single)


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-d convolution: (N, C_in, H, W) -> (N, C_out, H_out, W_out);
    ``forward(input, output_size)`` picks the output padding for a target size.

    Example: ``nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1)`` doubles
    H and W.
    """

    _nd, _tuple = 2, staticmethod(pair)


class ConvTranspose3d(_ConvTranspose):
    """Transposed 3-d convolution."""

    _nd, _tuple = 3, staticmethod(triple)
