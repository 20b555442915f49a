"""Identity, Linear, Bilinear, Flatten and Unflatten."""

from __future__ import annotations

import math

from .. import functional as F
from .. import init
from ..module import Module
from ._util import new_param, optional_param

__all__ = ["Identity", "Linear", "Bilinear", "Flatten", "Unflatten", "LazyLinear"]


class Identity(Module):
    """Returns its input; takes (and ignores) any constructor arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``: (*, in_features) -> (*, out_features).

    Weight (out, in) starts as kaiming_uniform(a=sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in)),
    and so does the bias, as in PyTorch. Example: ``nn.Linear(784, 10)(x)``.
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = new_param(out_features, in_features, device=device, dtype=dtype)
        self.register_parameter("bias", optional_param(bias, out_features, device=device,
                                                       dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """MultiheadAttention's ``out_proj`` (the class name PyTorch prints)."""


class LazyLinear(Linear):
    """A Linear whose ``in_features`` is taken from the first input."""

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        Module.__init__(self)
        self.in_features, self.out_features = 0, out_features
        self._factory = dict(device=device, dtype=dtype)
        self.weight = new_param(0, device=device, dtype=dtype)
        self.register_parameter("bias", optional_param(bias, 0, device=device, dtype=dtype))

    def forward(self, input):
        if self.in_features == 0:
            self.in_features = input.shape[-1]
            w = new_param(self.out_features, self.in_features, **self._factory)
            self.weight.data = w.data
            if self.bias is not None:
                self.bias.data = new_param(self.out_features, **self._factory).data
            self.reset_parameters()
        return F.linear(input, self.weight, self.bias)


class Bilinear(Module):
    """``y = x1 @ weight[o] @ x2 + bias[o]``: (*, in1), (*, in2) -> (*, out).

    Weight and bias start as U(-1/sqrt(in1), 1/sqrt(in1)).
    """

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = new_param(out_features, in1_features, in2_features, device=device,
                                dtype=dtype)
        self.register_parameter("bias", optional_param(bias, out_features, device=device,
                                                       dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Flatten(Module):
    """Flatten dims ``start_dim..end_dim``: (N, C, H, W) -> (N, C*H*W) by default."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expand dim ``dim`` into ``unflattened_size``: Unflatten(1, (2, 5)) maps (N, 10) to
    (N, 2, 5)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if not isinstance(dim, int):
            raise TypeError(f"invalid argument type for dim parameter, expected int, got "
                            f"{type(dim).__name__}")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
