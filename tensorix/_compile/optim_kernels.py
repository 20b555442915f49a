"""The optimizer's update inside a compiled training step: all parameters in one kernel.

A training step compiled whole (``opt.zero_grad(); loss = f(x); loss.backward();
opt.step()`` inside ``tensorix.compile``) replays ``opt.step()`` as an effect
(tensorix._compile.segments). Eager's step runs ~12 NumPy passes per parameter (Adam's
``adam_update``), each a Python call; here the update of a group's parameters is one numba
kernel, called over tuples of 16 flat arrays (``CHUNK``), one pass per element. It is
bit-identical to eager's update: the same float operations in the same order on the same
dtypes (the scalars rounded as NumPy rounds a Python float against an array: to the array's
dtype; no fused multiply-add, no fast-math), which ``tests/compile/test_optim_kernels.py``
checks bit for bit.

Covered: Adam, AdamW (not amsgrad) and SGD with momentum (after its first step, when the
buffers exist), the exact classes (a subclass may change ``_update``), CPU float32/float64
parameters with gradients of their own dtype. Anything else, and every step where numba is
not installed, runs the optimizer's own ``step`` (the NumPy fallback: eager's update).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .kernels import _numba, numba_available

__all__ = ["fused_effect", "FusedStep"]


def fused_effect(fn):
    """The fused replacement for a recorded effect ``fn`` (``functools.partial(step, opt)``,
    what :func:`tensorix.optim.optimizer.replayed` records), or None when ``fn`` is not an
    optimizer step this module covers."""
    from ..optim import SGD, Adam, AdamW
    from ..optim.optimizer import Optimizer

    if not isinstance(fn, functools.partial) or len(fn.args) != 1 or fn.keywords:
        return None
    opt = fn.args[0]
    kind = {Adam: "adam", AdamW: "adam", SGD: "sgd"}.get(type(opt))
    # the step recorded must be Optimizer.step itself (its undecorated body)
    if kind is None or getattr(Optimizer.step, "__wrapped__", None) is not fn.func:
        return None
    return FusedStep(opt, kind, fn)


class FusedStep:
    """``opt.step(closure=None)`` with each param group's update as one kernel call, falling
    back to ``fallback`` (the optimizer's own step) for what it does not cover. Example::

        step = FusedStep(opt, "adam", functools.partial(Optimizer.step.__wrapped__, opt))
        step()   # the same parameters, moments and step counts as opt.step()
    """

    def __init__(self, opt, kind, fallback):
        self.opt, self.kind, self.fallback = opt, kind, fallback
        self.fused_calls = 0  # steps that ran fused (tests read it)

    def __call__(self, closure=None):
        if closure is not None or not numba_available():
            return self.fallback(closure)
        work = [self._group_work(g) for g in self.opt.param_groups]
        if any(w is None for w in work) or _kernels() is None:
            return self.fallback(closure)
        for group, params in filter(None, work):
            (self._adam if self.kind == "adam" else self._sgd)(group, params)
            for p in params:
                p._version[0] += 1
        self.fused_calls += 1
        return None

    def _group_work(self, group):
        """``(group, params with a gradient)``; ``()`` for none; None where a parameter is
        outside what the kernels cover (checked before anything is updated)."""
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            return ()
        if self.kind == "adam" and group["amsgrad"]:
            return None
        dt = params[0]._data.dtype
        if dt not in (np.float32, np.float64):
            return None
        for p in params:
            d, g = p._data, p.grad._data
            if (type(d) is not np.ndarray or type(g) is not np.ndarray or d.dtype != dt
                    or g.dtype != dt or not d.flags.c_contiguous or not g.flags.c_contiguous):
                return None
        if self.kind == "sgd" and group["momentum"]:
            st = self.opt.state
            # the first step creates the buffers (a copy of the gradient): eager's code does it
            if any("momentum_buffer" not in st[p] for p in params):
                return None
        return group, params

    def _adam(self, group, params):
        from ..optim.optimizer import zero_state

        beta1, beta2 = group["betas"]
        lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
        decoupled = type(self.opt)._decoupled
        dt = params[0]._data.dtype
        ps, gs, ms, vs, steps = [], [], [], [], []
        for p in params:
            st = zero_state(self.opt.state[p], p, ("exp_avg", "exp_avg_sq"))
            st["step"] += 1
            steps.append(st["step"])
            ps.append(p._data.reshape(-1))
            gs.append(p.grad._data.reshape(-1))
            ms.append(st["exp_avg"]._data.reshape(-1))
            vs.append(st["exp_avg_sq"]._data.reshape(-1))
        # per parameter: its step's bias corrections, computed as adam_update does (Python
        # floats), then rounded to the arrays' dtype as NumPy rounds them
        scal = np.ones((-(-len(params) // CHUNK) * CHUNK, 2), dt)  # rows for the padding too
        memo = {}
        for i, s in enumerate(steps):
            row = memo.get(s)
            if row is None:
                row = memo[s] = (math.sqrt(1 - beta2 ** s), lr / (1 - beta1 ** s))
            scal[i, 0], scal[i, 1] = row
        consts = np.array([1 - lr * wd, wd, beta1, 1 - beta1, beta2, 1 - beta2, eps], dt)
        kernel = _kernels()[0]
        for lo, ch in _chunks(len(ps), dt):
            kernel(ch(ps, lo), ch(gs, lo), ch(ms, lo), ch(vs, lo), scal[lo:lo + CHUNK], consts,
                   bool(wd), decoupled, group["maximize"])

    def _sgd(self, group, params):
        lr, mom, damp = group["lr"], group["momentum"], group["dampening"]
        wd = group["weight_decay"]
        dt = params[0]._data.dtype
        ps = [p._data.reshape(-1) for p in params]
        gs = [p.grad._data.reshape(-1) for p in params]
        st = self.opt.state
        bufs = [st[p]["momentum_buffer"]._data.reshape(-1) for p in params] if mom \
            else ps  # unread without momentum (a tuple of the same type)
        consts = np.array([wd, mom, 1 - damp, lr], dt)
        kernel = _kernels()[1]
        for lo, ch in _chunks(len(ps), dt):
            kernel(ch(ps, lo), ch(gs, lo), ch(bufs, lo), consts, bool(wd), bool(mom),
                   damp == 0, group["nesterov"], group["maximize"])


# numba compiles a kernel per tuple length: the arrays go in tuples of CHUNK, the last one
# padded with empty arrays (no element, nothing done), so one compile per dtype serves any
# number of parameters (and a 1,000-parameter model does not compile a 1,000-way switch)
CHUNK = 16


def _chunks(n, dt):
    """``(first index, chunk maker)`` per call: ``maker(arrays, lo)`` is the tuple of
    ``arrays[lo:lo + CHUNK]`` padded to CHUNK."""
    pad = np.empty(0, dt)

    def chunk(arrays, lo):
        part = arrays[lo:lo + CHUNK]
        return tuple(part) + (pad,) * (CHUNK - len(part))

    return [(lo, chunk) for lo in range(0, n, CHUNK)]


# -- the kernels ----------------------------------------------------------------------------
# Each line is one NumPy statement of eager's update (tensorix.optim.adam.adam_update,
# tensorix.optim.sgd.sgd_update) on one element, in the same order: the same roundings.

def _adam_py(ps, gs, ms, vs, scal, consts, has_wd, decoupled, maximize):
    decay, wd, b1, c1, b2, c2, eps = (consts[0], consts[1], consts[2], consts[3], consts[4],
                                      consts[5], consts[6])
    for k in range(len(ps)):
        p, g, m, v = ps[k], gs[k], ms[k], vs[k]
        bc2, lrbc = scal[k, 0], scal[k, 1]
        for i in range(p.shape[0]):
            gi = g[i]
            if maximize:
                gi = -gi
            pi = p[i]
            if has_wd:
                if decoupled:
                    pi = pi * decay          # p *= 1 - lr * wd
                else:
                    gi = gi + wd * pi        # g = g + wd * p
            mi = m[i] * b1                   # m *= beta1
            mi = mi + c1 * gi                # m += (1 - beta1) * g
            sq = gi * gi                     # sq = g * g
            sq = sq * c2                     # sq *= 1 - beta2
            vi = v[i] * b2                   # v *= beta2
            vi = vi + sq                     # v += sq
            d = np.sqrt(vi)                  # denom = sqrt(v)
            d = d / bc2                      # denom /= bc2_sqrt
            d = d + eps                      # denom += eps
            s = mi / d                       # step_dir = m / denom
            s = s * lrbc                     # step_dir *= lr / bc1
            m[i], v[i], p[i] = mi, vi, pi - s  # p -= step_dir


def _sgd_py(ps, gs, bufs, consts, has_wd, has_momentum, no_dampening, nesterov, maximize):
    wd, mom, c_damp, lr = consts[0], consts[1], consts[2], consts[3]
    for k in range(len(ps)):
        p, g, b = ps[k], gs[k], bufs[k]
        for i in range(p.shape[0]):
            gi = g[i]
            if maximize:
                gi = -gi
            pi = p[i]
            if has_wd:
                gi = gi + wd * pi            # g = g + wd * p
            if has_momentum:
                bi = b[i] * mom              # buf *= momentum
                bi = bi + (gi if no_dampening else c_damp * gi)  # buf += (1 - damp) * g
                b[i] = bi
                gi = gi + mom * bi if nesterov else bi
            p[i] = pi - lr * gi              # p -= lr * g


@functools.cache
def _kernels():
    """The numba forms (compiled at first use, kept in numba's disk cache), or None."""
    numba = _numba()
    if numba is None:
        return None
    jit = numba.njit(cache=True, nogil=True, error_model="numpy")  # no fastmath: exact bits
    return jit(_adam_py), jit(_sgd_py)
