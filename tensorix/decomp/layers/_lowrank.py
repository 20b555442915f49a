"""Low-rank linear maps: a GEMM through a randomized SVD, a low-rank Linear, rank
compensation at equal bytes, and rank-adaptive Tucker training.

* :func:`low_rank_gemm` approximates ``A @ B`` by ``U (S (Vh @ B))`` from a randomized SVD of
  ``A`` (Halko, Martinsson & Tropp 2011): ``O(r (m k + k n + m n))`` instead of ``O(m k n)``
  once the factors exist (:class:`LowRankLinear` keeps them).
* :func:`rank_compensation` stores the factors of a rank-``r`` float32 approximation in a
  lower-precision format of :mod:`tensorix.numerics` and reinvests the bytes saved in a higher
  rank (``r * 32 / bits``), reporting the error of each at equal bytes.
* :func:`shrink_tucker_ranks` truncates the Tucker ranks of a :class:`TuckerConv2d` or a
  Tucker :class:`TensorRegression` in place by the energy of its core's unfoldings (HOSVD of
  the core after orthonormalising the factors), so that ranks shrink during training as in
  the rank-adaptive Tucker training of Zangrando et al. 2023 ("Rank-adaptive spectral pruning
  of convolutional layers during training").
"""

from __future__ import annotations

import math

from ...autograd import no_grad
from ...linalg import qr
from ...nn import Module, ParameterList, init
from ...nn.layers._util import new_param, optional_param
from ...nn.parameter import Parameter
from ...numerics import get_format, mx_fake_quant, quantize
from ...tensor import Tensor
from .._base import mode_dot, randomized_svd, truncated_svd, unfold
from ._conv import TuckerConv2d
from ._regression import TensorRegression

__all__ = ["low_rank_gemm", "LowRankLinear", "rank_compensation", "storage_bits",
           "storage_bytes", "shrink_tucker_ranks"]


def low_rank_gemm(a, b, rank, n_iter=2, random_state=None):
    """``a (m, k) @ b (k, n)`` through the rank-``rank`` randomized SVD of ``a`` (``n_iter``
    power iterations): exact when ``rank(a) <= rank``; error ``||a - a_r|| ||b||`` at most.
    Example: ``low_rank_gemm(W, X, rank=32, random_state=0)`` approximates ``W @ X``."""
    u, s, vh = randomized_svd(a, rank, n_iter=n_iter, random_state=random_state)
    return u @ (s.unsqueeze(1) * (vh @ b))


def storage_bits(fmt):
    """Bits stored per factor entry in format ``fmt``: ``'fp32'``, an element format of
    :mod:`tensorix.formats` (``'bf16'``, ``'fp8_e4m3'``, ...), or ``'mx_<element>'`` (OCP MX
    with 32-element blocks: the element plus an 8-bit shared scale per block; a row shorter
    than a block still pays a whole scale, see :func:`storage_bytes`).
    Example: ``storage_bits('mx_fp4_e2m1') == 4.25``."""
    if fmt == "fp32":
        return 32.0
    if fmt.startswith("mx_"):
        return get_format(fmt[3:]).bits + 8 / 32
    return float(get_format(fmt).bits)


def storage_bytes(shape, fmt):
    """Bytes of a ``(rows, cols)`` matrix in ``fmt``, MX blocks running along each row (one
    8-bit scale per started block of 32). Example: ``storage_bytes((4, 40), 'mx_fp8_e4m3')``
    is ``4 * (40 + 2)``."""
    rows, cols = shape
    if fmt.startswith("mx_"):
        return rows * (cols * get_format(fmt[3:]).bits / 8 + math.ceil(cols / 32))
    return rows * cols * storage_bits(fmt) / 8


def _round(x, fmt):
    """``x`` rounded to ``fmt`` (a fake quantization: values representable in ``fmt``)."""
    if fmt == "fp32":
        return x
    if fmt.startswith("mx_"):
        return mx_fake_quant(x, elem=fmt[3:], block=32, axis=-1, pad=True)
    return quantize(x, fmt)


class LowRankLinear(Module):
    """``y = x @ (U V).T + bias`` with ``V (rank, in)`` and ``U (out, rank)``:
    (*, in_features) -> (*, out_features) in ``rank (in + out)`` weights.

    ``from_dense`` takes the (randomized) SVD of a trained weight, with ``sqrt(S)`` on each
    side, and optionally rounds both factors to a storage format (``fmt``, see
    :func:`storage_bits`). Example::

        small = LowRankLinear.from_dense(nn.Linear(512, 512), rank=64, method="randomized")
        small8 = LowRankLinear.from_dense(layer, rank=240, fmt="mx_fp8_e4m3")  # equal bytes
    """

    def __init__(self, in_features, out_features, rank, bias=True, device=None, dtype=None):
        super().__init__()
        cap = min(in_features, out_features)
        if not isinstance(rank, int) or not 1 <= rank <= cap:
            raise ValueError(f"LowRankLinear: rank must be an int in [1, {cap}], got {rank!r}")
        self.in_features, self.out_features, self.rank = in_features, out_features, rank
        self.fmt = "fp32"
        fac = dict(device=device, dtype=dtype)
        self.V = new_param(rank, in_features, **fac)
        self.U = new_param(out_features, rank, **fac)
        self.register_parameter("bias", optional_param(bias, out_features, **fac))
        # nn.Linear's weight variance 1 / (3 in): an entry sums `rank` products of two
        for f in (self.U, self.V):
            init.normal_(f, 0.0, (1 / (3 * in_features * rank)) ** 0.25)
        if self.bias is not None:
            init.uniform_(self.bias, -1 / math.sqrt(in_features), 1 / math.sqrt(in_features))

    @classmethod
    def from_dense(cls, linear_or_weight, rank, method="truncated", fmt="fp32", n_iter=4,
                   random_state=0):
        """Factors of a trained weight ``(out, in)`` by ``method`` ('truncated' or
        'randomized' SVD), rounded to ``fmt``; the bias is copied."""
        weight = getattr(linear_or_weight, "weight", linear_or_weight)
        bias = getattr(linear_or_weight, "bias", None)
        if not isinstance(weight, Tensor) or weight.ndim != 2:
            raise TypeError("LowRankLinear.from_dense: expected an nn.Linear or a 2-d weight, "
                            f"got {type(linear_or_weight).__name__}")
        if method not in ("truncated", "randomized"):
            raise ValueError(f"LowRankLinear.from_dense: method must be 'truncated' or "
                             f"'randomized', got {method!r}")
        storage_bits(fmt)  # an unknown format fails here, by name
        layer = cls(weight.shape[1], weight.shape[0], rank, bias=bias is not None,
                    device=weight.device, dtype=weight.dtype)
        with no_grad():
            w = weight.detach()
            u, s, vh = (truncated_svd(w, rank) if method == "truncated" else
                        randomized_svd(w, rank, n_iter=n_iter, random_state=random_state))
            root = s.sqrt()
            layer.U.copy_(_round(u * root, fmt))
            layer.V.copy_(_round(root.unsqueeze(1) * vh, fmt))
            if bias is not None:
                layer.bias.copy_(bias.detach())
        layer.fmt = fmt
        return layer

    def storage_bytes(self):
        """Bytes of the two factors in the layer's storage format (:func:`storage_bytes`)."""
        return sum(storage_bytes(tuple(f.shape), self.fmt) for f in (self.U, self.V))

    def to_dense(self):
        """The weight ``(out_features, in_features)``; differentiable."""
        return self.U @ self.V

    def forward(self, input):
        out = (input @ self.V.mT) @ self.U.mT
        return out + self.bias if self.bias is not None else out

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"rank={self.rank}, fmt={self.fmt!r}, bias={self.bias is not None}")


def rank_compensation(weight, rank, formats=("fp32", "bf16", "mx_fp8_e4m3", "mx_fp4_e2m1"),
                      method="truncated"):
    """For each storage format, the largest rank whose factors fit the bytes of a
    rank-``rank`` float32 factorization of ``weight (m, n)`` (about ``rank * 32 / bits``,
    capped at ``min(m, n)``; MX scales counted exactly) and the relative error
    ``||W - U V|| / ||W||`` of the rounded factors at that rank.

    Returns ``{fmt: (rank, bytes, relative error)}``. Example::

        table = rank_compensation(model.fc.weight, rank=16)
        table["mx_fp8_e4m3"]    # (62, bytes, error): ~3.9x the rank in the same bytes
    """
    if not isinstance(weight, Tensor) or weight.ndim != 2:
        raise TypeError(f"rank_compensation: expected a 2-d weight Tensor, got "
                        f"{type(weight).__name__}")
    m, n = weight.shape
    cap = min(m, n)
    if not isinstance(rank, int) or not 1 <= rank <= cap:
        raise ValueError(f"rank_compensation: rank must be an int in [1, {cap}], got {rank!r}")
    budget = rank * (m + n) * 4  # bytes of the float32 factors
    table = {}
    with no_grad():
        for fmt in formats:
            r = min(cap, int(rank * 32 // storage_bits(fmt)))
            while r > 1 and storage_bytes((m, r), fmt) + storage_bytes((r, n), fmt) > budget:
                r -= 1
            layer = LowRankLinear.from_dense(weight, r, method=method, fmt=fmt)
            err = float((layer.to_dense() - weight).norm() / weight.norm())
            table[fmt] = (r, layer.storage_bytes(), err)
    return table


def _tucker_modes(layer):
    """The core, ``{mode: factor (I, R)}`` of a Tucker-parametrized layer, and the function
    that installs new factors (same dict form) as parameters."""
    if isinstance(layer, TuckerConv2d):
        def install(f):
            layer.last = Parameter(f[0].reshape(*f[0].shape, 1, 1).contiguous())
            layer.first = Parameter(f[1].mT.reshape(*f[1].mT.shape, 1, 1).contiguous())
        return layer.core, {0: layer.last[:, :, 0, 0], 1: layer.first[:, :, 0, 0].mT}, install
    if isinstance(layer, TensorRegression) and layer.factorization == "tucker":
        def install(f):
            layer.factors = ParameterList([Parameter(f[k].contiguous()) for k in sorted(f)])
        return layer.core, dict(enumerate(layer.factors)), install
    raise TypeError(f"shrink_tucker_ranks: expected a TuckerConv2d or a Tucker "
                    f"TensorRegression, got {type(layer).__name__}")


def shrink_tucker_ranks(layer, tol=1e-2, min_rank=1):
    """Truncate, in place, the Tucker ranks of ``layer`` (a :class:`TuckerConv2d` or a Tucker
    :class:`TensorRegression`): orthonormalise each factor (QR, ``R`` into the core), then per
    mode keep the fewest singular vectors of the core's unfolding whose discarded energy is at
    most ``tol^2 / n_modes`` of the core's (so the layer's weight moves by at most ``tol``
    relative). Returns the new ranks. The parameters are new tensors: rebuild the optimizer
    after a shrink (as every rank-adaptive method must).

    Example (every few epochs)::

        if shrink_tucker_ranks(conv, tol=0.05) != old_ranks:
            opt = optim.Adam(model.parameters(), lr=1e-3)
    """
    if not 0 <= tol < 1:
        raise ValueError(f"shrink_tucker_ranks: tol must be in [0, 1), got {tol!r}")
    core, factors, install = _tucker_modes(layer)
    with no_grad():
        core = core.detach()
        for mode, f in factors.items():
            q, r = qr(f.detach())
            factors[mode] = q
            core = mode_dot(core, r, mode)
        total = float(core.norm()) ** 2
        for mode in factors:
            u, s, _ = truncated_svd(unfold(core, mode))
            tail = (s.flip(0) ** 2).cumsum(0).flip(0).tolist() + [0.0]
            allowed = tol ** 2 * total / len(factors)
            keep = next(k for k in range(1, len(tail)) if tail[k] <= allowed)
            keep = max(keep, min(min_rank, len(s)))
            u = u[:, :keep]
            factors[mode] = factors[mode] @ u
            core = mode_dot(core, u.mT, mode)
        install(factors)
        layer.core = Parameter(core.contiguous())
    new_rank = tuple(layer.core.shape[m] for m in factors)
    layer.rank = new_rank if isinstance(layer, TuckerConv2d) else tuple(layer.core.shape)
    return new_rank
