"""Convolutions and modules under a precision policy, and the conversion of a model to them.

:func:`conv1d` / :func:`conv2d` / :func:`conv3d` are ``nn.functional``'s convolutions with the
im2col GEMM computed by the policy matmul (``policy.py``): the reduction axis is
``C_in/groups * prod(kernel)``, so MX/NVFP4 blocks run along it as in an implicit-GEMM tensor
core convolution, in both directions. :class:`Linear` and :class:`Conv1d`..:class:`Conv3d` are
the ``nn`` layers (same parameters, init and state_dict) computed that way, with their own
``policy`` or, when it is None, the current :func:`autocast` one; :func:`convert_to_policy`
switches the linear and convolution layers of a model built from ``nn`` in place, like the fp8
training converters of the field. ``nn`` itself never looks at the policy (numerics sits above
it), so a model trains in a format only through these.

Example::

    model = nx.convert_to_policy(MyNet())        # nn.Linear / nn.ConvNd -> policy versions
    with nx.autocast("mxfp8"):
        loss = loss_fn(model(x), y)              # every GEMM of those layers in MXFP8
    loss.backward()
"""

from __future__ import annotations

import functools

from .. import nn
from ..nn.functional._conv import _conv
from ..tensor import Tensor
from .policy import Policy, _policy, _policy_matmul, linear, round_tensor

__all__ = ["conv1d", "conv2d", "conv3d", "Linear", "Conv1d", "Conv2d", "Conv3d",
           "convert_to_policy"]

F = nn.functional


def _policy_conv(nd, input, weight, bias, stride, padding, dilation, groups, policy):
    op = f"conv{nd}d"
    pol = _policy(policy, op)
    plain = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    if pol is None:
        return plain(input, weight, bias, stride, padding, dilation, groups)
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"{op}(): arguments 'input' and 'weight' must be Tensors")
    y = _conv(input, weight, bias, stride, padding, dilation, groups, nd, op,
              matmul=lambda w, cols: _policy_matmul(w, cols, pol, round_out=False))
    return round_tensor(y, pol.out, None, -1, pol)  # the bias is added before the rounding


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

    def extra_repr(self):
        return super().extra_repr() + f", policy={self.policy!r}"


class Linear(_PolicyLayer, nn.Linear):
    """``nn.Linear`` computed by :func:`numerics.linear` under ``self.policy``.

    Example: ``nx.Linear(128, 64, policy="mxfp8")``, or ``nx.Linear(128, 64)`` under
    ``with nx.autocast("mxfp8"):``."""

    def forward(self, input):
        return linear(input, self.weight, self.bias, self.policy)


class _Conv(_PolicyLayer):
    def _conv_forward(self, input, weight, bias, conv=None):
        conv = functools.partial(_policy_conv, self._nd, policy=self.policy)
        return super()._conv_forward(input, weight, bias, conv)


class Conv1d(_Conv, nn.Conv1d):
    """``nn.Conv1d`` computed under ``self.policy``. Example: ``nx.Conv1d(16, 32, 3)``."""


class Conv2d(_Conv, nn.Conv2d):
    """``nn.Conv2d`` computed under ``self.policy``. Example: ``nx.Conv2d(1, 16, 3, padding=1)``.
    """


class Conv3d(_Conv, nn.Conv3d):
    """``nn.Conv3d`` computed under ``self.policy``. Example: ``nx.Conv3d(4, 8, 3)``."""


_SWAP = {nn.Linear: Linear, nn.Conv1d: Conv1d, nn.Conv2d: Conv2d, nn.Conv3d: Conv3d}


def convert_to_policy(module, policy=None, skip=None):
    """Turn every ``nn.Linear`` / ``nn.Conv1d..3d`` in ``module`` (itself included) into its
    policy version, in place, and return ``module``.

    The layers keep their parameters (the same objects, so an optimizer built before still
    holds them), buffers, hooks and state_dict keys; only the computation changes. ``policy``
    (a :class:`Policy`, a preset name or None = follow :func:`autocast`) is set on each;
    ``skip(name, layer)`` returning True leaves a layer as it is (e.g. the LM head). Exact types
    only: subclasses of those layers may compute something else and are left alone.

    Example::

        nx.convert_to_policy(model, skip=lambda name, m: name == "head")
    """
    if policy is not None:
        _policy(policy, "convert_to_policy")  # validate now, not at the first forward
    for name, m in module.named_modules():
        target = _SWAP.get(type(m))
        if target is None or (skip is not None and skip(name, m)):
            continue
        m.__class__ = target  # adds behaviour only: no new state to initialise
        m.policy = policy
    return module
