"""16-bit-only training: weight updates that survive bf16 storage (Zamirai et al. 2020, spec 3).

With weights, gradients and optimizer state all in bf16 and every operation rounded to nearest,
an update smaller than half an ulp of its weight is cancelled, and training stalls. Two fixes,
applied to the weight update only (everything else stays round-to-nearest):

* ``"sr"``: ``w <- SR_bf16(w + u)``; ``w + u`` is formed in float32 and rounded stochastically
  with Philox bits drawn from ``(seed, offset)`` (R5; the offset advances with every draw);
* ``"kahan"``: a bf16 compensation buffer ``c`` (initially 0), every operation bf16 RN:
  ``y = u - c; s = w + y; c = (s - w) - y; w = s``. The true weight is about ``w - c``.

``"rn"`` is the plain (stalling) update. :func:`sgd_update_` is the spec's single-update API;
:func:`sgd16_update` and :func:`adamw16_update` are the pure SGD / AdamW steps on raw arrays
(16-bit state, each stored value rounded once to the weight format), and :class:`SGD16` /
:class:`AdamW16` the thin optimizer shells around them.

Example::

    opt = AdamW16(params, lr=1e-3, update_rounding="kahan")    # params are bfloat16 leaves
    loss.backward(); opt.step(); opt.zero_grad()
"""

from __future__ import annotations

import numpy as np

from ..optim.optimizer import Optimizer
from ..tensor import Tensor, _make
from ._xp import raw, xp_of
from .casting import encode
from .sr import random_bits

__all__ = ["sgd_update_", "apply_update", "sgd16_update", "adamw16_update", "SGD16",
           "AdamW16", "UPDATE_MODES"]

UPDATE_MODES = ("rn", "sr", "kahan")


def _fmt_of(a):
    import ml_dtypes

    if a.dtype == ml_dtypes.bfloat16:
        return "bf16"
    if a.dtype == np.float16:
        return "fp16"
    raise TypeError(f"16-bit update: weights must be bfloat16 or float16, got {a.dtype}")


def _rn(x32, fmt, like):
    """float32 values rounded to nearest in ``fmt``, stored in ``like``'s dtype."""
    return encode(x32, fmt).view(like.dtype)


def _f32(a):
    return a.astype(np.float32)


def apply_update(w, u, mode, comp=None, rbits=None):
    """New weights (and compensation buffer) for ``w + u`` under ``mode`` on raw arrays."""
    fmt = _fmt_of(w)
    if mode == "rn":
        return _rn(_f32(w) + _f32(u), fmt, w), comp
    if mode == "sr":
        return encode(_f32(w) + _f32(u), fmt, rounding="sr", rbits=rbits).view(w.dtype), comp
    if mode != "kahan":
        raise ValueError(f"16-bit update: mode must be one of {UPDATE_MODES}, got {mode!r}")
    if comp is None:
        comp = xp_of(w).zeros_like(w)
    y = _rn(_f32(u) - _f32(comp), fmt, w)
    s = _rn(_f32(w) + _f32(y), fmt, w)
    comp = _rn(_f32(_rn(_f32(s) - _f32(w), fmt, w)) - _f32(y), fmt, w)
    return s, comp


def _draw(state, shape, device):
    seed = int(state.setdefault("seed", 0))
    off = int(state.setdefault("offset", 0))
    n = int(np.prod(shape, dtype=np.int64))
    state["offset"] = off + n
    return random_bits(seed, off, shape, device)


def sgd_update_(w, u, mode="sr", state=None):
    """``w <- w + u`` in place for 16-bit ``w`` (Tensor or array) with the update rounding
    ``mode`` (``"rn"``, ``"sr"`` or ``"kahan"``). ``state`` (a dict) keeps the Kahan buffer
    ``"c"`` and the SR stream position ``"seed"``/``"offset"``. Returns ``w``."""
    state = {} if state is None else state
    a = raw(w)
    rb = None
    if mode == "sr":
        rb = _draw(state, a.shape, w.device if isinstance(w, Tensor) else None)
    new, comp = apply_update(a, raw(u), mode, state.get("c"), rb)
    if comp is not None:
        state["c"] = comp
    a[...] = new
    if isinstance(w, Tensor):
        w._version[0] += 1
    return w


def sgd16_update(p, g, buf, comp, *, lr, momentum, weight_decay, mode, rbits=None):
    """One SGD step with 16-bit state; returns ``(p, buf, comp)`` (new arrays)."""
    fmt = _fmt_of(p)
    d = _f32(g)
    if weight_decay:
        d = _f32(_rn(d + weight_decay * _f32(p), fmt, p))
    if momentum:
        buf = _rn(d if buf is None else momentum * _f32(buf) + d, fmt, p)
        d = _f32(buf)
    u = _rn(-lr * d, fmt, p)
    p, comp = apply_update(p, u, mode, comp, rbits)
    return p, buf, comp


def adamw16_update(p, g, m, v, comp, step, *, lr, beta1, beta2, eps, weight_decay, mode,
                   rbits=None):
    """One AdamW step (decoupled weight decay) with 16-bit moments; returns
    ``(p, m, v, comp)``. ``step`` counts from 1."""
    fmt = _fmt_of(p)
    g32 = _f32(g)
    m = _rn(beta1 * _f32(m) + (1 - beta1) * g32, fmt, p)
    v = _rn(beta2 * _f32(v) + (1 - beta2) * g32 * g32, fmt, p)
    xp = xp_of(p)
    mhat = _f32(m) / (1 - beta1 ** step)
    vhat = _f32(v) / (1 - beta2 ** step)
    u = -lr * (mhat / (xp.sqrt(vhat) + eps) + weight_decay * _f32(p))
    p, comp = apply_update(p, _rn(u.astype(np.float32), fmt, p), mode, comp, rbits)
    return p, m, v, comp


class _Opt16(Optimizer):
    def __init__(self, params, defaults, update_rounding, seed):
        if update_rounding not in UPDATE_MODES:
            raise ValueError(f"{type(self).__name__}: update_rounding must be one of "
                             f"{UPDATE_MODES}, got {update_rounding!r}")
        super().__init__(params, dict(defaults, update_rounding=update_rounding))
        self.seed, self._offset = int(seed), 0
        for g in self.param_groups:
            for p in g["params"]:
                _fmt_of(p._data)

    def _rbits(self, p, mode):
        if mode != "sr":
            return None
        st = {"seed": self.seed, "offset": self._offset}
        rb = _draw(st, tuple(p.shape), p.device)
        self._offset = st["offset"]
        return rb

    @staticmethod
    def _write(p, new):
        p._data[...] = new
        p._version[0] += 1


class SGD16(_Opt16):
    """SGD (momentum, weight decay) on bf16/fp16 weights with 16-bit state and an ``"sr"``,
    ``"kahan"`` or ``"rn"`` weight update; SR bits come from Philox ``seed``."""

    def __init__(self, params, lr=1e-3, momentum=0.0, weight_decay=0.0, update_rounding="sr",
                 seed=0):
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError("SGD16: lr, momentum and weight_decay must be non-negative")
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay),
                         update_rounding, seed)

    def _update(self, group, params):
        mode = group["update_rounding"]
        for p in params:
            st = self.state[p]
            buf, comp = st.get("momentum_buffer"), st.get("kahan_c")
            new, buf, comp = sgd16_update(
                p._data, p.grad._data, None if buf is None else buf._data,
                None if comp is None else comp._data, lr=group["lr"],
                momentum=group["momentum"], weight_decay=group["weight_decay"], mode=mode,
                rbits=self._rbits(p, mode))
            if buf is not None:
                st["momentum_buffer"] = _make(buf)
            if comp is not None:
                st["kahan_c"] = _make(comp)
            self._write(p, new)


class AdamW16(_Opt16):
    """AdamW on bf16/fp16 weights with 16-bit moments and an ``"sr"``, ``"kahan"`` or
    ``"rn"`` weight update."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 update_rounding="sr", seed=0):
        if lr < 0 or eps < 0 or weight_decay < 0 or not all(0 <= b < 1 for b in betas):
            raise ValueError("AdamW16: invalid lr, betas, eps or weight_decay")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay), update_rounding, seed)

    def _update(self, group, params):
        mode = group["update_rounding"]
        b1, b2 = group["betas"]
        for p in params:
            st = self.state[p]
            if "step" not in st:
                xp = xp_of(p._data)
                st["step"] = 0
                st["exp_avg"] = _make(xp.zeros_like(p._data))
                st["exp_avg_sq"] = _make(xp.zeros_like(p._data))
            st["step"] += 1
            comp = st.get("kahan_c")
            new, m, v, comp = adamw16_update(
                p._data, p.grad._data, st["exp_avg"]._data, st["exp_avg_sq"]._data,
                None if comp is None else comp._data, st["step"], lr=group["lr"], beta1=b1,
                beta2=b2, eps=group["eps"], weight_decay=group["weight_decay"], mode=mode,
                rbits=self._rbits(p, mode))
            st["exp_avg"], st["exp_avg_sq"] = _make(m), _make(v)
            if comp is not None:
                st["kahan_c"] = _make(comp)
            self._write(p, new)


