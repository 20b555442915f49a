"""``torch.nn.modules.activation``'s import path; the classes are defined in
``tensorix.nn.layers.activation``."""

from ..layers.activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    RReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)
from ..layers.transformer import MultiheadAttention

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "PReLU", "RReLU", "ELU", "SELU", "CELU", "GELU", "SiLU",
           "Mish", "Hardswish", "Hardsigmoid", "Hardtanh", "Sigmoid", "Tanh", "Softplus",
           "Softsign", "Tanhshrink", "LogSigmoid", "Hardshrink", "Softshrink", "Threshold", "GLU",
           "Softmax", "Softmin", "LogSoftmax", "Softmax2d", "MultiheadAttention"]
