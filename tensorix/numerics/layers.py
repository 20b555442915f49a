"""Convolutions and layers under a precision policy, and putting a model's layers under one.

There is one mechanism: a policy is this thread's GEMM hook in the dispatcher
(``autograd/dispatch.py``), so under :func:`autocast` every GEMM of a plain ``nn`` model runs
in the policy. What is here pins a policy to a call or a layer:

* :func:`conv1d` / :func:`conv2d` / :func:`conv3d`: ``nn.functional``'s convolutions under
  ``policy``: the im2col GEMM is the policy product (MX/NVFP4 blocks run along its reduction
  axis ``C_in/groups * prod(kernel)``, as in an implicit-GEMM tensor core convolution, in both
  directions), rounded to the policy's ``out``; the bias is added to that, in float32;
* :class:`Linear`, :class:`Conv1d`..:class:`Conv3d`: the ``nn`` layers (same parameters,
  init and state_dict) whose forward runs under their own ``policy`` (None: autocast's);
* :func:`convert_to_policy`: the same for the linear and convolution layers of a model built
  from ``nn``, in place, by forward hooks (the layers keep their class).

Example::

    model = nx.convert_to_policy(MyNet(), "mxfp8")   # nn.Linear / nn.ConvNd GEMMs in MXFP8
    loss = loss_fn(model(x), y)
    loss.backward()
"""

from __future__ import annotations

import threading

from .. import nn
from ..autograd.dispatch import gemm_hook
from ..tensor import Tensor
from .policy import Policy, _policy, _PolicyGemm, policy_scope

__all__ = ["conv1d", "conv2d", "conv3d", "Linear", "Conv1d", "Conv2d", "Conv3d",
           "convert_to_policy"]

F = nn.functional


def _policy_conv(nd, input, weight, bias, stride, padding, dilation, groups, policy):
    op = f"conv{nd}d"
    with policy_scope(policy, op):
        return (F.conv1d, F.conv2d, F.conv3d)[nd - 1](input, weight, bias, stride, padding,
                                                      dilation, groups)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           policy=None) -> Tensor:
    """``nn.functional.conv1d`` under ``policy`` (default: the current autocast policy, else
    full precision): (N, C_in, L) -> (N, C_out, L_out). Example: ``conv1d(x, w, policy="bf16")``.
    """
    return _policy_conv(1, input, weight, bias, stride, padding, dilation, groups, policy)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           policy=None) -> Tensor:
    """``nn.functional.conv2d`` under ``policy``: (N, C_in, H, W) -> (N, C_out, H_out, W_out);
    MX blocks along ``C_in/groups * kH * kW``. Example: ``conv2d(x, w, b, padding=1,
    policy="mxfp8")``."""
    return _policy_conv(2, input, weight, bias, stride, padding, dilation, groups, policy)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           policy=None) -> Tensor:
    """``nn.functional.conv3d`` under ``policy``: (N, C_in, D, H, W) -> (N, C_out, ...).
    Example: ``conv3d(x, w, policy="fp8")``."""
    return _policy_conv(3, input, weight, bias, stride, padding, dilation, groups, policy)


class _PolicyLayer:
    """The policy attribute of the policy layers: a :class:`Policy`, a preset name, or None
    (then the current :func:`autocast` policy applies; outside one, full precision)."""

    policy: Policy | str | None = None

    def __init__(self, *args, policy=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.policy = policy

    def forward(self, input):
        if self.policy is None:
            return super().forward(input)
        with policy_scope(self.policy, type(self).__name__.lower()):
            return super().forward(input)

    def extra_repr(self):
        return super().extra_repr() + f", policy={self.policy!r}"


class Linear(_PolicyLayer, nn.Linear):
    """``nn.Linear`` computed under ``self.policy`` (:func:`numerics.linear`'s rounding).

    Example: ``nx.Linear(128, 64, policy="mxfp8")``, or ``nx.Linear(128, 64)`` under
    ``with nx.autocast("mxfp8"):``."""


class Conv1d(_PolicyLayer, nn.Conv1d):
    """``nn.Conv1d`` computed under ``self.policy``. Example: ``nx.Conv1d(16, 32, 3)``."""


class Conv2d(_PolicyLayer, nn.Conv2d):
    """``nn.Conv2d`` computed under ``self.policy``. Example: ``nx.Conv2d(1, 16, 3, padding=1)``.
    """


class Conv3d(_PolicyLayer, nn.Conv3d):
    """``nn.Conv3d`` computed under ``self.policy``. Example: ``nx.Conv3d(4, 8, 3)``."""


_LAYERS = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)


class _Scope:
    """A forward pre-hook and an always-called forward hook that run one layer's forward with
    ``hook`` as the thread's GEMM hook (a policy, or None: full precision); the hooks being
    replaced are kept per thread, as the GEMM hook itself is."""

    def __init__(self, hook):
        self.hook, self.saved = hook, {}  # thread id -> contexts (a dict: deep-copyable)

    def enter(self, module, args):
        ctx = gemm_hook(self.hook)
        ctx.__enter__()
        self.saved.setdefault(threading.get_ident(), []).append(ctx)

    def exit(self, module, args, out):
        self.saved[threading.get_ident()].pop().__exit__(None, None, None)


def convert_to_policy(module, policy=None, skip=None):
    """Run every ``nn.Linear`` / ``nn.Conv1d..3d`` in ``module`` (itself included) under
    ``policy``, in place, and return ``module``.

    The layers keep their class, parameters (the same objects, so an optimizer built before
    still holds them), buffers and state_dict keys; forward hooks install the policy as the
    GEMM hook for the layer's forward. ``policy``: a :class:`Policy` or a preset name; None
    follows :func:`autocast` (which reaches every GEMM of a plain model anyway). ``skip(name,
    layer)`` returning True runs that layer in full precision, even under autocast (e.g. the
    LM head). Exact types only: subclasses of those layers may compute something else and are
    left alone.

    Example::

        nx.convert_to_policy(model, "mxfp8", skip=lambda name, m: name == "head")
    """
    pol = _policy(policy, "convert_to_policy") if policy is not None else None
    for name, m in module.named_modules():
        if type(m) not in _LAYERS:
            continue
        if skip is not None and skip(name, m):
            hook = None
        elif pol is not None:
            hook = _PolicyGemm(pol)
        else:
            continue
        old = getattr(m, "_policy_scope", None)
        if old is not None:  # converted before: the new policy replaces the old one
            for h in old:
                h.remove()
        scope = _Scope(hook)
        m._policy_scope = (m.register_forward_pre_hook(scope.enter),
                           m.register_forward_hook(scope.exit, always_call=True))
    return module
