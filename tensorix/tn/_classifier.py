"""An MPS classifier (Stoudenmire & Schwab 2016): each pixel is mapped to a local 2-vector
``(cos(pi x / 2), sin(pi x / 2))`` and the product state of all pixels is contracted with an
MPS whose middle core carries the class index; the result is the vector of class logits.
A tree tensor-network classifier (Stoudenmire 2018, "Learning relevant features of data with
multi-scale tensor networks"; Cheng et al. 2019) contracts the same product state with a
binary tree of isometries instead, whose root carries the class index.

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

__all__ = ["MPSClassifier", "TTNClassifier", "pixel_feature_map", "zorder"]


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


class TTNClassifier(Module):
    """``logits (batch, n_classes)`` = a binary tree tensor network contracted with the
    feature product state of ``x (batch, n_sites)``, ``n_sites`` a power of two: level ``l``
    has ``n_sites / 2^(l+1)`` node tensors ``(d_l, d_l, d_{l+1})`` that merge neighbouring
    pairs (``d_0 = 2``, ``d_{l+1} = min(bond_dim, d_l^2)``), and the root ``(d, d, n_classes)``
    joins the last two. ``image_shape=(h, w)`` (powers of two) orders the pixels along the
    Z-curve (:func:`zorder`), so that every node merges a 2-D block: pairs, 2x2, 2x4, ...

    Nodes start as random isometries (orthonormal columns: the first level, ``4 -> 4``, loses
    nothing) and each level's outputs are rescaled to unit norm per sample, as in
    :class:`MPSClassifier` (the scale is shared by all classes, so the argmax is unchanged).

    Example::

        >>> model = TTNClassifier(64, 10, bond_dim=8, image_shape=(8, 8))
        >>> model(tensorix.rand(5, 64)).shape
        tensorix.Size([5, 10])
    """

    def __init__(self, n_sites, n_classes, bond_dim=8, image_shape=None, std=1.0,
                 generator=None, dtype=None):
        super().__init__()
        if not isinstance(n_sites, int) or n_sites < 2 or n_sites & (n_sites - 1):
            raise ValueError(f"TTNClassifier: n_sites must be a power of two >= 2, got "
                             f"{n_sites!r}")
        if not isinstance(bond_dim, int) or bond_dim < 1:
            raise ValueError(f"TTNClassifier: bond_dim must be a positive int, got "
                             f"{bond_dim!r}")
        self.n_sites, self.n_classes, self.bond_dim = n_sites, n_classes, bond_dim
        self.image_shape = None if image_shape is None else tuple(image_shape)
        self.order = list(range(n_sites)) if image_shape is None else zorder(*image_shape)
        if len(self.order) != n_sites:
            raise ValueError(f"TTNClassifier: image_shape {self.image_shape} does not have "
                             f"n_sites = {n_sites} pixels")
        from ..linalg import qr

        layers, width, dim = [], n_sites, 2
        while width > 2:
            out = min(bond_dim, dim * dim)
            q, _ = qr(randn(width // 2, dim * dim, out, generator=generator, dtype=dtype))
            layers.append(Parameter(q.reshape(width // 2, dim, dim, out)))
            width, dim = width // 2, out
        self.layers = _parameter_list(layers)
        self.root = Parameter(std * randn(dim, dim, n_classes, generator=generator,
                                          dtype=dtype))

    def forward(self, x):
        if x.ndim != 2 or x.shape[1] != self.n_sites:
            raise ValueError(f"TTNClassifier: expected x of shape (batch, {self.n_sites}), got "
                             f"{tuple(x.shape)}")
        v = pixel_feature_map(x[:, self.order].to(self.root.dtype))  # (batch, sites, 2)
        for node in self.layers:  # one einsum per level: all of its nodes at once
            v = _unit(einsum("bnl,bnr,nlro->bno", v[:, 0::2], v[:, 1::2], node))
        return einsum("bl,br,lrc->bc", v[:, 0], v[:, 1], self.root)

    def extra_repr(self):
        return (f"n_sites={self.n_sites}, n_classes={self.n_classes}, "
                f"bond_dim={self.bond_dim}, image_shape={self.image_shape}")


def zorder(height, width):
    """The pixels of a ``(height, width)`` row-major image (powers of two) along the Z-curve:
    consecutive pairs are horizontal neighbours, consecutive fours 2x2 blocks, and so on.
    Example: ``zorder(2, 2) == [0, 1, 2, 3]``; ``zorder(4, 4)[:8] == [0, 1, 4, 5, 2, 3, 6, 7]``.
    """
    for name, n in (("height", height), ("width", width)):
        if not isinstance(n, int) or n < 1 or n & (n - 1):
            raise ValueError(f"zorder: {name} must be a power of two, got {n!r}")

    def key(pixel):
        i, j = divmod(pixel, width)
        code = 0
        for bit in range(max(height, width).bit_length()):  # interleave: j's bit, then i's
            code |= ((j >> bit) & 1) << (2 * bit) | ((i >> bit) & 1) << (2 * bit + 1)
        return code

    return sorted(range(height * width), key=key)


def _unit(v):
    return v / v.norm(dim=-1, keepdim=True)


def _eye(n, dtype):
    from ..ops.creation import eye

    return eye(n, dtype=dtype)


def _parameter_list(params):
    from ..nn.container import ParameterList

    return ParameterList(params)
