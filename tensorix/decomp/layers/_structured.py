"""Monarch and Block-Tensor-Train (BTT) matrices as linear layers, with muP scaling.

With ``in_features = j1 * j2`` and ``out_features = i1 * i2``, a BTT matrix of rank ``r``
(Qiu et al. 2024, "Compute Better Spent: Replacing Dense Layers with Structured Matrices",
ICML) is

    ``W[(i1, i2), (j1, j2)] = sum_a L[i1, i2, j1, a] R[a, i2, j1, j2]``

applied as two batched dense maps: ``R`` maps each row ``x[j1, :]`` (size j2) to ``r * i2``
values, ``L`` maps each group ``t[:, i2, :]`` (size ``r * j1``) to ``i1`` outputs.
Rank 1 is a Monarch matrix (Dao et al. 2022, "Monarch: Expressive Structured Matrices for
Efficient and Accurate Training", ICML): ``W = P L P^T R`` with block-diagonal ``L``, ``R``.
Cost and parameters ``r (i2 j1 j2 + i1 i2 j1)``, ``2 n^1.5`` for a square Monarch of size n.

muP (maximal update parametrization) per core, the spectral rules of Yang, Simon & Bernstein
2023 ("A Spectral Condition for Feature Learning") applied to each core as the batch of dense
``d_in -> d_out`` maps it is, as Qiu et al. 2024 (Sec. 4) do for structured layers:

* init: core entries N(0, sigma^2) with ``sigma = init_scale * sqrt(min(d_in, d_out)) / d_in``
  (``R``: ``d_in = j2, d_out = r i2``; ``L``: ``d_in = r j1, d_out = i1``), which keeps the
  spectral norm of every block at ``sqrt(d_out / d_in)``;
* Adam learning rate: ``lr * base_fan_in / d_in`` per core (:meth:`BTTLinear.mup_param_groups`),
  so that one step changes the layer's output by an amount that does not grow with width;
  the bias keeps ``lr``.
"""

from __future__ import annotations

import math

from ...nn import Module, init
from ...nn.layers._util import new_param, optional_param
from ...ops.einsum import einsum
from ._util import check_features, modes_for

__all__ = ["BTTLinear", "MonarchLinear"]


class BTTLinear(Module):
    """A linear layer whose weight is a rank-``rank`` Block-Tensor-Train matrix (see the
    module docstring): (*, in_features) -> (*, out_features).

    ``in_modes (j1, j2)`` and ``out_modes (i1, i2)`` default to balanced factorizations;
    ``rank`` is at most ``min(i1, j2)`` (a larger one adds nothing). Cores: ``left
    (i1, i2, j1, r)``, ``right (r, i2, j1, j2)``, initialised by the muP rule.

    Example::

        layer = BTTLinear(1024, 1024, rank=2)        # modes (32, 32), 2 * 2 * 32^3 weights
        opt = optim.Adam(layer.mup_param_groups(lr=1e-3, base_fan_in=32))
    """

    def __init__(self, in_features, out_features, rank=1, in_modes=None, out_modes=None,
                 bias=True, init_scale=1.0, device=None, dtype=None):
        super().__init__()
        op = type(self).__name__
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.in_modes = modes_for(op, "in_modes", self.in_features, in_modes, 2)
        self.out_modes = modes_for(op, "out_modes", self.out_features, out_modes, 2)
        (i1, i2), (j1, j2) = self.out_modes, self.in_modes
        if not isinstance(rank, int) or not 1 <= rank <= min(i1, j2):
            raise ValueError(f"{op}: rank must be an int in [1, {min(i1, j2)}] for modes "
                             f"{self.out_modes} x {self.in_modes}, got {rank!r}")
        self.rank, self.init_scale = rank, init_scale
        fac = dict(device=device, dtype=dtype)
        self.left = new_param(i1, i2, j1, rank, **fac)
        self.right = new_param(rank, i2, j1, j2, **fac)
        self.register_parameter("bias", optional_param(bias, self.out_features, **fac))
        self.reset_parameters()

    def core_fans(self):
        """``{core name: (d_in, d_out)}`` of the dense maps each core is a batch of."""
        (i1, i2), (j1, j2) = self.out_modes, self.in_modes
        return {"right": (j2, self.rank * i2), "left": (self.rank * j1, i1)}

    def reset_parameters(self):
        for name, (d_in, d_out) in self.core_fans().items():
            init.normal_(getattr(self, name), 0.0,
                         self.init_scale * math.sqrt(min(d_in, d_out)) / d_in)
        if self.bias is not None:
            init.zeros_(self.bias)

    def mup_param_groups(self, lr, base_fan_in=1):
        """Adam parameter groups with the muP learning rates ``lr * base_fan_in / d_in`` per
        core (a dense layer of fan-in ``base_fan_in`` would use ``lr``) and ``lr`` for the
        bias. Example: ``optim.Adam(layer.mup_param_groups(1e-3, base_fan_in=16))``."""
        groups = [{"params": [getattr(self, name)], "lr": lr * base_fan_in / d_in}
                  for name, (d_in, _) in self.core_fans().items()]
        if self.bias is not None:
            groups.append({"params": [self.bias], "lr": lr})
        return groups

    def to_dense(self):
        """The weight ``(out_features, in_features)``; differentiable."""
        return einsum("lija,aijk->lijk", self.left, self.right).reshape(self.out_features,
                                                                       self.in_features)

    def forward(self, input):
        check_features(type(self).__name__, input, self.in_features)
        lead = tuple(input.shape[:-1])
        (i1, i2), (j1, j2), r = self.out_modes, self.in_modes, self.rank
        # two batched GEMMs: R's blocks indexed by j1, then L's blocks indexed by i2
        x = input.reshape(-1, j1, j2).transpose(0, 1)                       # (j1, b, j2)
        t = x @ self.right.permute(2, 3, 0, 1).reshape(j1, j2, r * i2)      # (j1, b, r i2)
        t = t.reshape(j1, -1, r, i2).permute(3, 1, 2, 0).reshape(i2, -1, r * j1)
        y = t @ self.left.permute(1, 3, 2, 0).reshape(i2, r * j1, i1)      # (i2, b, i1)
        y = y.permute(1, 2, 0).reshape(*lead, self.out_features)
        return y + self.bias if self.bias is not None else y

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"in_modes={self.in_modes}, out_modes={self.out_modes}, rank={self.rank}, "
                f"bias={self.bias is not None}")


class MonarchLinear(BTTLinear):
    """A Monarch matrix layer: :class:`BTTLinear` of rank 1 (two block-diagonal factors and
    the reshape permutation between them). (*, in_features) -> (*, out_features).

    Example: ``MonarchLinear(1024, 1024)`` stores ``2 * 32^3 = 65536`` weights instead of
    ``1024^2``.
    """

    def __init__(self, in_features, out_features, in_modes=None, out_modes=None, bias=True,
                 init_scale=1.0, device=None, dtype=None):
        super().__init__(in_features, out_features, 1, in_modes, out_modes, bias, init_scale,
                         device, dtype)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"in_modes={self.in_modes}, out_modes={self.out_modes}, "
                f"bias={self.bias is not None}")
