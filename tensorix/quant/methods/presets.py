"""Weight-and-activation presets of recent serving papers, as flows over
:func:`~tensorix.quant.methods.quantize_linears_` (every layer an ActQuantLinear, whose
inference runs the integer kernel) plus an optional low-bit KV cache:

=================  ==============================================================================
``comet-w4a4kv4``  COMET (Liu et al. 2024, arXiv 2410.12168): W4A4 with a 4-bit KV cache.
                   Weights and activations symmetric int4 in groups of 128 along K (per token
                   for activations); keys and values asymmetric int4 per token and head (groups
                   of ``head_dim``), stored packed two per byte (``IntKVCache``'s store).
                   COMET's mixed 4/8-bit activation blocks for outlier channels are not
                   modelled: every activation block is 4-bit.
``odyssey-w4a8``   OdysseyLLM (Li et al. 2023, arXiv 2311.09550): W4A8, symmetric int4 weights
                   per output channel, int8 activations per token (dynamic).
``flexq-w6a6``     FlexQ (2025, arXiv 2508.04405): INT6 weights and activations, symmetric, in
                   groups of 128 along K (per token for activations).
``flexq-w6a8``     FlexQ's W6A8 layers: INT6 weights in groups of 128, int8 per-token
                   activations.
=================  ==============================================================================

Weights are rounded to nearest without data; with ``calibration`` (model inputs) they are
GPTQ-quantized on the preset's weight grid first, layer after layer in the partly quantized
model (:func:`~tensorix.quant.methods.gptq_quantize`, as the W4A8 / W4A4 serving papers
prepare their weights), and each layer's integer kernel runs on GPTQ's codes and scales.
"""

from __future__ import annotations

import dataclasses

from ... import nn
from ...autograd.grad_mode import is_grad_enabled
from ...ops.shape import cat
from ..flows import _replace
from ..quantizer import QScheme, fake_quantize
from ._calib import linear_layers
from ._linear import quantize_linears_, token_scheme
from .kvcache import int_kv_encode

__all__ = ["PRESETS", "Preset", "quantize_preset_", "kv_quant_"]


@dataclasses.dataclass(frozen=True)
class Preset:
    """One preset: ``weight`` and ``act`` schemes of every linear layer, and ``kv_bits`` for
    keys and values (None: float). Example: ``PRESETS["odyssey-w4a8"].weight.bits`` is 4."""

    weight: QScheme
    act: QScheme
    kv_bits: int | None = None
    paper: str = ""


def _grouped(bits, group):
    return QScheme(bits, True, "per_group", group_size=group)


PRESETS = {
    "comet-w4a4kv4": Preset(_grouped(4, 128), _grouped(4, 128), 4, "COMET"),
    "odyssey-w4a8": Preset(QScheme(4, True, "per_channel", axis=0), token_scheme(8), None,
                           "OdysseyLLM"),
    "flexq-w6a6": Preset(_grouped(6, 128), _grouped(6, 128), None, "FlexQ"),
    "flexq-w6a8": Preset(_grouped(6, 128), token_scheme(8), None, "FlexQ"),
}


def _fit(scheme: QScheme, k: int, group_size: int | None) -> QScheme:
    # the preset's group size, or the caller's; a layer narrower than the group is one group
    if scheme.granularity != "per_group":
        return scheme
    g = group_size or scheme.group_size
    return dataclasses.replace(scheme, group_size=min(g, k))


class _KVQuantHook:
    """A forward hook on a fused ``qkv`` linear: the key and value thirds of its output go
    through the integer KV store (:func:`~.kvcache.int_kv_encode`: ``bits``-bit asymmetric
    codes per token and head, packed two per byte at <= 4 bits) and are read back, as a KV
    cache holds them; the queries stay as computed. ``nbytes`` / ``float_nbytes``: the last
    call's store and the float32 keys and values it replaced. When the output needs a gradient
    (training through the hook) it is ``fake_quantize`` instead: the same values, with the
    straight-through gradient."""

    def __init__(self, bits: int, head_dim: int):
        self.bits, self.head_dim = bits, head_dim
        self.nbytes = self.float_nbytes = 0

    def __call__(self, module, args, out):
        d = out.shape[-1] // 3
        kv = out[..., d:]
        if kv.requires_grad and is_grad_enabled():
            scheme = QScheme(self.bits, False, "per_group", group_size=self.head_dim)
            return cat([out[..., :d], fake_quantize(kv, scheme)], -1)
        store = int_kv_encode(kv, self.bits, self.head_dim)
        self.nbytes, self.float_nbytes = store.nbytes, kv.numel() * 4
        return cat([out[..., :d], store.dequantize()], -1)


def kv_quant_(model, bits: int = 4, *, head_dim: int, names=None) -> dict:
    """Quantize the keys and values that the fused ``qkv`` linears of ``model`` produce (the
    layers named in ``names``, default every linear whose name ends in ``qkv``), as a
    ``bits``-bit KV cache holds them: asymmetric int, one scale and zero point per token and
    head (``head_dim`` values). Returns ``{name: hook handle}``; ``handle.remove()`` undoes it.

    Example: ``kv_quant_(gpt, 4, head_dim=64)``.
    """
    mods = dict(model.named_modules())
    names = names if names is not None else [n for n in mods if n.rsplit(".", 1)[-1] == "qkv"]
    if not names:
        raise ValueError("kv_quant_(): the model has no fused 'qkv' layer; pass names=[...]")
    handles = {}
    for n in names:
        m = mods.get(n)
        width = getattr(m, "out_features", None)
        if width is None or width % 3 or (width // 3) % head_dim:
            raise ValueError(f"kv_quant_(): {n!r} must be a linear layer with 3 * heads * "
                             f"{head_dim} outputs (q, k, v), got {type(m).__name__} with "
                             f"{width} outputs")
        handles[n] = m.register_forward_hook(_KVQuantHook(bits, head_dim))
    return handles


def _gptq_grids(model, calibration, weight: QScheme, skip, group_size) -> dict:
    # GPTQ on each layer's fitted weight scheme, in place and in module order (sequential_):
    # {name: (scale, zero_point)} of the grid each layer's weight now lies on
    from ._calib import sequential_, set_weight
    from .gptq import _qparams_shaped, gptq_quantize

    grids = {}

    def quantize_layer(name, layer, stats):
        scheme = _fit(weight, layer.in_features, group_size)
        r = gptq_quantize(layer.weight._data, stats.hessian, scheme)
        set_weight(layer, r.weight)
        grids[name] = _qparams_shaped(r, r.weight, scheme)
        return r

    sequential_(model, calibration, linear_layers(model, skip), quantize_layer,
                op="quantize_preset_()", hessian=True)
    return grids


def quantize_preset_(model, preset: str, *, skip=(), group_size: int | None = None,
                     head_dim: int | None = None, calibration=None) -> dict:
    """Quantize ``model`` in place with one of ``PRESETS`` (``"comet-w4a4kv4"``,
    ``"odyssey-w4a8"``, ``"flexq-w6a6"``, ``"flexq-w6a8"``): every ``nn.Linear`` but those in
    ``skip`` becomes an ActQuantLinear with the preset's weight and activation schemes
    (``group_size`` overrides the preset's 128; layers narrower than a group are one group),
    and with a KV-cache preset, the fused ``qkv`` layers' keys and values are quantized
    (``head_dim`` required). ``calibration``: model inputs (e.g. a list of (B, T) token id
    batches); with it the weights are GPTQ-quantized on the preset's grid (round to nearest
    without). Returns ``{name: ActQuantLinear}``.

    Example::

        quantize_preset_(gpt, "comet-w4a4kv4", skip=("head",), head_dim=64,
                         calibration=[ids[:8], ids[8:16]])
    """
    if preset not in PRESETS:
        raise ValueError(f"quantize_preset_(): unknown preset {preset!r}; expected one of "
                         f"{sorted(PRESETS)}")
    p = PRESETS[preset]
    if p.kv_bits is not None and head_dim is None:
        raise ValueError(f"quantize_preset_(): preset {preset!r} quantizes the KV cache and "
                         "needs head_dim")
    grids = {} if calibration is None else \
        _gptq_grids(model, calibration, p.weight, skip, group_size)
    swapped = {}
    for name, lin in linear_layers(model, skip).items():
        k = lin.in_features
        one = nn.Sequential()  # quantize_linears_ on this layer alone, with fitted groups
        one.add_module("layer", lin)
        swapped[name] = quantize_linears_(one, _fit(p.weight, k, group_size),
                                          _fit(p.act, k, group_size),
                                          weight_qparams={"layer": grids[name]} if grids
                                          else None)["layer"]
        _replace(model, name, swapped[name])
    if p.kv_bits is not None:
        kv_quant_(model, p.kv_bits, head_dim=head_dim,
                  names=[n for n in swapped if n.rsplit(".", 1)[-1] == "qkv"])
    return swapped
