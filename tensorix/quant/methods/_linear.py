"""Weight-and-activation quantization of linear layers (W8A8, W4A4, FP8, MX): the layer that
quantizes its input on the fly, and the flow that swaps it in for each ``nn.Linear``.

:class:`ActQuantLinear` computes ``fq(T(x)) @ Wq^T + b``: T is an optional per-channel
division by smoothing scales (SmoothQuant) and/or an orthogonal Hadamard rotation (QuaRot /
APEX4), ``fq`` fake-quantizes activations per the scheme (dynamic, or with a static scale
from calibration), and ``Wq`` is the weight already transformed the matching way (``W diag(s)``,
``W R``) and quantize-dequantized, so that without quantization the layer is the original one.

With symmetric int schemes of at most 8 bits on both sides (W8A8, W4A4, W6A6, ...), inference
runs the integer kernel instead: the layer's product goes through the dispatcher's GEMM hook
as a :class:`~tensorix.quant.gemm.IntGemm` on the weight's codes (int8 x int8 -> int32 per
group, then the rescale), equal to the simulation within float32 rounding (the bound in
:mod:`tensorix.quant.gemm`). Inputs that need gradients, and other schemes (fp8, MX), take
the fake-quantized path; ``ActQuantLinear.integer = False`` forces it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ... import nn
from ...autograd.dispatch import gemm_hook
from ...autograd.grad_mode import is_grad_enabled
from ...nn import functional as F
from ...tensor import _make
from ..flows import _replace
from ..gemm import IntGemm, IntWeight, int_path_supported
from ..quantizer import QScheme, dequantize, fake_quantize, qparams_from_range, quantize
from ._calib import as_batches, linear_layers, run_model
from ._grid import fake_quant_array
from .hadamard import HadamardRotation

__all__ = ["ActQuantLinear", "quantize_linears_", "token_scheme"]


def token_scheme(bits: int = 8, dtype: str = "int") -> QScheme:
    """Dynamic per-token activation scheme: one symmetric scale per row of (tokens, in)."""
    return QScheme(bits, True, "per_channel", axis=0, dtype=dtype)


def _fake_quant_act(x, scheme, scale):
    if scheme.granularity == "per_channel":  # per token: rows of the flattened input
        if scheme.axis != 0:
            raise ValueError("ActQuantLinear: a per_channel activation scheme means per token "
                             f"and needs axis=0, got axis={scheme.axis}")
        flat = x.reshape(-1, x.shape[-1])
        return fake_quantize(flat, scheme).reshape(x.shape)
    if scale is not None:
        return fake_quantize(x, scheme, scale, 0)
    return fake_quantize(x, scheme)


class ActQuantLinear(nn.Module):
    """A linear layer with quantized weights and activations: (*, in) -> (*, out).

    ``weight`` (out, in) is stored transformed and quantize-dequantized; ``smooth`` (in,) is
    the SmoothQuant divisor of the input; ``rotation`` a :class:`HadamardRotation` applied to
    the input; ``act_scheme`` the activations' :class:`~tensorix.quant.QScheme` (None: float
    activations). A per-tensor scheme is static once :meth:`observe` has seen calibration data
    (``act_scale`` set), dynamic otherwise.

    Example::

        layer = ActQuantLinear.from_linear(nn.Linear(256, 64), token_scheme(8),
                                           token_scheme(8))
        y = layer(x)                                   # x (..., 256) -> (..., 64)
    """

    integer = True  # inference with int schemes on both sides runs the integer kernel

    def __init__(self, weight, bias, act_scheme: QScheme | None, *, smooth=None,
                 rotation: HadamardRotation | None = None, weight_scheme: QScheme | None = None,
                 weight_qparams=None):
        super().__init__()
        self.weight_scheme = weight_scheme
        # a weight method's own grid (GPTQ's group scales), kept so the integer kernel takes
        # the weight's codes on that grid rather than from the weight's range again
        self.register_buffer("weight_scale", None if weight_qparams is None else
                             weight_qparams[0].detach())
        self.register_buffer("weight_zero_point", None if weight_qparams is None else
                             weight_qparams[1].detach())
        self.out_features, self.in_features = weight.shape
        self.weight = nn.Parameter(weight, requires_grad=False)
        self.bias = None if bias is None else nn.Parameter(bias.detach(), requires_grad=False)
        self.register_buffer("inv_smooth", None if smooth is None else _make(1.0 / smooth))
        self.rotation, self.act_scheme = rotation, act_scheme
        # the rotation is state (its signs and block), so a state_dict restores it
        self.register_buffer("rotation_signs", None if rotation is None else
                             _make(rotation.signs.astype(weight._data.dtype)))
        self.register_buffer("rotation_block", None if rotation is None else
                             _make(np.asarray(rotation.block, np.int64)))
        self._rotation_key = self._rotation_state()
        self.register_buffer("act_scale", None)
        self._observing, self._amax = False, None  # running max |T(x)| while observing

    @classmethod
    def from_linear(cls, linear, weight_scheme: QScheme | None, act_scheme: QScheme | None, *,
                    smooth=None, rotation: HadamardRotation | None = None,
                    weight_qparams=None):
        """Quantize ``linear``'s weight the way the input will be transformed: W diag(s),
        then W R, then ``weight_scheme`` (None: float weights) - on the weight's own range,
        or on ``weight_qparams`` ``(scale, zero_point)`` Tensors in compute_qparams' shapes
        (a weight method's grid, e.g. GPTQ's: its weight lies on it)."""
        w = linear.weight.detach()._data.astype("float64")
        if smooth is not None:
            w = w * smooth
        if rotation is not None:
            w = rotation.rotate(w)
        if weight_qparams is not None:
            s, z = weight_qparams
            w = dequantize(quantize(_make(w), s, z, weight_scheme), s, z, weight_scheme,
                           np.float64)._data
        elif weight_scheme is not None:
            w = fake_quant_array(w, weight_scheme)
        w = _make(w.astype(linear.weight._data.dtype))
        smooth = None if smooth is None else smooth.astype(linear.weight._data.dtype)
        return cls(w, linear.bias, act_scheme, smooth=smooth, rotation=rotation,
                   weight_scheme=weight_scheme, weight_qparams=weight_qparams)

    def transform(self, x):
        """T(x): the smoothing division and the rotation, before quantization."""
        if self.inv_smooth is not None:
            x = x * self.inv_smooth
        if self.rotation is not None:
            if not _same_state(self._rotation_state(), self._rotation_key):  # a load
                self.rotation = HadamardRotation.from_signs(
                    self.rotation_signs.detach().cpu().numpy(), self.rotation_block.item())
                self._rotation_key = self._rotation_state()
            x = self.rotation.rotate(x)
        return x

    def _rotation_state(self):
        t, b = self.rotation_signs, self.rotation_block
        return None if t is None else (t._data, t._version[0], b._data, b._version[0])

    def forward(self, x):
        x = self.transform(x)
        if self._observing:
            m = x.detach().abs().max()
            self._amax = m if self._amax is None else self._amax.maximum(m)
        elif self.act_scheme is not None:
            if self._integer_path(x):
                static = None if self.act_scale is None else (self.act_scale._data, 0)
                with gemm_hook(IntGemm(self.act_scheme, self.weight_scheme, self._int_weight(),
                                       static)):
                    return F.linear(x, self.weight, self.bias)
            x = _fake_quant_act(x, self.act_scheme, self.act_scale)
        return F.linear(x, self.weight, self.bias)

    def _integer_path(self, x) -> bool:
        return (self.integer and int_path_supported(self.act_scheme) and
                int_path_supported(self.weight_scheme) and
                not (is_grad_enabled() and (x.requires_grad or self.weight.requires_grad)))

    def _int_weight(self) -> IntWeight:
        # the stored weight is on the scheme's grid: quantizing it again gives its codes
        # exactly (and the scales to within float32 rounding); cached until it changes
        key = (self.weight._data, self.weight._version[0])
        cached = self.__dict__.get("_int_cache")
        if cached is None or cached[0] is not key[0] or cached[1] != key[1]:
            if self.weight_scale is None:
                w = IntWeight.from_float(self.weight.detach(), self.weight_scheme)
            else:
                s, z = self.weight_scale, self.weight_zero_point
                w = IntWeight.from_codes(quantize(self.weight.detach(), s, z,
                                                  self.weight_scheme)._data, s._data,
                                         self.weight_scheme)
            cached = (*key, w)
            self.__dict__["_int_cache"] = cached
        return cached[2]

    def observe(self, on: bool = True) -> None:
        """Start (or stop, setting the static per-tensor ``act_scale``) recording the range
        of the transformed input; activations stay in float while observing."""
        if on:
            self._observing, self._amax = True, None
            return
        self._observing = False
        if self._amax is None:
            raise ValueError("ActQuantLinear.observe(False): no input was observed; run "
                             "calibration data through the model first")
        amax = self._amax._data
        scale, _ = qparams_from_range(-amax, amax, self.act_scheme)
        self.act_scale, self._amax = _make(scale), None

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"act={self.act_scheme}, smooth={self.inv_smooth is not None}, "
                f"rotation={self.rotation}, static={self.act_scale is not None}")


def _same_state(a, b) -> bool:
    # the same buffer arrays (held, so not reused) at the same versions
    return a is b or (a is not None and b is not None and
                      all(x is y if i % 2 == 0 else x == y for i, (x, y) in enumerate(zip(a, b))))


def calibrate_static_(model, layers: dict, calibration, op: str) -> None:
    """Run ``calibration`` through ``model`` with ``layers`` (ActQuantLinear) observing, then
    freeze their static per-tensor activation scales."""
    batches = as_batches(calibration, op)
    for layer in layers.values():
        layer.observe(True)
    run_model(model, batches)
    for layer in layers.values():
        layer.observe(False)


def quantize_linears_(model, weight_scheme: QScheme | None, act_scheme: QScheme | None, *,
                      rotate: bool = False, calibration=None, smooth: dict | None = None,
                      seed: int = 0, skip=(), weight_qparams: dict | None = None) -> dict:
    """Swap every ``nn.Linear`` of ``model`` (but names in ``skip``) for an
    :class:`ActQuantLinear` with ``weight_scheme`` weights and ``act_scheme`` activations.

    ``rotate``: a random-sign Hadamard rotation of each layer's input (and weight), as in
    QuaRot; ``smooth``: ``{name: scales (in,)}`` SmoothQuant divisors; ``calibration``: model
    inputs that make a per-tensor ``act_scheme`` static (dynamic without);
    ``weight_qparams``: ``{name: (scale, zero_point)}`` grids of weights a method quantized
    (GPTQ). Returns ``{name: ActQuantLinear}``.

    Example::

        quantize_linears_(model, QScheme(4, True, "per_group", group_size=128),
                          QScheme(4, True, "per_group", group_size=128), rotate=True)
    """
    if act_scheme is not None and act_scheme.granularity == "per_channel":
        act_scheme = dataclasses.replace(act_scheme, axis=0)
    swapped = {}
    for i, (name, linear) in enumerate(linear_layers(model, skip).items()):
        rotation = HadamardRotation(linear.in_features, seed=seed + i) if rotate else None
        s = None if smooth is None else smooth[name]
        qp = None if weight_qparams is None else weight_qparams.get(name)
        swapped[name] = ActQuantLinear.from_linear(linear, weight_scheme, act_scheme, smooth=s,
                                                   rotation=rotation, weight_qparams=qp)
        _replace(model, name, swapped[name])
    if calibration is not None and act_scheme is not None and \
            act_scheme.granularity == "per_tensor":
        calibrate_static_(model, swapped, calibration, "quantize_linears_")
    return swapped
