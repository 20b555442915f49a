"""SMMF: square-matricized momentum factorization (Park and Lee, AAAI 2025, arXiv 2412.08894).

Adam-like, with both moments stored factorized: each parameter's gradient is viewed as the
"most square" matrix ``(n, m)`` with ``n * m = numel`` and ``n >= m`` (``m`` the largest
divisor not above sqrt(numel)); each moment is kept as a rank-1 non-negative factorization
``r c^T`` (``r``: row sums, ``c``: column sums, the shorter one normalised to sum 1), and the
first moment's signs as a 1-bit matrix. A step decompresses, updates as Adam without bias
correction, with ``beta1_t = beta1 * growth_rate^(t-1)`` and
``beta2_t = 1 - t^decay_rate``, compresses again, and steps along ``M / (sqrt(V) + eps)`` (the
uncompressed moments of this step).

State per parameter: ``n + m`` floats per moment and ``numel / 8`` bytes of signs, against
Adam's ``2 numel`` floats (measured in docs/distributed.md and tests/test_smmf.py).
"""

from __future__ import annotations

import math

from ..backend import array_module
from ..tensor import _make
from .optimizer import Optimizer, check_hparam, check_nonneg

__all__ = ["SMMF", "smmf_update", "square_shape"]


def square_shape(numel: int) -> tuple:
    """The most square ``(n, m)``, ``n >= m``, with ``n * m == numel``: ``m`` is the largest
    divisor of ``numel`` not above its square root. Example: ``square_shape(12) == (4, 3)``."""
    for m in range(math.isqrt(numel), 0, -1):
        if numel % m == 0:
            return numel // m, m
    return numel, 1  # numel == 0


def _compress(matrix, r, c):
    """Rank-1 non-negative factorization in place: ``r``, ``c`` = row and column sums, the
    shorter side normalised by the total (so ``r c^T`` keeps the matrix's sum)."""
    xp = array_module(matrix)
    xp.sum(matrix, axis=1, out=r)
    xp.sum(matrix, axis=0, out=c)
    side = r if matrix.shape[0] < matrix.shape[1] else c
    total = float(side.sum())
    if total != 0:
        side /= total


def smmf_update(p, g, r_v, c_v, r_m, c_m, sign, step, *, lr, beta1, eps, weight_decay,
                decay_rate, growth_rate, decoupled):
    """One SMMF step on raw arrays, in place: ``r_v``/``c_v`` the second moment's factors,
    ``r_m``/``c_m``/``sign`` (packed bits) the first's (None when ``beta1`` is None), their
    lengths the matricization ``(n, m)``; ``step`` counts from 1."""
    xp = array_module(p)
    if weight_decay:
        if decoupled:
            p *= 1 - lr * weight_decay
        else:
            g = g + weight_decay * p
    n, m = r_v.size, c_v.size
    g2 = g.reshape(n, m)
    v = xp.outer(r_v, c_v)
    beta2_t = 1.0 - step ** decay_rate
    v *= beta2_t
    v += (1.0 - beta2_t) * (g2 * g2)
    _compress(v, r_v, c_v)
    if beta1 is not None:
        mom = xp.outer(r_m, c_m)
        signs = xp.unpackbits(sign)[:n * m].reshape(n, m).astype(bool)
        mom = xp.where(signs, mom, -mom)
        beta1_t = beta1 * growth_rate ** (step - 1)
        mom *= beta1_t
        mom += (1.0 - beta1_t) * g2
        sign[...] = xp.packbits((mom > 0).reshape(-1))
        _compress(xp.abs(mom), r_m, c_m)
    else:
        mom = g2
    direction = mom / (xp.sqrt(v) + eps)
    p -= (lr * direction).reshape(p.shape).astype(p.dtype, copy=False)


class SMMF(Optimizer):
    """SMMF (see the module docstring). ``beta1=None`` drops the first moment (RMSprop-like);
    ``vector_reshape=False`` keeps 1-D parameters' moments dense; ``weight_decay_mode``
    ``"adamw"`` (decoupled) or ``"adam"`` (L2). Defaults are the paper's.

    Example: ``SMMF(model.parameters(), lr=1e-3)``; its state for a (1024, 1024) weight is
    8 KiB of factors and 128 KiB of signs, against Adam's 8 MiB.
    """

    def __init__(self, params, lr=1e-3, beta1=0.9, eps=1e-8, weight_decay=0.0,
                 decay_rate=-0.5, growth_rate=0.999, vector_reshape=True,
                 weight_decay_mode="adamw"):
        check_nonneg("SMMF", lr=lr, eps=eps, weight_decay=weight_decay)
        if beta1 is not None:
            check_hparam("SMMF", "beta1", beta1, 0.0 <= beta1 <= 1.0, "0 <= beta1 <= 1 or None")
        check_hparam("SMMF", "decay_rate", decay_rate, -1.0 <= decay_rate <= 0.0,
                     "-1 <= decay_rate <= 0")
        check_hparam("SMMF", "growth_rate", growth_rate, 0.0 <= growth_rate <= 1.0,
                     "0 <= growth_rate <= 1")
        check_hparam("SMMF", "weight_decay_mode", weight_decay_mode,
                     weight_decay_mode in ("adam", "adamw"), "'adam' or 'adamw'")
        super().__init__(params, dict(lr=lr, beta1=beta1, eps=eps, weight_decay=weight_decay,
                                      decay_rate=decay_rate, growth_rate=growth_rate,
                                      vector_reshape=vector_reshape,
                                      weight_decay_mode=weight_decay_mode))

    def _update(self, group, params):
        beta1 = group["beta1"]
        for p in params:
            st = self.state[p]
            if not st:
                st.update(self._init_state(p, group))
            arrays = [st[k]._data if k in st else None for k in
                      ("r_v", "c_v", "r_m", "c_m", "sign")]
            smmf_update(p._data, p.grad._data, *arrays, st["step"], lr=group["lr"],
                        beta1=beta1, eps=group["eps"], weight_decay=group["weight_decay"],
                        decay_rate=group["decay_rate"], growth_rate=group["growth_rate"],
                        decoupled=group["weight_decay_mode"] == "adamw")
            st["step"] += 1
            p._version[0] += 1

    @staticmethod
    def _init_state(p, group):
        """Zero factors (and signs) for ``p``; a 1-D parameter without ``vector_reshape`` is
        its own (n, 1) "matrix", whose factorization is exact (c = [1])."""
        xp = p.xp
        dense = sum(s > 1 for s in p.shape) == 1 and not group["vector_reshape"]
        n, m = (p.numel(), 1) if dense else square_shape(p.numel())
        st = {"step": 1}
        names = ("r_v", "c_v") + (("r_m", "c_m") if group["beta1"] is not None else ())
        for name in names:
            st[name] = _make(xp.zeros(n if name[0] == "r" else m, p._data.dtype))
        if group["beta1"] is not None:
            st["sign"] = _make(xp.zeros((n * m + 7) // 8, xp.uint8))
        return st
