"""Factorized 2-d convolutions as sequences of small convolutions, and the decomposition of a
trained ``nn.Conv2d`` into them.

For a kernel ``K (T, S, kh, kw)`` (out channels, in channels, height, width):

* :class:`CPConv2d` (Lebedev et al. 2015, "Speeding-up CNNs using fine-tuned CP-decomposition"):
  ``K = sum_r U_t[:, r] o U_s[:, r] o U_h[:, r] o U_w[:, r]`` run as pointwise S -> R,
  depthwise vertical (kh x 1), depthwise horizontal (1 x kw), pointwise R -> T;
* :class:`TuckerConv2d` (Tucker-2, Kim et al. 2016, "Compression of deep CNNs for fast and low
  power mobile applications"): ``K = G x_0 U_t x_1 U_s`` run as 1x1 S -> R_s, a
  ``kh x kw`` core conv R_s -> R_t, 1x1 R_t -> T;
* :class:`LowRankConv2d` (SVD of the channel unfolding ``K (T, S kh kw)``, the low-rank channel
  decomposition): a ``kh x kw`` conv S -> R, then 1x1 R -> T;
* :class:`SeparableConv2d` (one-way filters, Jaderberg et al. 2014, scheme 2): SVD of
  ``K`` as a ``(S kh, T kw)`` matrix, run as a vertical ``kh x 1`` conv S -> R then a
  horizontal ``1 x kw`` conv R -> T.

:func:`decompose_conv2d` picks, per layer, the method with the smallest kernel error at a
parameter budget; :func:`factorize_convs` does it for every Conv2d of a model.
"""

from __future__ import annotations

import math

from ...autograd import no_grad
from ...nn import Conv2d, Module, init
from ...nn import functional as F
from ...nn.layers._util import new_param, optional_param, pair
from ...ops.einsum import einsum
from .._base import multi_mode_dot, truncated_svd
from .._cp import parafac
from .._stable import cp_stabilize
from .._tucker import tucker
from ._util import scaled_normal_

__all__ = ["CPConv2d", "TuckerConv2d", "LowRankConv2d", "SeparableConv2d", "decompose_conv2d",
           "factorize_convs", "CONV_METHODS"]


class _FactorizedConv2d(Module):
    """Shared construction: geometry, bias, the kernel variance ``nn.Conv2d`` starts with."""

    def __init__(self, op, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 bias, device, dtype):
        super().__init__()
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size, self.stride = pair(kernel_size), pair(stride)
        self.padding, self.dilation = pair(padding), pair(dilation)
        if isinstance(padding, str) or any(not isinstance(p, int) or p < 0
                                           for p in self.padding):
            raise ValueError(f"{op}: padding must be non-negative ints, got {padding!r}")
        self._factory = dict(device=device, dtype=dtype)
        self.register_parameter("bias", optional_param(bias, self.out_channels, device=device,
                                                       dtype=dtype))

    def _param(self, *shape):
        return new_param(*shape, **self._factory)

    def _reset(self, factors, terms):
        """Normal factors scaled so that the dense kernel has ``nn.Conv2d``'s entry variance
        ``1 / (3 fan_in)``: an entry sums ``terms`` products of ``len(factors)`` entries."""
        fan_in = self.in_channels * math.prod(self.kernel_size)
        scaled_normal_(factors, 1 / (3 * fan_in), terms)
        if self.bias is not None:
            bound = 1 / math.sqrt(fan_in)
            init.uniform_(self.bias, -bound, bound)

    def _load(self, conv, arrays):
        with no_grad():
            for name, value in arrays.items():
                getattr(self, name).data = value.to(conv.weight.dtype).contiguous()
            if self.bias is not None:
                self.bias.copy_(conv.bias.detach())
        return self

    @classmethod
    def _geometry(cls, op, conv):
        if not isinstance(conv, Conv2d):
            raise TypeError(f"{op}: expected an nn.Conv2d, got {type(conv).__name__}")
        if conv.groups != 1 or conv.padding_mode != "zeros" or isinstance(conv.padding, str):
            raise ValueError(f"{op}: only groups=1 convolutions with explicit zero padding "
                             f"can be decomposed, got groups={conv.groups}, padding="
                             f"{conv.padding!r}, padding_mode={conv.padding_mode!r}")
        return dict(in_channels=conv.in_channels, out_channels=conv.out_channels,
                    kernel_size=conv.kernel_size, stride=conv.stride, padding=conv.padding,
                    dilation=conv.dilation, bias=conv.bias is not None,
                    device=conv.weight.device, dtype=conv.weight.dtype)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"rank={self.rank}, stride={self.stride}, padding={self.padding}"
                + ("" if self.dilation == (1, 1) else f", dilation={self.dilation}")
                + ("" if self.bias is not None else ", bias=False"))


def _check_rank(op, rank, cap=None):
    if not isinstance(rank, int) or isinstance(rank, bool) or rank < 1 or (
            cap is not None and rank > cap):
        bound = f" in [1, {cap}]" if cap is not None else " >= 1"
        raise ValueError(f"{op}: rank must be an int{bound}, got {rank!r}")
    return rank


class CPConv2d(_FactorizedConv2d):
    """A conv whose kernel ``(T, S, kh, kw)`` is a rank-``rank`` CP tensor, run as four convs:
    pointwise S -> R, depthwise ``kh x 1``, depthwise ``1 x kw``, pointwise R -> T (+ bias).
    (N, S, H, W) -> (N, T, H_out, W_out) exactly as ``nn.Conv2d`` with the dense kernel.
    ``R (S + kh + kw + T)`` parameters instead of ``T S kh kw``.

    Example::

        conv = nn.Conv2d(16, 32, 3, padding=1)
        cp = CPConv2d.from_conv(conv, rank=12)       # CP-ALS of the trained kernel
        y = cp(tx.randn(2, 16, 8, 8))                # (2, 32, 8, 8)
    """

    def __init__(self, in_channels, out_channels, kernel_size, rank, stride=1, padding=0,
                 dilation=1, bias=True, device=None, dtype=None):
        super().__init__("CPConv2d", in_channels, out_channels, kernel_size, stride, padding,
                         dilation, bias, device, dtype)
        self.rank = _check_rank("CPConv2d", rank)
        kh, kw = self.kernel_size
        self.pointwise_in = self._param(rank, self.in_channels, 1, 1)
        self.vertical = self._param(rank, 1, kh, 1)
        self.horizontal = self._param(rank, 1, 1, kw)
        self.pointwise_out = self._param(self.out_channels, rank, 1, 1)
        self._reset([self.pointwise_in, self.vertical, self.horizontal, self.pointwise_out],
                    rank)

    @classmethod
    def from_conv(cls, conv, rank, n_iter_max=200, random_state=0, stabilize=False):
        """CP-ALS (``decomp.parafac``, SVD start) of ``conv``'s kernel; the CP weights go to
        the last pointwise conv. ``stabilize``: then the error-preserving correction
        (``decomp.cp_stabilize``, Phan et al. 2020): the same kernel error with the rank-1
        terms' norms bounded, which a degenerate high-rank fit lets grow and fine-tuning then
        fights. Example: ``CPConv2d.from_conv(conv, rank=8, stabilize=True)``."""
        layer = cls(rank=rank, **cls._geometry("CPConv2d.from_conv", conv))
        cp = parafac(conv.weight.detach(), rank, n_iter_max=n_iter_max,
                     random_state=random_state)
        if stabilize:
            cp = cp_stabilize(conv.weight.detach(), cp)
        (t, s, h, w), weights = cp.factors, cp.weights
        return layer._load(conv, dict(
            pointwise_in=s.mT.reshape(rank, -1, 1, 1), vertical=h.mT.reshape(rank, 1, -1, 1),
            horizontal=w.mT.reshape(rank, 1, 1, -1),
            pointwise_out=(t * weights).reshape(t.shape[0], rank, 1, 1)))

    def to_dense(self):
        """The equivalent kernel ``(T, S, kh, kw)``; differentiable."""
        return einsum("rs,rh,rw,tr->tshw", self.pointwise_in[:, :, 0, 0],
                      self.vertical[:, 0, :, 0], self.horizontal[:, 0, 0, :],
                      self.pointwise_out[:, :, 0, 0])

    def forward(self, input):
        (sh, sw), (ph, pw), (dh, dw) = self.stride, self.padding, self.dilation
        x = F.conv2d(input, self.pointwise_in)
        x = F.conv2d(x, self.vertical, None, (sh, 1), (ph, 0), (dh, 1), self.rank)
        x = F.conv2d(x, self.horizontal, None, (1, sw), (0, pw), (1, dw), self.rank)
        return F.conv2d(x, self.pointwise_out, self.bias)


class TuckerConv2d(_FactorizedConv2d):
    """A conv whose kernel is a Tucker-2 tensor ``G (R_t, R_s, kh, kw) x_0 U_t x_1 U_s``, run as
    1x1 S -> R_s, the ``kh x kw`` core conv R_s -> R_t (with the stride, padding, dilation),
    1x1 R_t -> T (+ bias). (N, S, H, W) -> (N, T, H_out, W_out). ``rank``: ``(R_t, R_s)`` or
    one int for both, at most ``(T, S)``.

    Example: ``TuckerConv2d.from_conv(nn.Conv2d(16, 32, 3), rank=(8, 4))``.
    """

    def __init__(self, in_channels, out_channels, kernel_size, rank, stride=1, padding=0,
                 dilation=1, bias=True, device=None, dtype=None):
        super().__init__("TuckerConv2d", in_channels, out_channels, kernel_size, stride,
                         padding, dilation, bias, device, dtype)
        r_t, r_s = (rank, rank) if isinstance(rank, int) else tuple(rank)
        self.rank = (_check_rank("TuckerConv2d", r_t, self.out_channels),
                     _check_rank("TuckerConv2d", r_s, self.in_channels))
        self.first = self._param(r_s, self.in_channels, 1, 1)
        self.core = self._param(r_t, r_s, *self.kernel_size)
        self.last = self._param(self.out_channels, r_t, 1, 1)
        self._reset([self.first, self.core, self.last], r_t * r_s)

    @classmethod
    def from_conv(cls, conv, rank, n_iter_max=10):
        """Tucker-2 of ``conv``'s kernel by HOSVD + HOOI on the channel modes (spatial modes
        kept whole). Example: ``TuckerConv2d.from_conv(conv, rank=(16, 8))``."""
        layer = cls(rank=rank, **cls._geometry("TuckerConv2d.from_conv", conv))
        kh, kw = layer.kernel_size
        core, (u_t, u_s, u_h, u_w) = tucker(conv.weight.detach(), [*layer.rank, kh, kw],
                                            n_iter_max=n_iter_max)
        core = multi_mode_dot(core, [u_h, u_w], modes=[2, 3])  # square orthogonal: absorb
        return layer._load(conv, dict(first=u_s.mT.reshape(*u_s.mT.shape, 1, 1), core=core,
                                      last=u_t.reshape(*u_t.shape, 1, 1)))

    def to_dense(self):
        """The equivalent kernel ``(T, S, kh, kw)``; differentiable."""
        return einsum("bs,tc,cbhw->tshw", self.first[:, :, 0, 0], self.last[:, :, 0, 0],
                      self.core)

    def forward(self, input):
        x = F.conv2d(input, self.first)
        x = F.conv2d(x, self.core, None, self.stride, self.padding, self.dilation)
        return F.conv2d(x, self.last, self.bias)


class LowRankConv2d(_FactorizedConv2d):
    """A conv whose kernel has channel rank ``rank``: ``K = U V`` with ``V (R, S kh kw)``, run
    as a ``kh x kw`` conv S -> R (with the stride, padding, dilation) and a 1x1 conv R -> T
    (+ bias). From a trained conv: truncated SVD of ``K (T, S kh kw)``, the best such kernel.

    Example: ``LowRankConv2d.from_conv(nn.Conv2d(16, 32, 3), rank=8)``.
    """

    def __init__(self, in_channels, out_channels, kernel_size, rank, stride=1, padding=0,
                 dilation=1, bias=True, device=None, dtype=None):
        super().__init__("LowRankConv2d", in_channels, out_channels, kernel_size, stride,
                         padding, dilation, bias, device, dtype)
        cap = min(self.out_channels, self.in_channels * math.prod(self.kernel_size))
        self.rank = _check_rank("LowRankConv2d", rank, cap)
        self.first = self._param(rank, self.in_channels, *self.kernel_size)
        self.last = self._param(self.out_channels, rank, 1, 1)
        self._reset([self.first, self.last], rank)

    @classmethod
    def from_conv(cls, conv, rank):
        """Truncated SVD of the kernel's channel unfolding, ``sqrt(S)`` to each side.
        Example: ``LowRankConv2d.from_conv(conv, rank=4)``."""
        layer = cls(rank=rank, **cls._geometry("LowRankConv2d.from_conv", conv))
        weight = conv.weight.detach()
        u, s, vh = truncated_svd(weight.reshape(weight.shape[0], -1), layer.rank)
        root = s.sqrt()
        return layer._load(conv, dict(first=(root.unsqueeze(1) * vh).reshape(
            layer.rank, *weight.shape[1:]), last=(u * root).reshape(*u.shape, 1, 1)))

    def to_dense(self):
        """The equivalent kernel ``(T, S, kh, kw)``; differentiable."""
        return einsum("tr,rshw->tshw", self.last[:, :, 0, 0], self.first)

    def forward(self, input):
        x = F.conv2d(input, self.first, None, self.stride, self.padding, self.dilation)
        return F.conv2d(x, self.last, self.bias)


class SeparableConv2d(_FactorizedConv2d):
    """One-way (separable) filters: a vertical ``kh x 1`` conv S -> R then a horizontal
    ``1 x kw`` conv R -> T (+ bias), so ``K[t, s, y, x] = sum_r H[t, r, x] V[r, s, y]``.
    From a trained conv: SVD of ``K`` arranged as a ``(S kh, T kw)`` matrix, which gives the
    best such pair (Jaderberg et al. 2014, scheme 2). ``rank <= min(S kh, T kw)``.

    Example: ``SeparableConv2d.from_conv(nn.Conv2d(16, 32, 3, padding=1), rank=12)``.
    """

    def __init__(self, in_channels, out_channels, kernel_size, rank, stride=1, padding=0,
                 dilation=1, bias=True, device=None, dtype=None):
        super().__init__("SeparableConv2d", in_channels, out_channels, kernel_size, stride,
                         padding, dilation, bias, device, dtype)
        kh, kw = self.kernel_size
        cap = min(self.in_channels * kh, self.out_channels * kw)
        self.rank = _check_rank("SeparableConv2d", rank, cap)
        self.vertical = self._param(rank, self.in_channels, kh, 1)
        self.horizontal = self._param(self.out_channels, rank, 1, kw)
        self._reset([self.vertical, self.horizontal], rank)

    @classmethod
    def from_conv(cls, conv, rank):
        """SVD of the ``(S kh, T kw)`` arrangement of the kernel. Example:
        ``SeparableConv2d.from_conv(conv, rank=6)``."""
        layer = cls(rank=rank, **cls._geometry("SeparableConv2d.from_conv", conv))
        t, s, kh, kw = conv.weight.shape
        matrix = conv.weight.detach().permute(1, 2, 0, 3).reshape(s * kh, t * kw)
        u, sig, vh = truncated_svd(matrix, layer.rank)
        root = sig.sqrt()
        vertical = (u * root).reshape(s, kh, -1).permute(2, 0, 1).unsqueeze(-1)
        horizontal = (root.unsqueeze(1) * vh).reshape(-1, t, kw).permute(1, 0, 2).unsqueeze(2)
        return layer._load(conv, dict(vertical=vertical, horizontal=horizontal))

    def to_dense(self):
        """The equivalent kernel ``(T, S, kh, kw)``; differentiable."""
        return einsum("trx,rsy->tsyx", self.horizontal[:, :, 0, :], self.vertical[:, :, :, 0])

    def forward(self, input):
        (sh, sw), (ph, pw), (dh, dw) = self.stride, self.padding, self.dilation
        x = F.conv2d(input, self.vertical, None, (sh, 1), (ph, 0), (dh, 1))
        return F.conv2d(x, self.horizontal, self.bias, (1, sw), (0, pw), (1, dw))


def _params_per_rank(method, t, s, kh, kw):
    """Kernel entries stored per unit of rank (Tucker: per unit of the channel-rank scale)."""
    return {"svd": s * kh * kw + t, "separable": s * kh + t * kw,
            "cp": s + kh + kw + t}[method]


def _largest_rank(method, t, s, kh, kw, budget):
    """The largest rank whose kernel parameters fit ``budget`` (entries), within the method's
    cap; Tucker ranks keep the channel ratio ``R_t / R_s = T / S``. None if none fits."""
    if method == "tucker":
        best = None
        for r_t in range(1, t + 1):
            r_s = max(1, min(s, round(r_t * s / t)))
            if r_s * s + r_t * r_s * kh * kw + t * r_t <= budget:
                best = (r_t, r_s)
        return best
    caps = {"svd": min(t, s * kh * kw), "separable": min(s * kh, t * kw),
            "cp": t * s * kh * kw // max(t, s, kh, kw)}
    rank = min(int(budget // _params_per_rank(method, t, s, kh, kw)), caps[method])
    return rank if rank >= 1 else None


CONV_METHODS = {"svd": LowRankConv2d, "separable": SeparableConv2d, "cp": CPConv2d,
                "tucker": TuckerConv2d}


def decompose_conv2d(conv, budget=0.25, methods=("svd", "cp"), cp_iter=200, stabilize=False):
    """Replace a trained ``nn.Conv2d`` by the factorized conv with the smallest relative kernel
    error ``||K - K_hat|| / ||K||`` among ``methods`` (any of ``'svd'`` (low-rank channel),
    ``'separable'`` (one-way filters), ``'cp'``, ``'tucker'``), each at the largest rank whose
    kernel fits ``budget`` (a fraction of the dense kernel's entries). ``stabilize``: CP fits
    get the error-preserving correction (see :meth:`CPConv2d.from_conv`).

    Returns ``(layer, report)``: ``report[method] = (rank, kernel entries, relative error)``
    for every method that fits; ``layer`` is ``conv`` itself when none does. Example::

        layer, report = decompose_conv2d(model.conv2, budget=0.3, methods=("svd", "cp"))
    """
    op = "decompose_conv2d"
    if not budget > 0:
        raise ValueError(f"{op}: budget must be a positive fraction, got {budget!r}")
    unknown = [m for m in methods if m not in CONV_METHODS]
    if unknown or not methods:
        raise ValueError(f"{op}: methods must be among {sorted(CONV_METHODS)}, got "
                         f"{tuple(methods)!r}")
    CPConv2d._geometry(op, conv)
    t, s, kh, kw = conv.weight.shape
    dense = conv.weight.detach()
    report, best = {}, (None, math.inf)
    for method in methods:
        rank = _largest_rank(method, t, s, kh, kw, budget * dense.numel())
        if rank is None:
            continue
        kwargs = dict(n_iter_max=cp_iter, stabilize=stabilize) if method == "cp" else {}
        layer = CONV_METHODS[method].from_conv(conv, rank, **kwargs)
        with no_grad():
            err = float((layer.to_dense() - dense).norm() / dense.norm())
        stored = sum(p.numel() for n, p in layer.named_parameters() if n != "bias")
        report[method] = (layer.rank, stored, err)
        if err < best[1]:
            best = (layer, err)
    return (best[0] if best[0] is not None else conv), report


def factorize_convs(model, budget=0.25, methods=("svd", "cp"), skip=(), cp_iter=200,
                    stabilize=False):
    """Replace, in place, every ``nn.Conv2d`` of ``model`` (groups 1, zero padding, not named
    in ``skip``) by :func:`decompose_conv2d`'s choice at ``budget`` (``stabilize``: for CP
    fits, as there). Returns
    ``{qualified name: (chosen method, rank, relative kernel error)}``.

    Example: ``factorize_convs(cnn, budget=0.3, methods=("svd", "cp", "tucker"))``.
    """
    chosen = {}
    for name, parent in list(model.named_modules()):
        for child_name, child in list(parent.named_children()):
            full = f"{name}.{child_name}" if name else child_name
            if not isinstance(child, Conv2d) or full in skip or child.groups != 1 or \
                    child.padding_mode != "zeros" or isinstance(child.padding, str):
                continue
            layer, report = decompose_conv2d(child, budget, methods, cp_iter, stabilize)
            if layer is child:
                continue
            method = next(m for m, cls in CONV_METHODS.items() if isinstance(layer, cls))
            setattr(parent, child_name, layer)
            chosen[full] = (method, report[method][0], report[method][2])
    return chosen
