"""Rotation-based W4A4 (QuaRot, Ashkboos et al. 2024; SpinQuant; APEX4's group-128 recipe):
both weights and activations in 4 bits, symmetric, with one scale per group of 128 input
channels (per token for activations, dynamic), after a random-sign Hadamard rotation of each
linear layer's input space. The rotation leaves x W^T unchanged and spreads activation outliers
over all channels, which is what makes 4-bit activations usable.
"""

from __future__ import annotations

from ..quantizer import QScheme
from ._linear import quantize_linears_

__all__ = ["w4a4_scheme", "w4a4_"]


def w4a4_scheme(bits: int = 4, group_size: int = 128) -> QScheme:
    """Symmetric int ``bits`` with a scale per ``group_size`` consecutive input channels; used
    for weights (per output row) and activations (per token) alike."""
    return QScheme(bits, True, "per_group", group_size=group_size)


def w4a4_(model, *, rotate: bool = True, bits: int = 4, group_size: int = 128, seed: int = 0,
          skip=()) -> dict:
    """Quantize every ``nn.Linear`` of ``model`` to W4A4 with groups of ``group_size``
    (weights by round-to-nearest, activations dynamically), after a random-sign Hadamard
    rotation (``seed``) of each layer's input when ``rotate``. No calibration data is needed.
    Returns ``{name: ActQuantLinear}``; a group size that does not divide a layer's input
    dimension raises ValueError.

    Example::

        w4a4_(model, rotate=True, skip=("head",))
    """
    scheme = w4a4_scheme(bits, group_size)
    return quantize_linears_(model, scheme, scheme, rotate=rotate, seed=seed, skip=skip)
