"""Every activation of tensorix, with PyTorch's ``F.*`` signatures (``inplace`` included);
``tensorix.nn.functional`` re-exports the names of ``FUNCTIONAL``, and the softmax family
lives beside this file in ``softmax.py``.

Most are composites of primitives, so their gradients (and second derivatives) come from the
primitives' rules. The others are primitives of their own, each for a stated reason:

* ``relu``: one select pass (numba's, ``kernels/_jit_13act.py``; else a bit mask: NumPy's
  ``where`` branches per element, ~10x slower);
* ``sigmoid``: one stable kernel (``exp(-|x|)``, no overflow) instead of four ops, and the
  backward ``out * (1 - out)`` needs no recomputation (``_act_fast.py``);
* ``softplus``: the composite ``log1p(exp(x))`` overflows, and the stable composite
  ``relu(x) + log1p(exp(-|x|))`` gets the derivative at 0 wrong (kinks of relu and abs);
* ``gelu``: one kernel in the forward and one in the backward (speed; it sits in every
  transformer MLP);
* ``leaky_relu`` and ``hardtanh`` (relu6): one select pass (speed); hardtanh's gradient is
  zero at the boundaries (unlike ``clamp``'s), as in PyTorch;
* ``hardswish`` and the ELU family (elu, selu, celu): one pass each (speed; ``_act_pass.py``);
* ``hardsigmoid``, ``softsign``, ``logsigmoid``, ``logit`` and ``glu``: one pass each where the
  composites made three to seven (speed; ``_act_fast.py``).

The float32 CPU kernels are numba's where it builds, else the same operations on NumPy
blocks: the same bits (exact selects give torch's; the rounded ones state their ulp bounds).
The CPU kernels of large arrays run over the library's threads (``_threads``), with the bits
of the unsplit kernel. Low-precision inputs (float16, bfloat16) are computed in float32 and
rounded once, forward and backward, as torch's CPU kernels do: the primitives declare
``_widen16``, the composites whose torch twin is one fused kernel (mish) go through
``widened`` (autograd/dispatch.py).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .. import _threads, backend, kernels
from .. import dtypes as dt
from ..autograd.dispatch import kernel, widened
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..backend import quiet
from ..tensor import Tensor, _make
from ._act_fast import (
    Glu,
    Hardsigmoid,
    Logit,
    LogSigmoid,
    Sigmoid,
    Softsign,
    cpu32,
    float32_act,
    jit32,
    select32,
)
from ._act_pass import Elu, Hardswish
from ._common import check_tensor, float_input
from ._erf import erf_kernel
from ._relu_grad import ReluBackward, relu_grad_fusable
from .pointwise import where
from .unary import erf, tanh

__all__ = ["sigmoid", "logit", "softplus", "relu", "relu6", "leaky_relu", "elu", "selu", "celu",
           "gelu", "silu", "mish", "hardtanh", "hardsigmoid", "hardswish", "softsign",
           "tanhshrink", "logsigmoid", "hardshrink"]
# nn.functional's names: the above and those torch keeps out of its top level or in-place
FUNCTIONAL = __all__ + ["relu_", "threshold", "threshold_", "prelu", "rrelu", "rrelu_", "glu",
                        "softshrink", "elu_", "leaky_relu_", "hardtanh_"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _number(v, op, arg):
    if not isinstance(v, (numbers.Real, np.generic)) or isinstance(v, bool):
        raise TypeError(f"{op}(): argument '{arg}' must be a number, not {type(v).__name__}")
    return float(v)


def _real_float(x, op):
    x = float_input(x, op)
    if x._dtype.is_complex:
        raise RuntimeError(f"{op}(): not implemented for complex tensors")
    return x


def _maybe_inplace(fn, input, inplace, op):
    """``fn(input)``, written into ``input`` when ``inplace`` (nn.functional's flag)."""
    check_tensor(input, op)
    if not inplace:
        return fn(input)
    from .inplace import apply_inplace

    return apply_inplace(input, fn, op=op + "_")


_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}  # same-size unsigned ints (bit views)


class Relu(Function):
    _kernels = {"forward32": (jit32("relu32"),)}  # one select pass (kernels/_jit_13act.py)

    @staticmethod
    def forward(ctx, a):
        # PyTorch: a < 0 ? 0 : a (so -0.0 and nan pass through)
        d = a._data
        fused = cpu32(Relu, "forward32", d)
        if fused is not None:
            out = _make(select32(fused, d))
        elif type(d) is np.ndarray and d.size >= 4096 and d.dtype.kind == "f" and \
                d.itemsize in _UINT:
            # clear the bits of the negatives: NumPy's where branches per element, ~10x slower
            u = _UINT[d.itemsize]
            keep = np.less(d, 0).astype(u)
            keep -= 1  # 0 for negatives, all bits set elsewhere
            out = _make(np.bitwise_and(d.view(u), keep, out=keep).view(d.dtype))
        else:
            out = _make(a.xp.where(d < 0, 0, d).astype(d.dtype, copy=False))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        if relu_grad_fusable(g, out):  # first order, untraced: one bit-mask pass, same bits
            return ReluBackward.apply(g, out)
        return g.where((out <= 0).logical_not(), 0)  # PyTorch: out <= 0 ? 0 : g


class Softplus(Function):
    _widen16 = True  # torch's recipe: float32 math, rounded once, forward and backward
    # float32: the NumPy path's operations below in one pass (_act32.softplus_bt32)
    _kernels = {"forward32": (jit32("act_softplus_bt32", 1, 20),)}

    @staticmethod
    def forward(ctx, a, beta, threshold):
        ctx.save_for_backward(a)
        ctx.beta, ctx.threshold = beta, threshold
        xp, x = a.xp, a._data
        if type(x) is np.ndarray and x.dtype == np.float32:  # one pass, 2 ulp
            return float32_act(kernel(Softplus, "forward32", backend.cpu, dt.float32),
                               "softplus_bt32", x, np.float32(beta), np.float32(threshold))
        with quiet():
            z = x * beta
            soft = (xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))) / beta
            return xp.where(z > threshold, x, soft).astype(a._data.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        z = a * ctx.beta
        return where(z > ctx.threshold, g, g * sigmoid(z)), None, None


# Fused NumPy kernels run block by block over the library's threads (``_threads.blockwise``:
# the temporaries stay in cache). Each kernel repeats its composite's float operations in the
# same order, so results are bit-identical.
_blocked = _threads.blockwise


def _gelu_tanh_kernel(out, w):
    """out = 0.5 * w * (1 + tanh(K * (w + C * w * w * w)))"""
    t = np.multiply(Gelu._C, w, out=out)
    t *= w
    t *= w
    t += w
    t *= Gelu._K
    np.tanh(t, out=t)
    t += 1
    t *= 0.5 * w


def _gelu_tanh_grad_kernel(out, a, g):
    """out = g * (0.5 * (1 + t) + 0.5 * a * (1 - t * t) * K * (1 + 3 * C * a * a)) with
    t = tanh(K * (a + C * a * a * a)): Gelu.backward's composite, op for op."""
    t = np.multiply(Gelu._C, a)
    t *= a
    t *= a
    t += a
    t *= Gelu._K
    np.tanh(t, out=t)
    p = t + 1
    p *= 0.5
    t *= t
    np.subtract(1, t, out=t)
    q = 0.5 * a
    q *= t
    q *= Gelu._K
    r = np.multiply(3 * Gelu._C, a)
    r *= a
    r += 1
    q *= r
    p += q
    np.multiply(g, p, out=out)


def _fusable(*tensors):
    """NumPy float32/float64 tensors of one shape and dtype: the fused kernels' domain."""
    a = tensors[0]._data
    return type(a) is np.ndarray and a.dtype in (np.float32, np.float64) and all(
        type(t._data) is np.ndarray and t._data.dtype == a.dtype and t._data.shape == a.shape
        for t in tensors[1:])


class GeluTanhBackward(Function):
    """``g * gelu_tanh'(a)`` as one fused kernel (see ``_blocked``); its own backward, for
    double backward, is written with tensorix ops."""

    @staticmethod
    def forward(ctx, g, a):
        ctx.save_for_backward(g, a)
        with quiet():
            out = np.empty(a._data.shape, dtype=a._data.dtype)
            return _blocked(_gelu_tanh_grad_kernel, out, a._data, g._data)

    @staticmethod
    def backward(ctx, gg):
        g, a = ctx.saved_tensors
        k, c = Gelu._K, Gelu._C
        t = tanh(k * (a + c * a * a * a))
        sech2 = 1 - t * t
        du = k * (1 + 3 * c * a * a)  # u' for u = k (a + c a^3)
        ng, na = ctx.needs_input_grad
        d1 = 0.5 * (1 + t) + 0.5 * a * sech2 * du if ng else None  # gelu'
        d2 = sech2 * (du - a * t * du * du + 3 * k * c * a * a) if na else None  # gelu''
        return (gg * d1 if ng else None), (gg * g * d2 if na else None)


class GeluBackward(Function):
    """Exact GELU's backward ``g * (Phi(a) + a phi(a))`` in one float32 pass (numba's
    ``gelu_grad32``, or the same source on NumPy blocks); its own backward, for double
    backward, is written with tensorix ops (gelu'' = phi(a) (2 - a^2))."""

    @staticmethod
    def forward(ctx, g, a):
        ctx.save_for_backward(g, a)
        return kernels.float32_pass(kernel(Gelu, "exact32_backward", backend.cpu, dt.float32),
                                    "gelu_grad32", a._data, g._data)

    @staticmethod
    def backward(ctx, gg):
        g, a = ctx.saved_tensors
        ng, na = ctx.needs_input_grad
        pdf = (a * a * -0.5).exp() * (1 / math.sqrt(2 * math.pi))
        d1 = 0.5 * (1 + erf(a * (1 / math.sqrt(2)))) + a * pdf if ng else None  # gelu'
        return (gg * d1 if ng else None), (gg * g * (pdf * (2 - a * a)) if na else None)


def _jit32(name, inputs):
    """A float32 kernel of ``kernels/_math32.py`` compiled by numba, with its example."""
    return kernels.jit(name, ("float32",), lambda: (np.empty(1, np.float32),) + tuple(
        np.ones(1, np.float32) for _ in range(inputs)))


class Gelu(Function):
    _K = math.sqrt(2 / math.pi)
    _C = 0.044715
    _widen16 = True  # torch's recipe: float32 math, rounded once, forward and backward
    # one-pass CUDA kernels; on the CPU numba's one-pass float32 exact GELU and its backward
    _kernels = {"forward": (kernels.cuda.gelu,), "backward": (kernels.cuda.gelu_backward,),
                "exact32": (_jit32("gelu32", 1),),
                "exact32_backward": (_jit32("gelu_grad32", 2),)}

    @staticmethod
    def forward(ctx, a, approximate):
        ctx.save_for_backward(a)
        ctx.approximate = approximate
        xp, x = a.xp, a._data
        fused = kernel(Gelu, "forward", a.device, a._dtype)  # one GPU kernel; None on the CPU
        if fused is not None:
            return fused(x, approximate)
        with quiet():
            if approximate == "tanh" and _fusable(a):
                return _blocked(_gelu_tanh_kernel, np.empty(x.shape, dtype=x.dtype), x)
            if approximate == "tanh":
                w = x
                out = 0.5 * w * (1 + xp.tanh(Gelu._K * (w + Gelu._C * w * w * w)))
            elif x.dtype.itemsize <= 4 and type(x) is np.ndarray:
                # float32 math within 4 ulp (16-bit inputs arrive widened by _widen16); a
                # GPU without the fused kernel takes the float64 composite below
                out = kernels.float32_pass(kernel(Gelu, "exact32", backend.cpu, dt.float32),
                                           "gelu32", x)
            else:
                w = x.astype(np.float64)
                out = 0.5 * w * (1 + erf_kernel(w * (1 / math.sqrt(2))))
        return out.astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        fused = kernel(Gelu, "backward", a.device, a._dtype)
        if fused is not None and not is_grad_enabled() and g._dtype is a._dtype:
            # first order only (no graph is recorded): the kernel's result needs no backward
            return _make(fused(a._data, g._data, ctx.approximate)), None
        if ctx.approximate == "tanh" and _fusable(a, g):
            return GeluTanhBackward.apply(g, a), None
        if ctx.approximate == "tanh":
            k, c = Gelu._K, Gelu._C
            t = tanh(k * (a + c * a * a * a))
            return g * (0.5 * (1 + t) + 0.5 * a * (1 - t * t) * k * (1 + 3 * c * a * a)), None
        if _fusable(a, g) and a._data.dtype == np.float32 and not is_grad_enabled():
            # first order: one pass; a recorded backward (double backward, joint traces that
            # the compiler fuses) keeps the primitive ops below
            return GeluBackward.apply(g, a), None
        cdf = 0.5 * (1 + erf(a * (1 / math.sqrt(2))))
        pdf = (a * a * -0.5).exp() * (1 / math.sqrt(2 * math.pi))
        return g * (cdf + a * pdf), None


class LeakyRelu(Function):
    """``where(a > 0, a, a * slope)``, a primitive for speed: float32 in one select pass
    (numba's); else for 0 < slope <= 1 ``maximum(a, a * slope)``, bit for bit the same
    (signed zeros and nan included), two fast passes where NumPy's ``where`` branches per
    element (8x torch's time as a composite)."""

    _kernels = {"forward32": (jit32("leaky_relu32", 0.01),)}

    @staticmethod
    def forward(ctx, a, slope):
        ctx.save_for_backward(a)
        ctx.slope = slope
        xp, x = a.xp, a._data
        fused = cpu32(LeakyRelu, "forward32", x)
        if fused is not None:
            return select32(fused, x, np.float32(slope))
        with quiet():
            out = x * slope
            if 0 < slope <= 1:
                return _threads.ufunc(xp.maximum, x, out, min_part=_threads.CHEAP)
            return xp.where(x > 0, x, out).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return where(a > 0, g, g * ctx.slope), None


class Hardtanh(Function):
    _kernels = {"forward32": (jit32("hardtanh32", -1, 1),)}  # float32: one select pass

    @staticmethod
    def forward(ctx, a, lo, hi):
        ctx.save_for_backward(a)
        ctx.lo, ctx.hi = lo, hi
        fused = cpu32(Hardtanh, "forward32", a._data)
        if fused is not None:
            return select32(fused, a._data, np.float32(lo), np.float32(hi))
        return a.xp.clip(a._data, lo, hi).astype(a._data.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        # PyTorch: (x <= lo or x >= hi) ? 0 : grad; where, not *, so inf * 0 gives no nan
        return where((a <= ctx.lo).logical_or(a >= ctx.hi), 0, g), None, None


def sigmoid(input) -> Tensor:
    """The logistic function ``1 / (1 + exp(-input))``, elementwise, without overflow.
    Example: ``tensorix.sigmoid(tensorix.tensor([0.]))`` is ``tensor([0.5000])``."""
    return Sigmoid.apply(_real_float(input, "sigmoid"))


def logit(input, eps=None) -> Tensor:
    """``log(p / (1 - p))``, the inverse of sigmoid; with ``eps``, ``input`` is first clamped
    to [eps, 1 - eps] (and the gradient is zero outside it).

    Example: ``tensorix.logit(tensorix.tensor([0.5, 0.0]), eps=1e-6)`` is ``tensor([ 0.0000,
    -13.8155])``.
    """
    x = _real_float(input, "logit")
    lo, hi = -math.inf, math.inf
    if eps is not None:
        eps = _number(eps, "logit", "eps")
        lo, hi = eps, 1 - eps
    # log(x) - log1p(-x), not log(x / (1 - x)): at 0 and 1 the gradient is inf, not nan
    return Logit.apply(x, lo, hi)


def softplus(input, beta=1.0, threshold=20.0) -> Tensor:
    """``log(1 + exp(beta * input)) / beta``, linear (``input``) where ``beta * input >
    threshold``. Example: ``tensorix.softplus(tensorix.tensor([0.]))`` is log(2)."""
    x = _real_float(input, "softplus")
    beta = _number(beta, "softplus", "beta")
    if beta == 0:
        raise ValueError("softplus(): beta must be nonzero")
    return Softplus.apply(x, beta, _number(threshold, "softplus", "threshold"))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False) -> Tensor:
    """``input`` clipped to [min_val, max_val], with zero gradient at and beyond the bounds;
    integer tensors keep their dtype.

    Example: ``tensorix.hardtanh(tensorix.tensor([-2.0, 0.5, 2.0]))`` is ``tensor([-1.0000,
    0.5000, 1.0000])``.
    """
    check_tensor(input, "hardtanh")
    lo, hi = _number(min_val, "hardtanh", "min_val"), _number(max_val, "hardtanh", "max_val")
    if lo > hi:
        raise ValueError(f"hardtanh(): min_val cannot be greater than max_val (got {lo} and "
                         f"{hi})")
    if input._dtype is dt.bool or input._dtype.is_complex:
        raise RuntimeError(f"hardtanh(): not implemented for {input._dtype.name} tensors")
    return _maybe_inplace(lambda x: Hardtanh.apply(x, lo, hi), input, inplace, "hardtanh")


def relu6(input, inplace=False) -> Tensor:
    """``min(max(input, 0), 6)`` (``hardtanh(input, 0, 6)``).
    Example: ``tensorix.relu6(tensorix.tensor([-1.0, 3.0, 9.0]))`` is ``tensor([0., 3., 6.])``."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False) -> Tensor:
    """``input`` where positive, ``negative_slope * input`` elsewhere (slope at 0 too).
    Example: ``tensorix.leaky_relu(tensorix.tensor([-2.0, 2.0]), 0.1)`` is ``tensor([-0.2000,
    2.0000])``."""
    slope = _number(negative_slope, "leaky_relu", "negative_slope")

    def fn(x):
        return LeakyRelu.apply(_real_float(x, "leaky_relu"), slope)

    return _maybe_inplace(fn, input, inplace, "leaky_relu")


def elu(input, alpha=1.0, inplace=False) -> Tensor:
    """``input`` where positive, ``alpha * (exp(input) - 1)`` elsewhere.
    Example: ``tensorix.elu(tensorix.tensor([-1.0, 1.0]))`` is ``tensor([-0.6321, 1.0000])``."""
    a = _number(alpha, "elu", "alpha")
    return _maybe_inplace(lambda x: Elu.apply(_real_float(x, "elu"), a, 1.0, 1.0), input,
                          inplace, "elu")


def selu(input, inplace=False) -> Tensor:
    """``scale * elu(input, alpha)`` with the self-normalising constants (alpha ~ 1.6733,
    scale ~ 1.0507).

    Example: ``tensorix.selu(tensorix.tensor([-1.0, 1.0]))`` is ``tensor([-1.1113, 1.0507])``.
    """
    return _maybe_inplace(lambda x: Elu.apply(_real_float(x, "selu"), _SELU_ALPHA, _SELU_SCALE,
                                              1.0), input, inplace, "selu")


def celu(input, alpha=1.0, inplace=False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.
    Example: ``tensorix.celu(tensorix.tensor([-1.0, 1.0]), alpha=2.0)`` is ``tensor([-0.7869,
    1.0000])``."""
    a = _number(alpha, "celu", "alpha")
    if a == 0:
        raise ValueError("celu(): alpha must be nonzero (it divides the input)")
    return _maybe_inplace(lambda x: Elu.apply(_real_float(x, "celu"), a, 1.0, 1 / a), input,
                          inplace, "celu")


def gelu(input, approximate="none") -> Tensor:
    """``input * Phi(input)`` with Phi the standard normal CDF; ``approximate='tanh'`` uses
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.

    Example: ``tensorix.gelu(tensorix.tensor([1.]))`` is ``tensor([0.8413])``.
    """
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu(): approximate argument must be either 'none' or 'tanh', got "
                         f"{approximate!r}")
    return Gelu.apply(_real_float(input, "gelu"), approximate)


class Silu(Function):
    """``x sigmoid(x)`` as a primitive for speed: float32 in one pass forward and backward
    (``_math32.silu32`` / ``silu_grad32``, within 4 and 5 ulp; numba's where it builds, else
    the same source on NumPy blocks), where the composite took five passes (4x torch)."""

    _widen16 = True  # torch's fused kernel: float32 math, rounded once, both ways
    _kernels = {"forward32": (_jit32("silu32", 1),), "backward32": (_jit32("silu_grad32", 2),)}

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        x = a._data
        if type(x) is np.ndarray and x.dtype == np.float32:
            return kernels.float32_pass(kernel(Silu, "forward32", backend.cpu, dt.float32),
                                        "silu32", x)
        with quiet():
            return x / (1 + a.xp.exp(-x))

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        if _fusable(a, g) and a._data.dtype == np.float32 and not is_grad_enabled():
            return SiluBackward.apply(g, a)  # first order: one pass (see Gelu.backward)
        s = sigmoid(a)
        return g * (s * (1 + a * (1 - s)))


class SiluBackward(Function):
    """``g s (1 + x (1 - s))`` in one float32 pass; its own backward with tensorix ops
    (silu'' = s (1 - s) (2 + x (1 - 2 s)))."""

    @staticmethod
    def forward(ctx, g, a):
        ctx.save_for_backward(g, a)
        return kernels.float32_pass(kernel(Silu, "backward32", backend.cpu, dt.float32),
                                    "silu_grad32", a._data, g._data)

    @staticmethod
    def backward(ctx, gg):
        g, a = ctx.saved_tensors
        ng, na = ctx.needs_input_grad
        s = sigmoid(a)
        d1 = s * (1 + a * (1 - s)) if ng else None
        d2 = s * (1 - s) * (2 + a * (1 - 2 * s)) if na else None
        return (gg * d1 if ng else None), (gg * g * d2 if na else None)


def silu(input, inplace=False) -> Tensor:
    """``input * sigmoid(input)`` (a.k.a. swish).
    Example: ``tensorix.silu(tensorix.tensor([0.0, 1.0]))`` is ``tensor([0.0000, 0.7311])``."""
    return _maybe_inplace(lambda x: Silu.apply(_real_float(x, "silu")), input, inplace, "silu")


def mish(input, inplace=False) -> Tensor:
    """``input * tanh(softplus(input))``.
    Example: ``tensorix.mish(tensorix.tensor([0.0, 1.0]))`` is ``tensor([0.0000, 0.8651])``."""
    def fn(x):  # in float32 for 16-bit x, rounded once (torch's fused kernel, both ways)
        return widened(lambda w: w * tanh(softplus(w)), _real_float(x, "mish"))

    return _maybe_inplace(fn, input, inplace, "mish")


def hardsigmoid(input, inplace=False) -> Tensor:
    """``relu6(input + 3) / 6``: 0 below -3, 1 above 3, linear between.
    Example: ``tensorix.hardsigmoid(tensorix.tensor([-4.0, 0.0, 4.0]))`` is ``tensor([0.0000,
    0.5000, 1.0000])``."""
    def fn(x):
        return Hardsigmoid.apply(_real_float(x, "hardsigmoid"))

    return _maybe_inplace(fn, input, inplace, "hardsigmoid")


def hardswish(input, inplace=False) -> Tensor:
    """``input * relu6(input + 3) / 6``.
    Example: ``tensorix.hardswish(tensorix.tensor([-4.0, 1.0, 4.0]))`` is ``tensor([-0.0000,
    0.6667, 4.0000])``."""
    return _maybe_inplace(lambda x: Hardswish.apply(_real_float(x, "hardswish")), input,
                          inplace, "hardswish")


def softsign(input) -> Tensor:
    """``input / (1 + |input|)``.
    Example: ``tensorix.softsign(tensorix.tensor([-1.0, 3.0]))`` is ``tensor([-0.5000,
    0.7500])``."""
    return Softsign.apply(_real_float(input, "softsign"))


def tanhshrink(input) -> Tensor:
    """``input - tanh(input)``.
    Example: ``tensorix.tanhshrink(tensorix.tensor([0.0, 1.0]))`` is ``tensor([0.0000,
    0.2384])``."""
    x = _real_float(input, "tanhshrink")
    return x - tanh(x)


def logsigmoid(input) -> Tensor:
    """``log(sigmoid(input))`` without underflow (``-softplus(-input)``).
    Example: ``tensorix.logsigmoid(tensorix.tensor([-100.0, 0.0]))`` is ``tensor([-100.0000,
    -0.6931])``."""
    # 0 - 0 is +0, like PyTorch; in float32 for 16-bit input, rounded once (as torch's kernel)
    return LogSigmoid.apply(_real_float(input, "logsigmoid"))


def relu(input, inplace=False) -> Tensor:
    """``max(input, 0)``, keeping the dtype; ``inplace=True`` writes into ``input``.

    Example: ``tensorix.relu(tensorix.tensor([-1., 2.]))`` is ``tensor([0., 2.])``.
    """
    check_tensor(input, "relu")
    if input._dtype is dt.bool:
        raise RuntimeError("relu(): not implemented for bool tensors")
    return _maybe_inplace(Relu.apply, input, inplace, "relu")


def relu_(input) -> Tensor:
    """In-place :func:`relu`. Example: ``F.relu_(x)`` returns ``x``, rectified."""
    return relu(input, inplace=True)


def threshold(input, threshold, value, inplace=False) -> Tensor:
    """``input`` where ``input > threshold``, else ``value``; same shape as the input.
    Example: ``F.threshold(tensorix.tensor([0.5, 2.0]), 1.0, -1.0)`` is ``tensor([-1., 2.])``.
    """
    th = _number(threshold, "threshold", "threshold")
    val = _number(value, "threshold", "value")
    return _maybe_inplace(lambda x: Threshold.apply(x, th, val), input, inplace, "threshold")


_threshold = threshold  # threshold_'s parameter shadows the function's name


def prelu(input, weight) -> Tensor:
    """``input`` where positive, ``weight * input`` elsewhere; ``weight`` holds one slope or
    one per channel (dim 1).

    Shapes: input (N, C, *) with weight (C,) or (1,); an input of under 2 dims takes (1,) only.
    Example: ``F.prelu(tensorix.tensor([-2.0, 1.0]), tensorix.tensor([0.25]))`` is
    ``tensor([-0.5000, 1.0000])``.
    """
    check_tensor(input, "prelu")
    check_tensor(weight, "prelu", "weight")
    if weight.ndim > 1:
        raise RuntimeError(f"prelu(): weight must be a scalar or 1-D tensor, got shape "
                           f"{list(weight.shape)}")
    n = weight.numel()
    w = weight
    if n != 1:
        c = input.shape[1] if input.ndim >= 2 else 1  # torch: no channel dim below 2-d
        if n != c:
            raise RuntimeError(f"prelu(): mismatch of parameter numbers and input channel size. "
                               f"Found parameter numbers = {n} and channel size = {c}.")
        if input.ndim >= 2:
            w = weight.reshape((1, n) + (1,) * (input.ndim - 2))
    elif weight.ndim:
        w = weight.reshape(())
    return where(input > 0, input, w * input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False,
          generator=None) -> Tensor:
    """Randomised leaky ReLU: in training each negative element gets a slope drawn from
    U(lower, upper); in evaluation the slope is ``(lower + upper) / 2``. Same shape as the
    input. Example: ``F.rrelu(tensorix.tensor([-3.0, 1.0]))`` is ``tensor([-0.6875, 1.0])``.
    """
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    from .random import rand

    def fn(x):
        slope = rand(*x.shape, generator=generator, dtype=x.dtype, device=x.device)
        slope = slope * (upper - lower) + lower
        return where(x >= 0, x, x * slope)

    return _maybe_inplace(fn, input, inplace, "rrelu")


def glu(input, dim=-1) -> Tensor:
    """Gated linear unit: split ``input`` in halves ``a, b`` along ``dim``; ``a * sigmoid(b)``.

    Shapes: (*, 2n, *) -> (*, n, *). Example: ``F.glu(tensorix.randn(4, 6))`` has shape (4, 3).
    """
    check_tensor(input, "glu")
    if input.ndim == 0:
        raise RuntimeError("glu(): glu does not support scalars because halving size must be "
                           "even")
    size = input.shape[dim]
    if size % 2:
        raise RuntimeError(f"glu(): halving dimension must be even, but dimension {dim} is size "
                           f"{size}")
    d = dim + input.ndim if dim < 0 else dim
    return Glu.apply(input, d)


class _Gate(Function):
    """A piecewise-linear activation of slope 0 or 1 (hardshrink, softshrink, threshold) as a
    primitive for speed: one pass (numba's where it builds, else the NumPy form: the same
    values), where the composites took two to five (13-28x torch's time at 1M elements). Its
    parameters compare in the input's dtype (an integer input casts them, as torch does); nan
    propagates. The gradient is ``g`` where the slope is 1, so its own backward is the same
    selection."""

    _widen16 = True  # 16-bit inputs: float32 math, rounded once (torch's CPU kernels)

    @classmethod
    def forward(cls, ctx, a, *params):
        ctx.save_for_backward(a)
        x = a._data
        ctx.params = p = tuple(x.dtype.type(v) for v in params)
        fused = kernel(cls, "forward", a.device, a._dtype)
        with quiet():
            if fused is None or x.size == 0:
                return cls.numpy_form(a.xp, x, *p)
            x = np.require(x, requirements="C")  # (ascontiguousarray makes 0-d 1-d)
            return _threads.elementwise(lambda o, v: fused(o.reshape(-1), v.reshape(-1), *p),
                                        np.empty(x.shape, x.dtype), x, min_part=_threads.CHEAP)

    @classmethod
    def backward(cls, ctx, g):
        (a,) = ctx.saved_tensors
        # the mask by ops on the saved Tensor, not from its raw data: a recorded backward
        # (the compiler's joint graph) would otherwise keep the traced values' mask
        keep = cls.slope_one(a, *(v.item() for v in ctx.params))  # in a's dtype already
        return (where(keep, g, 0),) + (None,) * len(ctx.params)


def _gate_jit(name, params):
    return kernels.jit(name, ("float32", "float64"), lambda: (
        np.empty(1, np.float32), np.ones(1, np.float32)) + (np.float32(0.5),) * params)


class Hardshrink(_Gate):
    _kernels = {"forward": (_gate_jit("hardshrink", 1),)}

    @staticmethod
    def numpy_form(xp, x, lambd):
        return xp.where((x >= -lambd) & (x <= lambd), x.dtype.type(0), x)

    @staticmethod
    def slope_one(x, lambd):  # nan: 0, as torch's vectorised kernel (its scalar tail says g)
        return (x > lambd) | (x < -lambd)


class Softshrink(_Gate):
    _kernels = {"forward": (_gate_jit("softshrink", 1),)}

    @staticmethod
    def numpy_form(xp, x, lambd):
        return x - xp.clip(x, -lambd, lambd)

    slope_one = Hardshrink.slope_one


class Threshold(_Gate):
    _kernels = {"forward": (_gate_jit("threshold", 2),)}

    @staticmethod
    def numpy_form(xp, x, th, value):
        return xp.where(x <= th, value, x)

    @staticmethod
    def slope_one(x, th, value):
        return ~(x <= th)


def hardshrink(input, lambd=0.5) -> Tensor:
    """``input`` where ``|input| > lambd``, else 0; same shape as the input.
    Example: ``tensorix.hardshrink(tensorix.tensor([0.2, -1.0]))`` is ``tensor([0., -1.])``."""
    check_tensor(input, "hardshrink")
    return Hardshrink.apply(input, _number(lambd, "hardshrink", "lambd"))


def softshrink(input, lambd=0.5) -> Tensor:
    """``input - lambd`` above ``lambd``, ``input + lambd`` below ``-lambd``, else 0; same
    shape as the input. Example: ``F.softshrink(tensorix.tensor([0.2, -1.0]))`` is
    ``tensor([0.0000, -0.5000])``."""
    check_tensor(input, "softshrink")
    if lambd < 0:
        raise RuntimeError(f"softshrink(): lambda must be greater or equal to 0, but found to "
                           f"be {lambd}.")
    # x - clip(x, -l, l): x - l, x + l or 0, and -0 never (x - x is +0)
    return Softshrink.apply(input, lambd)


def threshold_(input, threshold, value) -> Tensor:
    """In-place :func:`threshold`. Example: ``F.threshold_(x, 0.0, 0.0)`` returns ``x``."""
    return _threshold(input, threshold, value, inplace=True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None) -> Tensor:
    """In-place :func:`rrelu`. Example: ``F.rrelu_(x)`` returns ``x``."""
    return rrelu(input, lower, upper, training, True, generator)


def elu_(input, alpha=1.0) -> Tensor:
    """In-place :func:`elu`. Example: ``F.elu_(x)`` returns ``x``."""
    return elu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope=0.01) -> Tensor:
    """In-place :func:`leaky_relu`. Example: ``F.leaky_relu_(x, 0.1)`` returns ``x``."""
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0) -> Tensor:
    """In-place :func:`hardtanh`. Example: ``F.hardtanh_(x)`` returns ``x``, clipped."""
    return hardtanh(input, min_val, max_val, inplace=True)


def _methods():
    from .inplace import make

    return {"sigmoid": sigmoid, "sigmoid_": make(sigmoid), "logit": logit,
            "logit_": make(logit), "relu": relu, "relu_": make(relu, "relu_"),
            "hardshrink": hardshrink, "prelu": prelu}


TENSOR_METHODS = _methods()
