"""Activation layers: thin shells over ``nn.functional``, with PyTorch's arguments and
reprs."""

from __future__ import annotations

from ...ops.creation import empty
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from ._util import inplace_repr

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "PReLU", "RReLU", "ELU", "SELU", "CELU", "GELU",
           "SiLU", "Mish", "Hardswish", "Hardsigmoid", "Hardtanh", "Sigmoid", "Tanh",
           "Softplus", "Softsign", "Tanhshrink", "LogSigmoid", "Hardshrink", "Softshrink",
           "Threshold", "GLU", "Softmax", "Softmin", "LogSoftmax", "Softmax2d"]


class _Inplace(Module):
    """An activation whose only option is ``inplace``."""

    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self):
        return inplace_repr(self.inplace, first=True)


class _Plain(Module):
    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class ReLU(_Inplace):
    """``max(x, 0)``. Example: ``nn.Sequential(nn.Linear(4, 8), nn.ReLU())``."""

    _fn = staticmethod(F.relu)


class ReLU6(_Inplace):
    """``min(max(x, 0), 6)``."""

    _fn = staticmethod(F.relu6)


class SELU(_Inplace):
    """Scaled ELU with the self-normalising constants."""

    _fn = staticmethod(F.selu)


class SiLU(_Inplace):
    """``x * sigmoid(x)``."""

    _fn = staticmethod(F.silu)


class Mish(_Inplace):
    """``x * tanh(softplus(x))``."""

    _fn = staticmethod(F.mish)


class Hardswish(_Inplace):
    """``x * relu6(x + 3) / 6``."""

    _fn = staticmethod(F.hardswish)


class Hardsigmoid(_Inplace):
    """``relu6(x + 3) / 6``."""

    _fn = staticmethod(F.hardsigmoid)


class Sigmoid(_Plain):
    """``1 / (1 + exp(-x))``."""

    _fn = staticmethod(F.sigmoid)


class Tanh(_Plain):
    """``tanh(x)``."""

    _fn = staticmethod(F.tanh)


class Softsign(_Plain):
    """``x / (1 + |x|)``."""

    _fn = staticmethod(F.softsign)


class Tanhshrink(_Plain):
    """``x - tanh(x)``."""

    _fn = staticmethod(F.tanhshrink)


class LogSigmoid(_Plain):
    """``log(sigmoid(x))``."""

    _fn = staticmethod(F.logsigmoid)


class LeakyReLU(Module):
    """``x`` if positive, else ``negative_slope * x``."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}{inplace_repr(self.inplace)}"


class PReLU(Module):
    """Leaky ReLU with a learned slope: one shared (``num_parameters=1``) or one per channel,
    initialised to ``init``."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomised leaky ReLU (random slope in training, the mean slope in eval)."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}{inplace_repr(self.inplace)}"


class ELU(Module):
    """``x`` if positive, else ``alpha * (exp(x) - 1)``."""

    _fn = staticmethod(F.elu)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return type(self)._fn(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}{inplace_repr(self.inplace)}"


class CELU(ELU):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    _fn = staticmethod(F.celu)


class GELU(Module):
    """Gaussian error linear unit; ``approximate='tanh'`` for the tanh approximation."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Hardtanh(Module):
    """``x`` clipped to [min_val, max_val]."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if min_val >= max_val:
            raise ValueError(f"min_val ({min_val}) must be less than max_val ({max_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}{inplace_repr(self.inplace)}"


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold``."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, else 0."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """Shrink towards 0 by ``lambd`` (0 inside [-lambd, lambd])."""

    def forward(self, input):
        return F.softshrink(input, self.lambd)


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}{inplace_repr(self.inplace)}"


class GLU(Module):
    """Gated linear unit along ``dim``: halves ``a, b`` -> ``a * sigmoid(b)``."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(Module):
    """Softmax along ``dim``. Example: ``nn.Softmax(dim=-1)``."""

    _fn = staticmethod(F.softmax)

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return type(self)._fn(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmin(Softmax):
    """Softmax of ``-x`` along ``dim``."""

    _fn = staticmethod(F.softmin)


class LogSoftmax(Softmax):
    """``log(softmax(x))`` along ``dim``, computed stably."""

    _fn = staticmethod(F.log_softmax)


class Softmax2d(Module):
    """Softmax over channels at each location of (N, C, H, W) or (C, H, W)."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                             "instead")
        return F.softmax(input, -3)
