"""Precision policies: matmul/linear with rounded operands, autocast, and loss scaling.

A :class:`Policy` says how a matmul is computed in low precision:

* ``operand`` - the format both operands are rounded to: an element format (``"bf16"``,
  ``"fp16"``, ``"fp8_e4m3"``, ...), an MX block format (``"mxfp8"``, ``"mxfp8_e5m2"``,
  ``"mxfp6"``, ``"mxfp4"``, ``"mxint8"``: 32-element blocks along the reduction axis, with
  ``scale_mode``), ``"nvfp4"``, or None (full precision);
* ``acc`` - the accumulator: ``"fp32"`` (products of the rounded operands are exact in float32
  for every format here; one float32 GEMM) or ``"fp64"``, or an element format for a
  low-precision accumulator emulated step by step (every partial sum rounded, R6);
* ``out`` - the format the result is rounded to (None: keep the accumulator's value);
* ``grad`` - the format of the output gradient where it enters the two backward GEMMs (e.g.
  ``"fp16"`` underflows like fp16 training does, ``"fp8_e5m2"`` is the fp8 recipe, ``"mxfp8"``
  the MXFP8 recipe's E4M3 blocks). None: no rounding;
* ``tensor_scale`` - per-tensor scaling for element formats (the "current scaling" of fp8
  recipes): each tensor is multiplied by the power of two that brings its amax just under the
  format's max, rounded, and scaled back (exact power-of-two scalings).

The backward pass is computed like the forward, as a tensor core would: ``dA = dY @ B^T`` and
``dB = A^T @ dY`` each round their operands afresh - ``dY`` to ``grad``, the saved ``A`` or ``B``
to ``operand`` - with MX/NVFP4 blocks along *that* GEMM's reduction axis (so an MX operand is
quantized twice, once per direction, from its high-precision copy, as in the MXFP8 pre-training
recipe), accumulate in ``acc`` and round the result to ``out``. Rounding is otherwise
straight-through (the identity in backward), so fp32 master weights train through it.
:func:`autocast` makes a policy current for :func:`matmul` / :func:`linear` (and everything
built on them); :class:`GradScaler` is dynamic loss scaling with skipped steps on inf/NaN
gradients.

Example::

    with autocast("bf16"):
        y = linear(x, w, b)             # x, w rounded to bf16, fp32 accumulation, bf16 out
    y = matmul(a, b, Policy(operand="mxfp8", acc="fp32"))
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import threading

import numpy as np

from ..autograd.dispatch import gemm_hook
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..nn import functional as _F
from ..tensor import Tensor, _make
from ._xp import xp_of
from .casting import decode, encode, get_format
from .mx import mx_fake_quant
from .nvfp4 import nvfp4_dequantize, nvfp4_quantize

__all__ = ["Policy", "POLICIES", "autocast", "get_policy", "matmul", "linear", "round_tensor",
           "GradScaler"]

_MX = {"mxfp8": "fp8_e4m3", "mxfp8_e4m3": "fp8_e4m3", "mxfp8_e5m2": "fp8_e5m2",
       "mxfp6": "fp6_e3m2", "mxfp6_e3m2": "fp6_e3m2", "mxfp6_e2m3": "fp6_e2m3",
       "mxfp4": "fp4_e2m1", "mxint8": "int8"}
_WIDE = (None, "fp32", "fp64")


@dataclasses.dataclass(frozen=True)
class Policy:
    """How a matmul is rounded (see the module docstring). Frozen; use ``replace`` to vary."""

    operand: str | None = "bf16"
    acc: str = "fp32"
    out: str | None = None
    grad: str | None = None
    scale_mode: str = "rceil"
    rounding: str = "rne"
    tensor_scale: bool = False

    def __post_init__(self):
        for name in ("operand", "out", "grad"):
            v = getattr(self, name)
            if v is None or v in _WIDE:
                continue
            if name in ("operand", "grad") and (v in _MX or v == "nvfp4"):
                continue
            try:
                get_format(v)
            except ValueError:
                what = "an element format" if name == "out" else \
                    f"an element format, an MX name ({', '.join(_MX)}) or 'nvfp4'"
                raise ValueError(f"Policy: argument '{name}' must be {what}, got {v!r}") from None
        if self.acc not in ("fp32", "fp64"):
            get_format(self.acc)

    def replace(self, **kw) -> Policy:
        return dataclasses.replace(self, **kw)


POLICIES = {
    "fp32": Policy(operand=None),
    "bf16": Policy("bf16", out="bf16", grad="bf16"),
    "fp16": Policy("fp16", out="fp16", grad="fp16"),
    "fp8": Policy("fp8_e4m3", out="bf16", grad="fp8_e5m2", tensor_scale=True),
    "mxfp8": Policy("mxfp8", out="bf16", grad="fp8_e5m2"),
    "mxfp4": Policy("mxfp4", out="bf16", grad="bf16"),
    "nvfp4": Policy("nvfp4", out="bf16", grad="bf16"),
}

_state = threading.local()


def get_policy() -> Policy | None:
    """The policy made current by the innermost :func:`autocast`, or None."""
    stack = getattr(_state, "stack", None)
    return stack[-1] if stack else None


@contextlib.contextmanager
def autocast(policy="bf16", enabled=True):
    """Make ``policy`` (a :class:`Policy` or a name in ``POLICIES``: ``"bf16"``, ``"fp16"``,
    ``"fp8"``, ``"mxfp8"``, ``"mxfp4"``, ``"nvfp4"``) current inside the block, for every GEMM
    primitive: ``tensorix.matmul`` / ``@``, ``bmm``, ``einsum``'s contractions,
    ``nn.functional.linear``, the convolutions and attention's products, so a plain ``nn``
    model trains under it. Weights stay float32 ("master weights"); they are rounded on the fly
    with straight-through gradients. The policy is installed as this thread's GEMM hook in
    the one dispatch point (``autograd/dispatch.py``).

    Example: ``with autocast("mxfp8"): loss = F.cross_entropy(model(x), y)``.
    """
    if isinstance(policy, str):
        if policy not in POLICIES:
            raise ValueError(f"autocast(): unknown policy {policy!r}; expected a Policy or one "
                             f"of {sorted(POLICIES)}")
        policy = POLICIES[policy]
    elif not isinstance(policy, Policy):
        raise TypeError(f"autocast(): expected a Policy or a name, got {type(policy).__name__}")
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    stack.append(policy if enabled else POLICIES["fp32"])
    try:
        with gemm_hook(_hook(stack[-1])):
            yield policy
    finally:
        stack.pop()


class _PolicyGemm:
    """A policy as the dispatcher's GEMM hook: each GEMM primitive is written by its ``_gemm``
    rule with :meth:`matmul`, the policy's product."""

    __slots__ = ("pol",)

    def __init__(self, pol):
        self.pol = pol

    def __call__(self, cls, args):
        ts = [a for a in args if isinstance(a, Tensor)]
        if not ts or any(not t.dtype.is_floating_point for t in ts):
            return None  # integer and complex products run as usual
        out = cls._gemm(self.matmul, *args)
        d = ts[0].dtype
        return out if out is None or out.dtype is d else out.to(d)

    def matmul(self, a, b, bias=None):
        """``a @ b (+ bias)`` under the policy (2-d or batched operands)."""
        pol = self.pol
        if bias is None:
            return _policy_matmul(a, b, pol)
        y = _policy_matmul(a, b, pol, round_out=False) + bias  # in the accumulator
        return round_tensor(y, pol.out, None, -1, pol)


def _hook(pol):
    """The GEMM hook of a Policy (None for a policy that rounds nothing)."""
    pol = _policy(pol) if pol is not None else None
    return None if pol is None else _PolicyGemm(pol)


@contextlib.contextmanager
def policy_scope(policy, op="matmul"):
    """The GEMMs of the block under ``policy`` (a :class:`Policy`, a preset name, or None: the
    current :func:`autocast` one), or in full precision where it rounds nothing."""
    pol = _policy(policy, op)
    with gemm_hook(None if pol is None else _PolicyGemm(pol)):
        yield pol


# -- rounding with straight-through gradients --------------------------------------------------
def _round_raw(a, fmt, axis, pol):
    """Values of ``a`` (float32/64 array) rounded to ``fmt`` (element, MX or nvfp4)."""
    if fmt is None or fmt in _WIDE:
        return a
    out = np.dtype(a.dtype if a.dtype == np.float64 else np.float32)
    if fmt in _MX:
        return mx_fake_quant(a, _MX[fmt], axis=axis, pad=True, scale_mode=pol.scale_mode,
                             rounding=pol.rounding).astype(out, copy=False)
    if fmt == "nvfp4":
        return nvfp4_dequantize(nvfp4_quantize(a, axis=axis, pad=True))._data.astype(out)
    f = get_format(fmt)
    k = 0
    if pol.tensor_scale:
        k = _tensor_scale_exponent(a, f)
        a = a * out.type(2.0**k) if k else a
    q = decode(encode(a, f, rounding=pol.rounding, nan_policy="zero"), f, out)
    return q * out.type(2.0**-k) if k else q


def _tensor_scale_exponent(a, f):
    """k with amax * 2^k in (max/2, max]: the largest power-of-two scale that cannot overflow."""
    xp = xp_of(a)
    amax = float(xp.abs(a).max()) if a.size else 0.0
    if not (amax > 0 and math.isfinite(amax)):
        return 0
    k = math.frexp(f.max)[1] - math.frexp(amax)[1]  # amax 2^k < 2^(emax+1)
    while amax * 2.0**k > f.max:
        k -= 1
    return max(min(k, 120), -120)


class _Round(Function):
    """Forward: round to ``fwd``; backward: the gradient rounded to ``bwd`` (identity when
    None) - the straight-through estimator."""

    @staticmethod
    def forward(ctx, x, fwd, bwd, axis, pol):
        ctx.bwd, ctx.pol = bwd, pol
        return _round_raw(x._data, fwd, axis, pol)

    @staticmethod
    def backward(ctx, g):
        if ctx.bwd is None:
            return g, None, None, None, None
        return round_tensor(g, ctx.bwd, None, -1, ctx.pol), None, None, None, None


def round_tensor(x, fwd, bwd=None, axis=-1, policy=None) -> Tensor:
    """``x`` rounded to ``fwd`` with the gradient rounded to ``bwd`` (both may be None; MX and
    NVFP4 blocks run along ``axis``). Integer or low-precision inputs become float32."""
    pol = policy or Policy()
    if not x.dtype.is_floating_point or x.dtype.itemsize < 4:
        x = x.to(np.float32)
    if fwd in _WIDE and bwd in _WIDE:
        return x
    return _Round.apply(x, fwd, bwd, axis, pol)


# -- matmul / linear -----------------------------------------------------------------------
class _LowAccMatMul(Function):
    """A @ B with every partial sum rounded to the accumulator format (a k-step loop)."""

    @staticmethod
    def forward(ctx, a, b, acc, pol):
        ctx.save_for_backward(a, b)
        A, B = a._data.astype(np.float32), b._data.astype(np.float32)
        f = get_format(acc)
        out = None
        for h in range(A.shape[-1]):
            term = A[..., :, h:h + 1] * B[..., h:h + 1, :]  # exact: rounded operands
            out = term if out is None else out + term
            out = decode(encode(out, f, rounding=pol.rounding, nan_policy="zero"), f)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        with gemm_hook(None):  # the exact products of the rounded operands
            return g @ b.mT, a.mT @ g, None, None


def _policy(policy, op="matmul"):
    """The Policy meant by ``policy`` (None: the current autocast one), or None for none or a
    policy that rounds nothing (then the plain op is exact)."""
    if policy is None:
        pol = get_policy()
    elif isinstance(policy, str):
        if policy not in POLICIES:
            raise ValueError(f"{op}(): unknown policy {policy!r}; expected one of "
                             f"{sorted(POLICIES)}")
        pol = POLICIES[policy]
    elif isinstance(policy, Policy):
        pol = policy
    else:
        raise TypeError(f"{op}(): argument 'policy' must be a Policy, a name or None, got "
                        f"{type(policy).__name__}")
    trivial = pol is None or (pol.operand is None and pol.acc in _WIDE and pol.out is None
                              and pol.grad is None)
    return None if trivial else pol


class _PolicyMatMul(Function):
    """``a @ b`` under a policy, both directions like a tensor core (module docstring):
    operands rounded along the reduction axis of each GEMM, ``acc`` accumulation, the result
    rounded to ``out`` (the forward's rounding deferred when ``round_out`` is False, so that
    :func:`linear` can add its bias first)."""

    @staticmethod
    def forward(ctx, a, b, pol, round_out):
        ctx.save_for_backward(a, b)
        ctx.pol = pol
        qa = round_tensor(a, pol.operand, None, -1, pol)
        qb = round_tensor(b, pol.operand, None, -2, pol)
        return _gemm(qa, qb, pol, pol.out if round_out else None)

    @staticmethod
    def backward(ctx, g):
        with gemm_hook(None):  # its own products are plain GEMMs, under autocast or not
            return _PolicyMatMul._grads(ctx, g)

    @staticmethod
    def _grads(ctx, g):
        a, b = ctx.saved_tensors
        pol, da, db = ctx.pol, None, None
        if ctx.needs_input_grad[0]:  # dA = dY @ B^T: reduction over b's last axis
            gq = round_tensor(g, pol.grad, None, -1, pol)
            da = _gemm(gq, round_tensor(b, pol.operand, None, -1, pol).mT, pol, pol.out)
        if ctx.needs_input_grad[1]:  # dB = A^T @ dY: reduction over the rows
            gq = round_tensor(g, pol.grad, None, -2, pol)
            db = _gemm(round_tensor(a, pol.operand, None, -2, pol).mT, gq, pol, pol.out)
        return da, db, None, None


def _gemm(qa, qb, pol, out):
    """``qa @ qb`` (operands already rounded) accumulated in ``pol.acc``, rounded to ``out``,
    as float32 (float64 where the accumulator is)."""
    if pol.acc == "fp64":
        y = qa.to(np.float64) @ qb.to(np.float64)
    elif pol.acc == "fp32":
        y = qa @ qb
    else:
        y = _LowAccMatMul.apply(qa, qb, pol.acc, pol)
    return round_tensor(y, out, None, -1, pol)


def _policy_matmul(a, b, pol, round_out=True):
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"matmul(): policy matmul needs operands of at least 2 dims, got "
                         f"{a.ndim} and {b.ndim}")
    y = _PolicyMatMul.apply(a, b, pol, round_out)
    dt = a.dtype if a.dtype.is_floating_point and a.dtype.itemsize >= 4 else None
    return y if dt is None or y.dtype is dt else y.to(dt)


def matmul(a, b, policy=None) -> Tensor:
    """``a @ b`` under ``policy`` (default: the current :func:`autocast` policy, else full
    precision). Shapes as :func:`tensorix.matmul`; blocks of MX/NVFP4 operands run along the
    reduction axis, in both directions (module docstring). Differentiable; rounding is
    straight-through. Example: ``matmul(a, b, "mxfp8")``."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError("matmul(): arguments must be Tensors")
    with policy_scope(policy):
        return a @ b


def linear(x, weight, bias=None, policy=None) -> Tensor:
    """``x @ weight.T + bias`` under ``policy`` (see :func:`matmul`); ``weight`` is
    ``(out_features, in_features)`` as in ``nn.functional.linear``, x ``(*, in_features)``.
    The bias is added in the accumulator (float32) before the output rounding; its gradient
    (a sum of the output gradient) is not rounded, like a fused bias-gradient reduction.
    Example: ``linear(x, w, b, "bf16")``."""
    with policy_scope(policy, "linear"):
        return _F.linear(x, weight, bias)


# -- loss scaling ----------------------------------------------------------------------------
class GradScaler:
    """Dynamic loss scaling (as ``torch.amp.GradScaler``): multiply the loss by ``scale`` so
    small gradients survive a low-precision backward, unscale the gradients before the step,
    skip the step when any gradient is inf/NaN and halve the scale; after ``growth_interval``
    clean steps in a row, double it.

    Example::

        scaler = GradScaler()
        scaler.scale(loss).backward()
        scaler.step(opt)        # unscales opt's gradients; skips the step on inf/NaN
        scaler.update()
    """

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if init_scale <= 0 or growth_factor <= 1 or not 0 < backoff_factor < 1:
            raise ValueError("GradScaler: expected init_scale > 0, growth_factor > 1 and "
                             "0 < backoff_factor < 1")
        self._scale = float(init_scale)
        self.growth_factor, self.backoff_factor = float(growth_factor), float(backoff_factor)
        self.growth_interval, self.enabled = int(growth_interval), bool(enabled)
        self._growth_tracker = 0
        self._found_inf = None  # None: not unscaled yet this step
        self.skipped_steps = 0

    def get_scale(self) -> float:
        return self._scale if self.enabled else 1.0

    def scale(self, loss):
        """``loss * scale`` (a Tensor or a list of Tensors)."""
        if not self.enabled:
            return loss
        if isinstance(loss, (list, tuple)):
            return type(loss)(v * self._scale for v in loss)
        return loss * self._scale

    @staticmethod
    def _params(opt_or_params):
        if hasattr(opt_or_params, "param_groups"):
            return [p for g in opt_or_params.param_groups for p in g["params"]]
        return list(opt_or_params)

    @no_grad()
    def unscale_(self, optimizer_or_params) -> bool:
        """Divide the gradients by the scale in place; returns whether an inf/NaN was found."""
        if not self.enabled:
            return False
        if self._found_inf is not None:
            raise RuntimeError("GradScaler.unscale_(): unscale_() has already been called "
                               "since the last update()")
        inv = 1.0 / self._scale
        found = False
        for p in self._params(optimizer_or_params):
            if p.grad is None:
                continue
            g = p.grad._data
            if not bool(xp_of(g).isfinite(g).all()):
                found = True
            p.grad = _make((g * inv).astype(g.dtype), p.grad.dtype)
        self._found_inf = found
        return found

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless done) and call ``optimizer.step()`` - or ``optimizer()`` for a plain
        callable, with ``params=`` naming its parameters - unless a gradient is inf/NaN."""
        params = kwargs.pop("params", None)
        if not self.enabled:
            return optimizer.step(*args, **kwargs) if hasattr(optimizer, "step") else \
                optimizer(*args, **kwargs)
        if self._found_inf is None:
            if params is None and not hasattr(optimizer, "param_groups"):
                raise ValueError("GradScaler.step(): pass params= with a plain callable")
            self.unscale_(optimizer if params is None else params)
        if self._found_inf:
            self.skipped_steps += 1
            return None
        return optimizer.step(*args, **kwargs) if hasattr(optimizer, "step") else \
            optimizer(*args, **kwargs)

    def update(self, new_scale=None):
        """Adjust the scale for the next iteration (backoff on inf/NaN, growth after
        ``growth_interval`` clean steps)."""
        if not self.enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale)
        elif self._found_inf:
            self._scale *= self.backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self.growth_interval:
                self._scale = min(self._scale * self.growth_factor, math.ldexp(1.0, 127))
                self._growth_tracker = 0
        self._found_inf = None

    def state_dict(self) -> dict:
        return {"scale": self._scale, "growth_factor": self.growth_factor,
                "backoff_factor": self.backoff_factor, "growth_interval": self.growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state: dict) -> None:
        self._scale = float(state["scale"])
        self.growth_factor = float(state["growth_factor"])
        self.backoff_factor = float(state["backoff_factor"])
        self.growth_interval = int(state["growth_interval"])
        self._growth_tracker = int(state["_growth_tracker"])
