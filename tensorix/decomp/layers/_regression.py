"""Tensor regression with a low-rank weight, tensor dropout, and low-rank multimodal fusion.

* :class:`TensorRegression` (the tensor regression layer of Kossaifi et al. 2020, "Tensor
  Regression Networks", JMLR 21): ``y = <X, W> + b`` for ``X (N, I_1, ..., I_K)`` and
  ``W (I_1, ..., I_K, O)`` in Tucker or CP form, computed by projecting ``X`` on the factors
  first, so ``W`` is never formed. With ``dropout > 0`` it applies tensor dropout
  (Kolbeinsson et al. 2021, "Tensor Dropout for Robust Learning", IEEE JSTSP): in training,
  each rank-one CP component, or each Tucker core slice along every mode, is kept with
  probability ``1 - p`` and scaled by ``1 / (1 - p)`` (so the expected weight is unchanged).
* :class:`LowRankFusion` (LMF, Liu et al. 2018, "Efficient Low-rank Multimodal Fusion with
  Modality-Specific Factors", ACL): the tensor-fusion weight over ``[z_m, 1]`` of every
  modality in CP form, ``h = sum_r w_r prod_m ([z_m, 1] W_m[r]) + b``.
"""

from __future__ import annotations

import math

from ...nn import Module, ParameterList, init
from ...nn.layers._util import new_param, optional_param
from ...ops.creation import ones
from ...ops.einsum import einsum
from ...ops.random import bernoulli
from ...ops.shape import cat
from ._util import scaled_normal_

__all__ = ["TensorRegression", "LowRankFusion"]

_LETTERS = "abcdefghijklm"


def _check_ranks(op, rank, sizes, what):
    if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 1:
        return [min(rank, s) for s in sizes]  # an int is a bound, as decomp.tucker takes it
    rank = [int(r) for r in rank]
    if len(rank) != len(sizes) or any(not 1 <= r <= s for r, s in zip(rank, sizes)):
        raise ValueError(f"{op}: rank must be an int or {len(sizes)} ints with 1 <= rank[k] "
                         f"<= {what} {tuple(sizes)}, got {rank}")
    return rank


class TensorRegression(Module):
    """Tensor regression layer: (N, *input_shape) -> (N, out_features) through a weight
    ``(*input_shape, out_features)`` of low Tucker or CP rank, with tensor dropout.

    ``factorization='tucker'``: ``rank`` is an int (a bound, capped at each mode) or ``K + 1``
    ints (input modes, then the output), each at most its mode; the weight is
    ``G x_1 U_1 ... x_K U_K x_O U_O``.
    ``factorization='cp'``: ``rank`` is one int R; the weight is
    ``sum_r U_1[:, r] o ... o U_K[:, r] o U_O[:, r]``. Factors start normal so that the weight
    has ``nn.Linear``'s entry variance ``1 / (3 prod(input_shape))``.

    Example::

        trl = TensorRegression((8, 4, 4), 10, rank=(4, 2, 2, 10))   # features of a CNN
        y = trl(tx.randn(32, 8, 4, 4))                                # (32, 10)
    """

    def __init__(self, input_shape, out_features, rank, factorization="tucker", dropout=0.0,
                 bias=True, device=None, dtype=None):
        super().__init__()
        op = "TensorRegression"
        self.input_shape, self.out_features = tuple(int(s) for s in input_shape), out_features
        if factorization not in ("tucker", "cp"):
            raise ValueError(f"{op}: factorization must be 'tucker' or 'cp', got "
                             f"{factorization!r}")
        if not 0 <= dropout < 1:
            raise ValueError(f"{op}: dropout must be in [0, 1), got {dropout!r}")
        self.factorization, self.dropout = factorization, dropout
        sizes = self.input_shape + (out_features,)
        fac = dict(device=device, dtype=dtype)
        if factorization == "cp":
            bound = math.prod(sizes) // max(sizes)
            if not isinstance(rank, int) or not 1 <= rank <= bound:
                raise ValueError(f"{op}: a CP rank must be an int in [1, {bound}] for a weight "
                                 f"of shape {sizes}, got {rank!r}")
            self.rank = rank
            self.factors = ParameterList([new_param(s, rank, **fac) for s in sizes])
            scaled_normal_(list(self.factors), 1 / (3 * math.prod(self.input_shape)), rank)
        else:
            self.rank = tuple(_check_ranks(op, rank, sizes, "the weight's shape"))
            self.core = new_param(*self.rank, **fac)
            self.factors = ParameterList([new_param(s, r, **fac)
                                          for s, r in zip(sizes, self.rank)])
            scaled_normal_([self.core, *self.factors], 1 / (3 * math.prod(self.input_shape)),
                           math.prod(self.rank))
        self.register_parameter("bias", optional_param(bias, out_features, **fac))
        if self.bias is not None:
            init.zeros_(self.bias)

    def _masks(self, like):
        """Tensor dropout: a kept/dropped draw per CP component or per Tucker core slice of
        every mode, rescaled by ``1 / (1 - p)`` (per mode, so that the product is unbiased)."""
        keep = 1 - self.dropout
        ranks = [self.rank] if self.factorization == "cp" else list(self.rank)
        return [bernoulli(ones(r, dtype=like.dtype, device=like.device) * keep) / keep
                for r in ranks]

    def _factors(self, masks):
        if masks is None:
            return list(self.factors), getattr(self, "core", None)
        if self.factorization == "cp":
            return [f * masks[0] if k == 0 else f for k, f in enumerate(self.factors)], None
        return [f * m for f, m in zip(self.factors, masks)], self.core

    def to_dense(self):
        """The weight ``(*input_shape, out_features)``; differentiable."""
        factors, core = self._factors(None)
        n = len(factors)
        modes = _LETTERS[:n]
        if self.factorization == "cp":
            spec = ",".join(f"{m}z" for m in modes) + "->" + modes
            return einsum(spec, *factors)
        ranks = _LETTERS[n:2 * n]
        spec = ranks + "," + ",".join(f"{m}{r}" for m, r in zip(modes, ranks)) + "->" + modes
        return einsum(spec, core, *factors)

    def forward(self, input):
        if tuple(input.shape[1:]) != self.input_shape:
            raise ValueError(f"TensorRegression: expected input of shape (N, "
                             f"{', '.join(map(str, self.input_shape))}), got "
                             f"{tuple(input.shape)}")
        drop = self.training and self.dropout > 0
        factors, core = self._factors(self._masks(input) if drop else None)
        k = len(self.input_shape)
        modes = _LETTERS[:k]
        if self.factorization == "cp":
            # project X on every rank-one component, then map the R scores to the outputs
            spec = "n" + modes + "," + ",".join(f"{m}z" for m in modes) + ",oz->no"
            out = einsum(spec, input, *factors)
        else:
            ranks = _LETTERS[k:2 * k]
            spec = ("n" + modes + "," + ",".join(f"{m}{r}" for m, r in zip(modes, ranks))
                    + "," + ranks + "y,oy->no")
            out = einsum(spec, input, *factors[:k], core, factors[k])
        return out + self.bias if self.bias is not None else out

    def extra_repr(self):
        return (f"input_shape={self.input_shape}, out_features={self.out_features}, "
                f"factorization={self.factorization!r}, rank={self.rank}, "
                f"dropout={self.dropout}")


class LowRankFusion(Module):
    """Low-rank multimodal fusion (LMF): inputs ``z_m (N, d_m)`` for each modality ->
    ``(N, out_features)``. The tensor-fusion weight over ``[z_1, 1] o ... o [z_M, 1]`` is kept
    as ``rank`` modality-specific factors ``W_m (rank, d_m + 1, out)`` and fusion weights
    ``(rank,)``: ``h = sum_r w_r prod_m ([z_m, 1] @ W_m[r]) + bias``, linear in each input
    instead of ``prod_m (d_m + 1)`` weights per output.

    Example::

        lmf = LowRankFusion((32, 16, 8), 64, rank=4)
        h = lmf(audio, video, text)        # (N, 32), (N, 16), (N, 8) -> (N, 64)
    """

    def __init__(self, in_features, out_features, rank, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = tuple(int(d) for d in in_features), out_features
        if len(self.in_features) < 2:
            raise ValueError(f"LowRankFusion: expected at least 2 modalities, got "
                             f"in_features={self.in_features}")
        if not isinstance(rank, int) or rank < 1:
            raise ValueError(f"LowRankFusion: rank must be a positive int, got {rank!r}")
        self.rank = rank
        fac = dict(device=device, dtype=dtype)
        self.factors = ParameterList([new_param(rank, d + 1, out_features, **fac)
                                      for d in self.in_features])
        self.fusion_weights = new_param(rank, **fac)
        self.bias = new_param(out_features, **fac)
        fan_in = math.prod(d + 1 for d in self.in_features)
        scaled_normal_([*self.factors, self.fusion_weights], 1 / (3 * fan_in), rank)
        init.zeros_(self.bias)

    @staticmethod
    def _with_one(z):
        return cat([z, ones(z.shape[0], 1, dtype=z.dtype, device=z.device)], 1)

    def to_dense(self):
        """The full fusion weight ``(d_1 + 1, ..., d_M + 1, out_features)``; differentiable."""
        m = len(self.factors)
        modes = _LETTERS[:m]
        spec = "z," + ",".join(f"z{c}o" for c in modes) + "->" + modes + "o"
        return einsum(spec, self.fusion_weights, *self.factors)

    def forward(self, *inputs):
        if len(inputs) != len(self.in_features) or any(
                z.ndim != 2 or z.shape[1] != d for z, d in zip(inputs, self.in_features)):
            raise ValueError(f"LowRankFusion: expected {len(self.in_features)} inputs of "
                             f"shapes (N, d) with d = {self.in_features}, got "
                             f"{[tuple(z.shape) for z in inputs]}")
        fused = None
        for z, w in zip(inputs, self.factors):
            part = einsum("nd,rdo->nro", self._with_one(z), w)
            fused = part if fused is None else fused * part
        return einsum("nro,r->no", fused, self.fusion_weights) + self.bias

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"rank={self.rank}")
