"""The recurrent layers' gate math of one time step as single numba passes (the ``jit``
extra): LSTM and GRU, forward and backward, float32 and float64. ``_cpu_jit.py`` compiles the
``_loop_*`` functions below; nn/layers/_recurrence.py declares them on ``Recurrence`` and keeps
its NumPy passes as the fallback and the reference.

Why: after the one GEMM per step, an LSTM step's gate math was ~30 NumPy passes over (N, 4H)
arrays, each a Python call and a trip through memory; here it is one pass per step that keeps
every gate in registers, as torch's CPU kernel does.

The activations per dtype: float64 calls the C library's ``tanh`` as NumPy does, with the
sigmoid as the NumPy path's ``0.5 tanh(x / 2) + 0.5``; float32 uses :func:`tanh32` and
:func:`sigmoid32` below, written on ``_math32``'s ``exp32`` so that the loop vectorises (a C
library call per element does not: numba's float32 ``tanh`` was 7x NumPy's). Stated bounds
(tests/nn/test_rnn_gates.py, on every 4099th float32 and a dense [-20, 20]): tanh32 within 2
ulp of tanh (measured 1.21), sigmoid32 within 3 ulp of the logistic function (2.51), so one
step's gates and states agree with the NumPy path's to 6 ulp of max(1, |value|) (measured
4.9, for c = f c_prev + i g), float32 and float64 alike. The backward
passes contain no transcendental function and repeat the NumPy path's operations in its order:
given the same forward buffers they give the same bits.
"""

from __future__ import annotations

import numpy as np

from ._math32 import _poly, _sel, exp32

__all__ = ["tanh32", "sigmoid32", "LOOPS", "SCALARS"]

_F = np.float32
_ZERO, _ONE, _TWO = _F(0), _F(1), _F(2)
_TANH_SMALL = _F(0.625)
# Cephes tanhf: tanh(x) = x + x z P(z), z = x^2, on |x| < 0.625
_TANH_P = tuple(_F(c) for c in (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2,
                                1.33314422036e-1, -3.33332819422e-1))


def tanh32(x):
    """tanh in float32 (Cephes' tanhf): ``x + x z P(z)`` below 0.625, else
    ``1 - 2 / (e^(2|x|) + 1)`` with x's sign (1 where e^(2|x|) overflows). Within 2 ulp."""
    ax = _sel(x < _ZERO, -x, x)
    big = _ONE - _TWO / (exp32(ax + ax) + _ONE)
    z = x * x
    small = _poly(z, _TANH_P) * z * x + x
    y = _sel(ax < _TANH_SMALL, small, _sel(x < _ZERO, -big, big))
    return _sel(x == _ZERO, x, y)  # keeps the sign of zero


def sigmoid32(x):
    """The logistic function in float32 from ``e = e^-|x|``: ``1 / (1 + e)``, times ``e``
    for x < 0 (so that the left tail stays relative, subnormals included). Within 3 ulp."""
    e = exp32(_sel(x < _ZERO, x, -x))
    r = _ONE / (_ONE + e)
    return _sel(x < _ZERO, e * r, r)


# what _cpu_jit.py recompiles as scalar functions beside _math32's bodies
SCALARS = ("tanh32", "sigmoid32")


# -- the step loops (numba only) -----------------------------------------------------------
# ``_sig``, ``_tanh`` and ``_ONE`` are bound per dtype by _cpu_jit.py (one build each), so one
# source serves float32 and float64. Arrays are 2-d C-contiguous (rows = batch);
# the gates of a row are [i | f | g | o] (LSTM) or [r | z | n] (GRU), each H wide.
# Why the many short loops: LLVM vectorises a loop only over indices it knows are >= 0 (numba
# wraps negative ones, so each loop runs over range(n) on a row's views) and with few arrays
# to check for overlap (its runtime alias checks stop at ~8 pairs): each loop stores one or
# two arrays. A row's data stays in the L1 cache between them.

def _loop_lstm_forward(acts, gemm, x, c_prev, c, tc, h):
    """acts = activated gates of ``gemm + x``; c = f c_prev + i g; tc = tanh(c); h = o tc."""
    hid = c.shape[1]
    for r in range(c.shape[0]):
        a, gm, xr = acts[r], gemm[r], x[r]
        ai, af, ag, ao = a[:hid], a[hid:2 * hid], a[2 * hid:3 * hid], a[3 * hid:]
        cp, cr, tr, hr = c_prev[r], c[r], tc[r], h[r]
        sg, sx = gm[:2 * hid], xr[:2 * hid]
        for j in range(2 * hid):
            a[j] = _sig(sg[j] + sx[j])  # noqa: F821 - bound by _cpu_jit (i and f)
        sg, sx = gm[2 * hid:3 * hid], xr[2 * hid:3 * hid]
        for j in range(hid):
            ag[j] = _tanh(sg[j] + sx[j])  # noqa: F821
        sg, sx = gm[3 * hid:], xr[3 * hid:]
        for j in range(hid):
            ao[j] = _sig(sg[j] + sx[j])  # noqa: F821
        for j in range(hid):
            cr[j] = af[j] * cp[j] + ai[j] * ag[j]
        for j in range(hid):
            t = _tanh(cr[j])  # noqa: F821
            tr[j] = t
            hr[j] = ao[j] * t


def _loop_lstm_backward(da, dc_out, acts, tc, c_prev, dh, dc):
    """The gate gradients ``da`` and c's ``dc_out`` (not ``dc``'s memory) from h's ``dh``
    and c's ``dc`` (the formulas of ``_recurrence._lstm_grads``, in its order)."""
    hid = dh.shape[1]
    one = _ONE  # noqa: F821
    for r in range(dh.shape[0]):
        a, d, t, dcr, dn, cp = acts[r], dh[r], tc[r], dc[r], dc_out[r], c_prev[r]
        ai, af, ag, ao = a[:hid], a[hid:2 * hid], a[2 * hid:3 * hid], a[3 * hid:]
        di, df, dg, do = da[r, :hid], da[r, hid:2 * hid], da[r, 2 * hid:3 * hid], \
            da[r, 3 * hid:]
        for j in range(hid):  # dn holds dc2, the gradient of this step's c
            dn[j] = d[j] * ao[j] * (one - t[j] * t[j]) + dcr[j]
        for j in range(hid):
            di[j] = dn[j] * ag[j] * ai[j] * (one - ai[j])
        for j in range(hid):
            df[j] = dn[j] * cp[j] * af[j] * (one - af[j])
        for j in range(hid):
            dg[j] = dn[j] * ai[j] * (one - ag[j] * ag[j])
        for j in range(hid):
            do[j] = d[j] * t[j] * ao[j] * (one - ao[j])
        for j in range(hid):
            dn[j] = dn[j] * af[j]


def _loop_gru_forward(acts, gh, x, h_prev, h):
    """r, z = sigmoid(x + gh) parts; n = tanh(r gh_n + x_n); h = (h_prev - n) z + n."""
    hid = h.shape[1]
    for q in range(h.shape[0]):
        a, g, xr, hp, hq = acts[q], gh[q], x[q], h_prev[q], h[q]
        ar, az, an = a[:hid], a[hid:2 * hid], a[2 * hid:]
        sg, sx = g[:2 * hid], xr[:2 * hid]
        for j in range(2 * hid):
            a[j] = _sig(sx[j] + sg[j])  # noqa: F821
        sg, sx = g[2 * hid:], xr[2 * hid:]
        for j in range(hid):
            an[j] = _tanh(ar[j] * sg[j] + sx[j])  # noqa: F821
        for j in range(hid):
            hq[j] = (hp[j] - an[j]) * az[j] + an[j]


def _loop_gru_backward(dgi, dgh, dz, acts, gh, h_prev, dh):
    """The gradients of the input and hidden parts of the gates, and ``dz = dh z`` (h_prev's
    direct part), from h's ``dh`` (``_recurrence._gru_grads``, in its order)."""
    hid = dh.shape[1]
    one = _ONE  # noqa: F821
    for q in range(dh.shape[0]):
        a, g, hp, nh, dzq = acts[q], dh[q], h_prev[q], gh[q, 2 * hid:], dz[q]
        ar, az, an = a[:hid], a[hid:2 * hid], a[2 * hid:]
        ir, iz, i_n = dgi[q, :hid], dgi[q, hid:2 * hid], dgi[q, 2 * hid:]
        hr, hz, h_n = dgh[q, :hid], dgh[q, hid:2 * hid], dgh[q, 2 * hid:]
        for j in range(hid):
            i_n[j] = g[j] * (one - az[j]) * (one - an[j] * an[j])
        for j in range(hid):
            v = i_n[j] * nh[j] * ar[j] * (one - ar[j])
            ir[j] = v
            hr[j] = v
        for j in range(hid):
            v = g[j] * (hp[j] - an[j]) * az[j] * (one - az[j])
            iz[j] = v
            hz[j] = v
        for j in range(hid):
            h_n[j] = i_n[j] * ar[j]
        for j in range(hid):
            dzq[j] = g[j] * az[j]


LOOPS = ("lstm_forward", "lstm_backward", "gru_forward", "gru_backward")
