"""An MPS classifier (Stoudenmire & Schwab 2016): each pixel is mapped to a local 2-vector
``(cos(pi x / 2), sin(pi x / 2))`` and the product state of all pixels is contracted with an
MPS whose middle core carries the class index; the result is the vector of class logits.

Trained here by backpropagation through the chain (the paper's sweeping DMRG-style update is a
second optimiser for the same model); the running left and right vectors are rescaled to unit
norm at every site, which keeps a 64-site product from under- or overflowing without changing
which class wins (the scale is shared by all classes of a sample).
"""

from __future__ import annotations

import math

from ..nn.module import Module
from ..nn.parameter import Parameter
from ..ops.einsum import einsum
from ..ops.random import randn
from ..ops.shape import stack

__all__ = ["MPSClassifier", "pixel_feature_map"]


def pixel_feature_map(x):
    """``x (batch, n_sites)`` in ``[0, 1]`` to local vectors ``(batch, n_sites, 2)``:
    ``(cos(pi x / 2), sin(pi x / 2))``, each of unit norm. Example: a white pixel is ``(0, 1)``."""
    angle = x * (math.pi / 2)
    return stack([angle.cos(), angle.sin()], -1)


class MPSClassifier(Module):
    """``logits (batch, n_classes) = MPS contracted with the feature product state of
    x (batch, n_sites)``: ``n_sites`` cores ``(D, 2, D)`` (the ends with ``D = 1``) and a
    label core ``(D, n_classes, D)`` between sites ``n_sites // 2 - 1`` and ``n_sites // 2``.

    Cores start near the identity (``(I + noise) / sqrt(2)`` per local state), so that the
    initial logits depend on every pixel a little and gradients reach both ends.

    Example::

        >>> model = MPSClassifier(64, 10, bond_dim=8)
        >>> model(tensorix.rand(5, 64)).shape
        tensorix.Size([5, 10])
    """

    def __init__(self, n_sites, n_classes, bond_dim=10, std=0.05, generator=None,
                 dtype=None):
        super().__init__()
        if not isinstance(n_sites, int) or n_sites < 2:
            raise ValueError(f"MPSClassifier: n_sites must be an int >= 2, got {n_sites!r}")
        if not isinstance(bond_dim, int) or bond_dim < 1:
            raise ValueError(f"MPSClassifier: bond_dim must be a positive int, got "
                             f"{bond_dim!r}")
        self.n_sites, self.n_classes, self.bond_dim = n_sites, n_classes, bond_dim
        D = bond_dim
        eye = _eye(D, dtype)
        cores = []
        for i in range(n_sites):
            core = (eye.unsqueeze(1) + std * randn(D, 2, D, generator=generator, dtype=dtype)
                    ) / math.sqrt(2)
            core = core[:1] if i == 0 else core
            core = core[..., :1] if i == n_sites - 1 else core
            cores.append(Parameter(core))
        self.cores = _parameter_list(cores)
        self.label = Parameter(eye.unsqueeze(1) + std * randn(D, n_classes, D,
                                                              generator=generator,
                                                              dtype=dtype))

    def forward(self, x):
        if x.ndim != 2 or x.shape[1] != self.n_sites:
            raise ValueError(f"MPSClassifier: expected x of shape (batch, {self.n_sites}), got "
                             f"{tuple(x.shape)}")
        phi = pixel_feature_map(x.to(self.label.dtype))
        half = self.n_sites // 2
        left = einsum("bs,asc->bc", phi[:, 0], self.cores[0])
        for i in range(1, half):
            left = _unit(einsum("ba,bs,asc->bc", left, phi[:, i], self.cores[i]))
        right = einsum("bs,asc->ba", phi[:, -1], self.cores[-1])
        for i in range(self.n_sites - 2, half - 1, -1):
            right = _unit(einsum("bc,bs,asc->ba", right, phi[:, i], self.cores[i]))
        return einsum("ba,alc,bc->bl", _unit(left), self.label, _unit(right))

    def extra_repr(self):
        return f"n_sites={self.n_sites}, n_classes={self.n_classes}, bond_dim={self.bond_dim}"


def _unit(v):
    return v / v.norm(dim=1, keepdim=True)


def _eye(n, dtype):
    from ..ops.creation import eye

    return eye(n, dtype=dtype)


def _parameter_list(params):
    from ..nn.container import ParameterList

    return ParameterList(params)
