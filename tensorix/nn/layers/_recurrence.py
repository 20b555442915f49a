"""The fused kernels of the recurrent layers (nn/layers/rnn.py holds the modules).

- :class:`Recurrence`: one direction of one RNN/LSTM/GRU layer over the whole sequence as one
  graph node. Its forward runs the time loop on raw arrays: per step one GEMM of the hidden
  state with all gates' weights, then the gate math in one numba pass (or a few in-place
  NumPy passes) into preallocated buffers. Its backward runs the loop backwards the same way,
  keeps every step's gate gradients, and forms the weight gradients as GEMMs over all steps
  instead of T small GEMMs and T accumulations into ``.grad``, as cuDNN and PyTorch's CPU
  kernels do. The input part of every step (``x W_ih^T + b``) comes either as ``gi``,
  computed before (``recurrence``), or from ``x`` and ``W_ih`` (``layer``, the modules' path
  on the CPU): the node then computes it in chunks on a second thread while the loop runs,
  and in the backward the W_hh, W_ih and x gradients likewise behind the loop
  (``_overlap.py``).
- :class:`LSTMGates`, :class:`GRUGates`: one step's gate math as one node (the cells, LSTM
  projections, and the sequence path when a graph of the backward is recorded);
  :class:`_Steps`: a sequence's steps as one node.

The fused backwards are first order on raw arrays; when the backward itself is recorded
(``create_graph=True``) they compute the same formulas with tensorix ops instead (the gates:
:func:`_lstm_grads`, :func:`_gru_grads`, written once for both) or, for :class:`Recurrence`,
differentiate the step-by-step composite, so double backward works everywhere.
"""

from __future__ import annotations

import numpy as np

from ... import _threads, backend, kernels
from ...autograd.dispatch import kernel
from ...autograd.engine import grad as _autograd_grad
from ...autograd.function import Function
from ...autograd.grad_mode import enable_grad, is_grad_enabled
from ...backend import quiet
from ...ops.creation import zeros
from ...ops.shape import cat, stack
from ...tensor import _make
from .. import functional as F
from . import _overlap

__all__ = ["Recurrence", "LSTMGates", "GRUGates", "recurrence", "layer"]


def _sigmoid(xp, x):
    """The logistic function of ``x`` computed in place, as ``0.5 tanh(x / 2) + 0.5``: one
    transcendental pass and no overflow (absolute error that of tanh, as the gates need).
    Returns ``x``."""
    x *= 0.5
    xp.tanh(x, out=x)
    x *= 0.5
    x += 0.5
    return x


def _raw(*tensors):
    return [None if t is None else t._data for t in tensors]  # None: no gradient arrived


def _fusable(*tensors):
    """Real floating tensors of one dtype: the fused gate kernels' domain (16-bit floats and
    anything else take the composite)."""
    d = tensors[0]._dtype
    return d.name in ("float32", "float64") and all(t._dtype is d for t in tensors)


class LSTMGates(Function):
    """One LSTM step's gate math, fused: ``(gi, gh, c) -> (h, c')`` with ``a = gi + gh`` split
    into gates i, f, g, o (each (N, H)), ``c' = sigmoid(f) c + sigmoid(i) tanh(g)`` and
    ``h = sigmoid(o) tanh(c')``. The backward's formulas run on the forward's raw gate arrays
    when no graph is recorded (plain backward), else on gates recomputed from the inputs with
    tensorix ops (so double backward sees them depend on the inputs): one formula, both types."""

    @staticmethod
    def forward(ctx, gi, gh, c):
        xp = gi.xp
        with quiet():
            a = gi._data + gh._data
            hid = a.shape[-1] // 4
            g = xp.tanh(a[..., 2 * hid:3 * hid])
            s = _sigmoid(xp, a)  # in place: a is not needed any more
            i, f, o = s[..., :hid], s[..., hid:2 * hid], s[..., 3 * hid:]
            c2 = f * c._data + i * g
            tc = xp.tanh(c2)
            h = o * tc
        ctx.save_for_backward(gi, gh, c)
        ctx.gates = (i, f, g, o, tc)
        return h, c2

    @staticmethod
    def backward(ctx, gh_out, gc_out):
        gi, gh, c = ctx.saved_tensors
        if not is_grad_enabled():  # first order: the formulas on the raw gates, one concatenate
            xp = c.xp
            with quiet():
                da, dc = _lstm_grads(*ctx.gates, c._data, *_raw(gh_out, gc_out),
                                     xp.concatenate)
            return _make(da), _make(da), _make(dc)
        i, f, g, o = (gi + gh).chunk(4, -1)
        i, f, g, o = F.sigmoid(i), F.sigmoid(f), F.tanh(g), F.sigmoid(o)
        tc = F.tanh(f * c + i * g)
        da, dc = _lstm_grads(i, f, g, o, tc, c, gh_out, gc_out, lambda ts, axis: cat(ts, axis))
        return da, da, dc


def _lstm_grads(i, f, g, o, tc, c, gh, gc, concat):
    """Gradients of LSTMGates w.r.t. the gate pre-activations and c (arrays or Tensors)."""
    zero = 0 * tc
    gh = zero if gh is None else gh
    dc2 = gh * o * (1 - tc * tc) + (zero if gc is None else gc)
    da = concat([dc2 * g * i * (1 - i), dc2 * c * f * (1 - f), dc2 * i * (1 - g * g),
                 gh * tc * o * (1 - o)], -1)
    return da, dc2 * f


class GRUGates(Function):
    """One GRU step's gate math, fused: ``(gi, gh, h) -> h'`` with gi, gh split into (r, z, n)
    parts, ``r = sigmoid(ri + rh)``, ``z = sigmoid(zi + zh)``, ``n = tanh(ni + r nh)`` and
    ``h' = n + z (h - n)``. Backward as in :class:`LSTMGates`."""

    @staticmethod
    def forward(ctx, gi, gh, h):
        xp = gi.xp
        x, y = gi._data, gh._data
        hid = x.shape[-1] // 3
        with quiet():
            rz = _sigmoid(xp, x[..., :2 * hid] + y[..., :2 * hid])
            r, z = rz[..., :hid], rz[..., hid:]
            nh = y[..., 2 * hid:]
            n = xp.tanh(x[..., 2 * hid:] + r * nh)
            out = n + z * (h._data - n)
        ctx.save_for_backward(gi, gh, h)
        ctx.gates = (r, z, n, nh)
        return out

    @staticmethod
    def backward(ctx, g):
        gi, gh, h = ctx.saved_tensors
        if not is_grad_enabled():
            xp = h.xp
            with quiet():
                dgi, dgh, dh = _gru_grads(*ctx.gates, h._data, g._data, xp.concatenate)
            return _make(dgi), _make(dgh), _make(dh)
        ri, zi, ni = gi.chunk(3, -1)
        rh, zh, nh = gh.chunk(3, -1)
        r, z = F.sigmoid(ri + rh), F.sigmoid(zi + zh)
        return _gru_grads(r, z, F.tanh(ni + r * nh), nh, h, g, lambda ts, axis: cat(ts, axis))


def _gru_grads(r, z, n, nh, h, g, concat):
    """Gradients of GRUGates w.r.t. gi, gh and h (arrays or Tensors)."""
    dan = g * (1 - z) * (1 - n * n)  # through n = tanh(ni + r nh)
    dar = dan * nh * r * (1 - r)
    daz = g * (h - n) * z * (1 - z)
    return concat([dar, daz, dan], -1), concat([dar, daz, dan * r], -1), g * z


class _Steps(Function):
    """``x.unbind(0)`` for the per-step input projections, as one node: its backward stacks
    the steps' gradients once. (Per-step ``select`` nodes each scatter into a zero tensor of
    the whole sequence, which the engine then sums: O(T^2) memory traffic, 2/3 of an LSTM
    step's time at T = 64.)"""

    @staticmethod
    def forward(ctx, x):
        ctx.shape, ctx.dtype, ctx.device = x.shape[1:], x.dtype, x.device
        return tuple(x._data)

    @staticmethod
    def backward(ctx, *grads):
        fill = None
        for g in grads:
            if g is None and fill is None:
                fill = zeros(*ctx.shape, dtype=ctx.dtype, device=ctx.device)
        return stack([fill if g is None else g for g in grads])


def _cell(mode, gi, gh, h, c, w_hr=None):
    """One step: input part ``gi`` and hidden part ``gh`` of the gates -> (h, c)."""
    if mode == "LSTM":
        if _fusable(gi, gh, c):
            h, c = LSTMGates.apply(gi, gh, c)
        else:
            i, f, g, o = (gi + gh).chunk(4, -1)
            c = F.sigmoid(f) * c + F.sigmoid(i) * F.tanh(g)
            h = F.sigmoid(o) * F.tanh(c)
        return (h if w_hr is None else F.linear(h, w_hr)), c
    if mode == "GRU":
        if _fusable(gi, gh, h):
            return GRUGates.apply(gi, gh, h), None
        ri, zi, ni = gi.chunk(3, -1)
        rh, zh, nh = gh.chunk(3, -1)
        r, z = F.sigmoid(ri + rh), F.sigmoid(zi + zh)
        n = F.tanh(ni + r * nh)
        return n + z * (h - n), None
    act = F.tanh if mode == "RNN_TANH" else F.relu
    return act(gi + gh), None


def _unfused(mode, gi, h, c, w_hh, b_hh, w_hr=None, reverse=False):
    """One direction of a layer step by step, from the input part ``gi`` (T, N, G) of every
    step's gates: (output (T, N, H), h_n, c_n or None). The composite behind
    :class:`Recurrence`, and the path of LSTM projections and 16-bit dtypes."""
    steps = _Steps.apply(gi)  # all steps' input projections, one node
    order = range(len(steps) - 1, -1, -1) if reverse else range(len(steps))
    outs = [None] * len(steps)
    for t in order:
        h, c = _cell(mode, steps[t], F.linear(h, w_hh, b_hh), h, c, w_hr)
        outs[t] = h
    return stack(outs), h, c


def _gate_kernel(name, *widths):
    """The numba gate loop ``name`` of kernels/_gates.py, for float32 and float64, compiled on
    first use by a call on 1-row arrays of ``widths`` columns (G: the gates, 1: a state)."""
    return kernels.jit(name, ("float32", "float64"),
                       lambda: tuple(np.zeros((1, w), np.float32) for w in widths))


def _by_rows(fn, *arrays):
    """``fn(*arrays)`` for a gate loop over 2-d arrays whose rows are independent (the
    batch): split by rows over the pool when each part has ``COSTLY`` elements of gates."""
    n, width = arrays[0].shape
    min_rows = max(1, _threads.COSTLY // max(1, width))
    if _threads.parts_for(n, min_rows) <= 1:
        fn(*arrays)
        return
    _threads.parallel(n, lambda lo, hi: fn(*[a[lo:hi] for a in arrays]), min_rows)


class Recurrence(Function):
    """One direction of a recurrent layer over a whole sequence, fused (module docstring):
    ``(gi, h0, c0, w_hh, b_hh, mode, reverse) -> (out, h_n[, c_n])``.

    Shapes: ``gi`` (T, N, G) the input part of the gates of every step (``x W_ih^T + b_ih``,
    G = gates * H), ``h0`` and ``c0`` (N, H), ``w_hh`` (G, H), ``b_hh`` (G,) or None; ``out``
    (T, N, H) the hidden state after each step, in input order also when ``reverse``; ``c0``
    and ``c_n`` only for ``mode`` "LSTM" (else ``c0`` is None and two outputs come back).
    Modes and gate order as PyTorch's: "RNN_TANH", "RNN_RELU", "LSTM" (i, f, g, o), "GRU"
    (r, z, n). Float32 and float64 only (the caller checks, :func:`recurrence`).

    With ``x`` (T, N, I), ``w_ih`` (G, I) and ``b_ih`` (G,) or None given instead of ``gi``
    (None), NumPy arrays only (:func:`layer`), the node computes the input part itself, in
    chunks of steps on a second thread while the loop runs, and its backward the gradients
    of ``x``, ``w_ih`` and ``b_ih`` too (nn/layers/_overlap.py).

    On the CPU with the ``jit`` extra each step's LSTM/GRU gate math is one numba pass
    (kernels/_gates.py: within 6 ulp of the NumPy passes per step, which stay the fallback;
    the backward passes give the same bits), split over the pool by batch rows when large.
    """

    # the gate loops, by role; arguments as in kernels/_gates.py (G = gates columns, 1 = H)
    _kernels = {"lstm_forward": (_gate_kernel("lstm_forward", 4, 4, 4, 1, 1, 1, 1),),
                "lstm_backward": (_gate_kernel("lstm_backward", 4, 1, 4, 1, 1, 1, 1),),
                "gru_forward": (_gate_kernel("gru_forward", 3, 3, 3, 1, 1),),
                "gru_backward": (_gate_kernel("gru_backward", 3, 3, 1, 3, 3, 1, 1),)}

    @staticmethod
    def forward(ctx, gi, h0, c0, w_hh, b_hh, mode, reverse, x=None, w_ih=None, b_ih=None):
        ctx.save_for_backward(gi, h0, c0, w_hh, b_hh, x, w_ih, b_ih)
        ctx.mode, ctx.reverse = mode, reverse
        ctx.set_materialize_grads(False)
        xp = h0.xp
        t_len = len(gi) if x is None else len(x)
        if x is None:
            x = gi._data
            # the per-step bias joins the input part once, not once per step (GRU keeps b_hn
            # apart: r multiplies it)
            if b_hh is not None and mode != "GRU":
                x = x + b_hh._data
            x = xp.ascontiguousarray(x)  # the gate loops take C-contiguous steps
            return _forward_loop(ctx, x, h0, c0, w_hh, b_hh, mode, reverse)
        # the input part in chunks, computed beside the loop (nn/layers/_overlap.py)
        n = h0.shape[0]
        chunks = _overlap.spans(t_len, n)
        # (T N, I); kept for the backward's GEMMs (x is saved too, so an in-place change of
        # x is still caught there)
        inp = ctx.inp = xp.ascontiguousarray(x._data).reshape(t_len * n, -1)
        steps = xp.empty((t_len,) + h0.shape[:1] + w_ih.shape[:1], dtype=inp.dtype)
        bias = _input_bias(b_ih, b_hh, mode)
        pipe = _overlap.Pipe(len(chunks))
        wt_ih = w_ih._data.T

        def project():
            for i, (lo, hi) in enumerate(chunks):
                tlo, thi = _t_span(lo, hi, t_len, reverse)
                out = steps[tlo:thi].reshape(-1, steps.shape[-1])
                xp.matmul(inp[tlo * n:thi * n], wt_ih, out=out)
                if bias is not None:
                    out += bias
                pipe.done(i)

        first = {lo: i for i, (lo, _) in enumerate(chunks)}  # step -> chunk it opens
        res = []
        _pin_blas()
        _overlap.run_pair(lambda: pipe.produce(project), lambda: res.append(_forward_loop(
            ctx, steps, h0, c0, w_hh, b_hh, mode, reverse,
            lambda k: k not in first or pipe.wait(first[k]))), inp.size * steps.shape[-1])
        return res[0] if res else None

    @staticmethod
    def backward(ctx, g_out, g_h, g_c=None):
        gi, h0, c0, w_hh, b_hh, x, w_ih, b_ih = saved = ctx.saved_tensors
        if is_grad_enabled():  # a recorded backward: differentiate the composite
            return _recorded_backward(ctx, saved, (g_out, g_h, g_c))
        hs = ctx.buffers[0]
        xp = backend.array_module(hs)
        t_len, need = hs.shape[0] - 1, ctx.needs_input_grad
        g = w_hh.shape[0]
        dgh = dgi = xp.empty((t_len,) + hs.shape[1:-1] + (g,), dtype=hs.dtype)
        if ctx.mode == "GRU":
            dgi = xp.empty_like(dgh)
        if x is None:
            dh, dc = _backward_loop(ctx, g_out, g_h, g_c, dgh, dgi)
            flat = dgh.reshape(-1, g)
            # the weight's gradient over all steps at once: one large GEMM, split over the pool
            dw = _threads.matmul(flat.T, hs[:-1].reshape(-1, hs.shape[-1])) if need[3] \
                else None
            db = flat.sum(0) if b_hh is not None and need[4] else None
            if ctx.reverse:
                dgi = xp.ascontiguousarray(dgi[::-1])
            return (_make(dgi), _make(dh), _maybe(dc), _maybe(dw), _maybe(db), None, None,
                    None, None, None)
        return _pipelined_backward(ctx, (g_out, g_h, g_c), dgh, dgi, x, w_ih, b_ih, b_hh)


def _maybe(a):
    return None if a is None else _make(a)


def _backward_loop(ctx, g_out, g_h, g_c, dgh, dgi, tick=None):
    """Recurrence's time loop backwards: fills the gate gradients ``dgh`` (and GRU's input
    part's ``dgi``) per processed step, and returns (h0's gradient, c0's or None);
    ``tick(k)`` (if given) after the k-th step."""
    mode, hs, w_hh = ctx.mode, ctx.buffers[0], ctx.saved_tensors[3]
    xp = backend.array_module(hs)
    t_len, hid = hs.shape[0] - 1, hs.shape[-1]
    order = range(t_len - 1, -1, -1) if ctx.reverse else range(t_len)
    w, go = w_hh._data, None if g_out is None else g_out._data
    dh = xp.zeros_like(hs[0]) if g_h is None else g_h._data.copy()
    dc = None if g_c is None else g_c._data
    fused = None if mode.startswith("RNN") else kernel(
        Recurrence, mode.lower() + "_backward", w_hh.device, w_hh._dtype)
    if fused is not None:
        scratch = (xp.empty_like(dh), xp.empty_like(dh))  # c's gradient (LSTM) or dz (GRU)
        if mode == "LSTM":
            dc = xp.zeros_like(dh) if dc is None else xp.ascontiguousarray(dc)
    with quiet():
        for k in range(t_len - 1, -1, -1):
            if go is not None:
                dh += go[order[k]]
            if fused is not None and mode == "LSTM":
                _, a, cs, tcs = ctx.buffers
                dc_new = scratch[k % 2]  # never the dc it reads
                _by_rows(fused, dgh[k], dc_new, a[k], tcs[k], cs[k], dh, dc)
                dc = dc_new
                dh = _threads.matmul(dgh[k], w)
            elif fused is not None:
                _, a, ghs = ctx.buffers
                _by_rows(fused, dgi[k], dgh[k], scratch[0], a[k], ghs[k], hs[k], dh)
                dh = _threads.matmul(dgh[k], w)
                dh += scratch[0]
            elif mode == "LSTM":
                _, a, cs, tcs = ctx.buffers
                a = a[k]
                _, dc = _lstm_grads(a[:, :hid], a[:, hid:2 * hid], a[:, 2 * hid:3 * hid],
                                    a[:, 3 * hid:], tcs[k], cs[k], dh, dc,
                                    _into(xp, [dgh[k]]))
                dh = _threads.matmul(dgh[k], w)
            elif mode == "GRU":
                _, a, ghs = ctx.buffers
                a = a[k]
                _, _, dz = _gru_grads(a[:, :hid], a[:, hid:2 * hid], a[:, 2 * hid:],
                                      ghs[k][:, 2 * hid:], hs[k], dh,
                                      _into(xp, [dgi[k], dgh[k]]))
                dh = _threads.matmul(dgh[k], w)
                dh += dz
            else:
                h = hs[k + 1]
                xp.multiply(dh, 1 - h * h if mode == "RNN_TANH" else h > 0, out=dgh[k])
                dh = _threads.matmul(dgh[k], w)
            if tick is not None:
                tick(k)
    return dh, dc


def _pipelined_backward(ctx, grads, dgh, dgi, x, w_ih, b_ih, b_hh):
    """Recurrence's backward where it computed the input part itself (``x``, ``w_ih``): the
    loop runs on one thread while the other takes, chunk by chunk as the loop finishes them,
    the GEMMs over all steps (W_hh's, W_ih's and x's gradients; _overlap.py). Each weight
    gradient is the sum of its chunks' GEMMs in a fixed order."""
    hs, need, reverse = ctx.buffers[0], ctx.needs_input_grad, ctx.reverse
    t_len, n, hid = hs.shape[0] - 1, hs.shape[1], hs.shape[-1]
    chunks = _overlap.spans(t_len, n, 512)[::-1]  # in the order the backward loop ends them
    g = dgh.shape[-1]
    inp = ctx.inp
    # the input part's gradient in time order (the loop fills dgi in processing order)
    dgi_t = np.empty_like(dgi) if reverse else dgi
    dx = np.empty(inp.shape, inp.dtype) if need[7] else None
    parts_hh = [None] * len(chunks) if need[3] else None
    parts_ih = [None] * len(chunks) if need[8] else None
    ends = {lo: i for i, (lo, _) in enumerate(chunks)}  # the step that ends a chunk
    pipe = _overlap.Pipe(len(chunks))

    def tick(k):
        i = ends.get(k)
        if i is None:
            return
        lo, hi = chunks[i]
        if reverse:
            tlo, thi = _t_span(lo, hi, t_len, True)
            dgi_t[tlo:thi] = dgi[lo:hi][::-1]
        pipe.done(i)

    def hh_part(i, lo, hi):
        parts_hh[i] = np.matmul(dgh[lo:hi].reshape(-1, g).T, hs[lo:hi].reshape(-1, hid))

    def ih_part(i, lo, hi):
        tlo, thi = _t_span(lo, hi, t_len, reverse)
        parts_ih[i] = np.matmul(dgi_t[tlo:thi].reshape(-1, g).T, inp[tlo * n:thi * n])

    def x_part(i, lo, hi):
        tlo, thi = _t_span(lo, hi, t_len, reverse)
        np.matmul(dgi_t[tlo:thi].reshape(-1, g), w_ih._data, out=dx[tlo * n:thi * n])

    jobs = [(i, lambda f=f, i=i, lo=lo, hi=hi: f(i, lo, hi))
            for i, (lo, hi) in enumerate(chunks)
            for f, wanted in ((x_part, dx), (hh_part, parts_hh), (ih_part, parts_ih))
            if wanted is not None]
    tasks = _overlap.Tasks(pipe, jobs)
    res = []

    def loop():
        res.append(_backward_loop(ctx, *grads, dgh, dgi, tick))

    def producer():
        pipe.produce(loop)
        tasks.drain()  # what the other thread has not taken yet

    _pin_blas()
    _overlap.run_pair(producer, tasks.drain, len(jobs) // len(chunks) * inp.shape[0] * g *
                      max(hid, inp.shape[1]))
    dh, dc = res[0]
    with quiet():
        dw_hh = _sum(parts_hh)
        dw_ih = _sum(parts_ih)
        flat_h, flat_i = dgh.reshape(-1, g), dgi_t.reshape(-1, g)
        db_hh = flat_h.sum(0) if b_hh is not None and need[4] else None
        db_ih = flat_i.sum(0) if b_ih is not None and need[9] else None
    return (None, _make(dh), _maybe(dc), _maybe(dw_hh), _maybe(db_hh), None, None,
            None if dx is None else _make(dx.reshape(x.shape)), _maybe(dw_ih), _maybe(db_ih))


def _sum(parts):
    """The chunks' partial GEMMs added in their fixed order (None: not wanted)."""
    if parts is None:
        return None
    total = parts[0]
    for p in parts[1:]:
        total += p
    return total


def _pin_blas():
    """The BLAS at one thread per call before the first raw GEMM of a layer (what
    ``_threads.matmul`` does on its first call)."""
    if not _threads._blas_pinned:
        _threads._pin_blas()


def _input_bias(b_ih, b_hh, mode):
    """The bias added to the input part of every step: b_ih, and b_hh where it adds to the
    input part (not GRU's: r multiplies b_hn)."""
    if b_ih is None:
        return None if b_hh is None or mode == "GRU" else b_hh._data
    return b_ih._data if b_hh is None or mode == "GRU" else b_ih._data + b_hh._data


def _t_span(lo, hi, t_len, reverse):
    """The time steps of the processing steps [lo, hi) (reverse: counted from the end)."""
    return (t_len - hi, t_len - lo) if reverse else (lo, hi)


def _forward_loop(ctx, x, h0, c0, w_hh, b_hh, mode, reverse, ready=None):
    """Recurrence's time loop over the input part ``x`` (T, N, G) of every step (biases
    included but GRU's b_hn); ``ready(k)`` (if given) before the k-th step: False stops."""
    order = range(len(x) - 1, -1, -1) if reverse else range(len(x))
    xp = h0.xp
    t_len, hid = x.shape[0], h0.shape[-1]
    hs = xp.empty((t_len + 1,) + h0.shape, dtype=x.dtype)  # h before/after each step
    hs[0] = h0._data
    wt = w_hh._data.T
    acts = xp.empty((t_len,) + x.shape[1:], dtype=x.dtype)  # activated gates per step
    with quiet():
        if mode == "LSTM":
            cs = xp.empty((t_len + 1,) + h0.shape, dtype=x.dtype)
            cs[0] = c0._data
            tcs = xp.empty((t_len,) + h0.shape, dtype=x.dtype)  # tanh(c) per step
            fused = kernel(Recurrence, "lstm_forward", h0.device, h0._dtype)
            for k, t in enumerate(order):
                if ready is not None and not ready(k):
                    return None
                a = acts[k]
                if fused is not None:  # one pass: gates, c, tanh(c), h
                    _by_rows(fused, a, _threads.matmul(hs[k], wt), x[t], cs[k], cs[k + 1],
                             tcs[k], hs[k + 1])
                    continue
                xp.add(_threads.matmul(hs[k], wt), x[t], out=a)
                i, f, g, o = a[:, :hid], a[:, hid:2 * hid], a[:, 2 * hid:3 * hid], \
                    a[:, 3 * hid:]
                _sigmoid(xp, a[:, :2 * hid])
                _sigmoid(xp, o)
                xp.tanh(g, out=g)
                c = cs[k + 1]
                xp.multiply(f, cs[k], out=c)
                c += i * g
                xp.tanh(c, out=tcs[k])
                xp.multiply(o, tcs[k], out=hs[k + 1])
            ctx.buffers = (hs, acts, cs, tcs)
        elif mode == "GRU":
            ghs = xp.empty_like(acts)  # h W_hh^T + b_hh per step (backward needs n's part)
            b = None if b_hh is None else b_hh._data
            fused = kernel(Recurrence, "gru_forward", h0.device, h0._dtype)
            for k, t in enumerate(order):
                if ready is not None and not ready(k):
                    return None
                gh, a = ghs[k], acts[k]
                if b is None:
                    gh[...] = _threads.matmul(hs[k], wt)
                else:
                    xp.add(_threads.matmul(hs[k], wt), b, out=gh)
                if fused is not None:  # one pass: gates and h
                    _by_rows(fused, a, gh, x[t], hs[k], hs[k + 1])
                    continue
                rz, n = a[:, :2 * hid], a[:, 2 * hid:]
                xp.add(x[t, :, :2 * hid], gh[:, :2 * hid], out=rz)
                _sigmoid(xp, rz)
                xp.multiply(a[:, :hid], gh[:, 2 * hid:], out=n)
                n += x[t, :, 2 * hid:]
                xp.tanh(n, out=n)
                h = hs[k + 1]
                xp.subtract(hs[k], n, out=h)
                h *= a[:, hid:2 * hid]
                h += n
            ctx.buffers = (hs, acts, ghs)
        else:
            for k, t in enumerate(order):
                if ready is not None and not ready(k):
                    return None
                a = acts[k]
                xp.add(_threads.matmul(hs[k], wt), x[t], out=a)
                if mode == "RNN_TANH":
                    xp.tanh(a, out=hs[k + 1])
                else:
                    xp.maximum(a, 0, out=hs[k + 1])
            ctx.buffers = (hs,)
    out = hs[1:][::-1] if reverse else hs[1:]
    # outputs are copies: a caller's in-place change must not reach the saved states
    res = (xp.ascontiguousarray(out) if reverse else out.copy(), hs[-1].copy())
    return res + (cs[-1].copy(),) if mode == "LSTM" else res

def _into(xp, outs):
    """A ``concat`` for the gate-gradient formulas that writes each result into the next of
    the buffers ``outs`` (no temporary per step)."""
    outs = iter(outs)
    return lambda parts, axis: xp.concatenate(parts, axis, out=next(outs))


def _recorded_backward(ctx, inputs, grads):
    """Recurrence's backward when it is itself recorded (double backward): the gradients of
    the step-by-step composite, whose nodes are differentiable again. ``inputs``: the saved
    (gi, h0, c0, w_hh, b_hh, x, w_ih, b_ih), gi None where the node took x and w_ih."""
    gi, h0, c0, w_hh, b_hh, x, w_ih, b_ih = inputs
    with enable_grad():
        if gi is None:
            gi = F.linear(x, w_ih, b_ih)
        outs = _unfused(ctx.mode, gi, h0, c0, w_hh, b_hh, reverse=ctx.reverse)
    pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o is not None]
    slots = (0, 1, 2, 3, 4, 7, 8, 9)  # the argument position of each saved input
    wanted = [i for i, t in enumerate(inputs) if t is not None and t.requires_grad]
    res = [None] * 10
    if pairs and wanted:
        got = _autograd_grad([o for o, _ in pairs], [inputs[i] for i in wanted],
                             [g for _, g in pairs], create_graph=True, allow_unused=True)
        for i, g in zip(wanted, got):
            res[slots[i]] = g
    return tuple(res)


def layer(mode, x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr=None, reverse=False):
    """One direction of a recurrent layer from its input ``x`` (T, N, I): returns (output
    (T, N, H or proj), h_n, c_n or None), as :func:`recurrence` of ``F.linear(x, w_ih,
    b_ih)``. For float32/float64 NumPy tensors without projection one :class:`Recurrence`
    node computes the input part too, in chunks beside its time loop (and the weight and
    input gradients beside the backward loop: ``_overlap.py``).

    Example: ``layer("LSTM", x, h0, c0, w_ih, w_hh, b_ih, b_hh)`` with x (T, N, I).
    """
    ts = [t for t in (x, h, c, w_ih, w_hh, b_ih, b_hh) if t is not None]
    if w_hr is None and len(x) and x.shape[1] and _fusable(*ts) and \
            all(type(t._data) is np.ndarray for t in ts):
        res = Recurrence.apply(None, h, c, w_hh, b_hh, mode, reverse, x, w_ih, b_ih)
        return res if mode == "LSTM" else (res[0], res[1], None)
    return recurrence(mode, F.linear(x, w_ih, b_ih), h, c, w_hh, b_hh, w_hr, reverse)


def recurrence(mode, gi, h, c, w_hh, b_hh, w_hr=None, reverse=False):
    """One direction of a recurrent layer from the input part ``gi`` (T, N, G) of every
    step's gates and the initial state ``h`` (N, H) (and ``c`` for LSTM): returns (output
    (T, N, H or proj), h_n, c_n or None). Runs :class:`Recurrence` (one fused node) for real
    float32/float64 tensors on one device without projection, else the step-by-step
    composite.

    Example: ``recurrence("GRU", gi, h0, None, w_hh, b_hh)`` with gi (T, N, 3H).
    """
    ts = [t for t in (gi, h, c, w_hh, b_hh) if t is not None]
    if w_hr is None and len(gi) and _fusable(*ts) and \
            all(type(t._data) is type(gi._data) for t in ts):
        res = Recurrence.apply(gi, h, c, w_hh, b_hh, mode, reverse)
        return res if mode == "LSTM" else (res[0], res[1], None)
    return _unfused(mode, gi, h, c, w_hh, b_hh, w_hr, reverse)
