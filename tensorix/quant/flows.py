"""Flows that turn a float model into a quantized one, in place of its layers.

* torchao's API: ``quantize_(model, config)`` with :class:`Int8WeightOnlyConfig`,
  :class:`Int4WeightOnlyConfig` (``group_size``), :class:`Int8DynamicActivationInt8WeightConfig`,
  or any :class:`QuantConfig` (a weight scheme and an optional activation scheme). By default
  every ``nn.Linear`` is replaced; ``filter_fn(module, fqn)`` picks others (Conv2d, Embedding).
* torch.ao's names: ``quantize_dynamic`` (int8 weights, activations quantized per call);
  ``prepare`` -> run calibration data -> ``convert`` (static int8: activation ranges from
  observers); ``prepare_qat`` -> train -> ``convert`` (fake quantization in training, LSQ with
  ``learnable=True``).
* ``save_quantized`` / ``load_quantized``: safetensors files (through ``tensorix.io``) holding
  the codes, scales and zero points, with each layer's scheme in the file's metadata, so that a
  float model of the same architecture can be rebuilt quantized.

Example::

    >>> model = tensorix.nn.Sequential(tensorix.nn.Linear(256, 64), tensorix.nn.ReLU())
    >>> quantize_(model, Int4WeightOnlyConfig(group_size=64))
    >>> model[0]
    QuantizedLinear(in_features=256, out_features=64, bias=True, weight=int4 affine per_group(64))
"""

from __future__ import annotations

import copy
import dataclasses
import json

from .. import nn
from .layers import QUANTIZED_FORMS
from .observers import OBSERVERS
from .qat import LearnableFakeQuantize, QATConv2d, QATLinear
from .quantizer import QScheme

__all__ = ["QuantConfig", "Int8WeightOnlyConfig", "Int4WeightOnlyConfig",
           "Int8DynamicActivationInt8WeightConfig", "StaticConfig", "QATConfig", "quantize_",
           "quantize_dynamic", "prepare", "convert", "prepare_qat", "save_quantized",
           "load_quantized"]


@dataclasses.dataclass(frozen=True)
class QuantConfig:
    """What ``quantize_`` does to a layer: its ``weight`` scheme and an optional
    ``activation`` scheme (quantized per call)."""

    weight: QScheme
    activation: QScheme | None = None


class Int8WeightOnlyConfig(QuantConfig):
    """int8 symmetric weights per output channel (or per group), float activations."""

    def __init__(self, group_size=None):
        w = QScheme(8, True, "per_channel", axis=0) if group_size is None else \
            QScheme(8, True, "per_group", group_size=group_size)
        super().__init__(w)


class Int4WeightOnlyConfig(QuantConfig):
    """int4 affine weights in groups of ``group_size`` along the input dimension, packed two
    per byte; float activations."""

    def __init__(self, group_size=128):
        super().__init__(QScheme(4, False, "per_group", group_size=group_size))


class Int8DynamicActivationInt8WeightConfig(QuantConfig):
    """int8 symmetric weights per output channel and int8 symmetric activations per token,
    quantized per call; the product runs in the exact integer GEMM."""

    def __init__(self):
        super().__init__(QScheme(8, True, "per_channel", axis=0),
                         QScheme(8, True, "per_channel", axis=0))


@dataclasses.dataclass(frozen=True)
class StaticConfig:
    """``prepare``'s config: weight and activation schemes and the activation observer
    (``"minmax"``, ``"moving_average"``, ``"histogram"``, ``"mse"`` or a class)."""

    weight: QScheme = QScheme(8, True, "per_channel", axis=0)
    activation: QScheme = QScheme(8, False)
    observer: object = "minmax"


@dataclasses.dataclass(frozen=True)
class QATConfig:
    """``prepare_qat``'s config; ``learnable=True`` trains LSQ scales."""

    weight: QScheme = QScheme(8, True, "per_channel", axis=0)
    activation: QScheme | None = QScheme(8, False)
    learnable: bool = False


def _kinds():
    return ", ".join(t.__name__ for t in QUANTIZED_FORMS)


def _replace(model, fqn, new):
    parent, _, name = fqn.rpartition(".")
    owner = model.get_submodule(parent) if parent else model
    setattr(owner, name, new)


def _targets(model, select, op):
    """(fqn, module) pairs chosen by ``select``; a chosen kind with no quantized form raises."""
    out = []
    for fqn, mod in list(model.named_modules()):
        if not fqn or not select(mod, fqn):
            continue
        if type(mod) not in QUANTIZED_FORMS:
            raise ValueError(f"{op}(): layer {fqn!r} ({type(mod).__name__}) has no quantized "
                             f"form; quantizable kinds: {_kinds()}")
        out.append((fqn, mod))
    return out


def _is_linear(mod, fqn):
    return type(mod) is nn.Linear


def quantize_(model, config, filter_fn=None, device=None):
    """Replace the layers of ``model`` chosen by ``filter_fn(module, fqn)`` (default: every
    ``nn.Linear``) by their quantized forms under ``config``, in place (torchao's
    ``quantize_``). Returns None. Example: ``quantize_(model, Int8WeightOnlyConfig())``."""
    if not isinstance(config, QuantConfig):
        raise TypeError(f"quantize_(): argument 'config' must be a QuantConfig (e.g. "
                        f"Int8WeightOnlyConfig()), got {type(config).__name__}")
    for fqn, mod in _targets(model, filter_fn or _is_linear, "quantize_"):
        try:
            new = QUANTIZED_FORMS[type(mod)].from_float(mod, config.weight, config.activation)
        except ValueError as e:  # name the layer: a model has many
            raise ValueError(f"quantize_(): layer {fqn!r}: {e}") from None
        _replace(model, fqn, new)


def quantize_dynamic(model, qconfig_spec=None, dtype="qint8", inplace=False):
    """torch.ao's dynamic quantization: the layers of the types in ``qconfig_spec`` (default
    ``{nn.Linear}``) get int8 symmetric per-channel weights and int8 affine per-tensor
    activations computed per call. Returns the (copied unless ``inplace``) model.
    Example: ``qmodel = quantize_dynamic(model, {tensorix.nn.Linear})``."""
    if str(dtype).rpartition(".")[2] not in ("qint8", "int8"):
        raise ValueError(f"quantize_dynamic(): only dtype qint8 is supported, got {dtype}")
    spec = set(qconfig_spec) if qconfig_spec is not None else {nn.Linear}
    for t in spec:
        if t not in (nn.Linear,):
            name = getattr(t, "__name__", t)
            raise ValueError(f"quantize_dynamic(): layer kind {name} has no dynamically "
                             "quantized form; supported: Linear")
    model = model if inplace else copy.deepcopy(model)
    cfg = QuantConfig(QScheme(8, True, "per_channel", axis=0), QScheme(8, False))
    quantize_(model, cfg, lambda m, fqn: type(m) in spec)
    return model


class _Observed(nn.Module):
    """A float layer and the observer of its input (``prepare``'s wrapper)."""

    def __init__(self, mod, observer):
        super().__init__()
        self.module, self.activation_post_process = mod, observer

    def forward(self, x):
        return self.module(self.activation_post_process(x))


def _observer_cls(obs):
    if isinstance(obs, str):
        if obs not in OBSERVERS:
            raise ValueError(f"prepare(): unknown observer {obs!r}; expected one of "
                             f"{sorted(OBSERVERS)}")
        return OBSERVERS[obs]
    return obs


def _is_static_kind(mod, fqn):
    return type(mod) in (nn.Linear, nn.Conv2d)


def prepare(model, config=None, inplace=False, filter_fn=None):
    """Static quantization, step 1: wrap each ``nn.Linear``/``nn.Conv2d`` (or the layers
    ``filter_fn`` picks) with an observer of its input. Run calibration batches through the
    returned model, then :func:`convert`. Example: ``m = prepare(model); m(x); convert(m)``.
    """
    config = config or StaticConfig()
    model = model if inplace else copy.deepcopy(model)
    obs = _observer_cls(config.observer)
    for fqn, mod in _targets(model, filter_fn or _is_static_kind, "prepare"):
        if type(mod) is nn.Embedding:
            raise ValueError(f"prepare(): layer {fqn!r} (Embedding) takes indices; quantize "
                             "it weight-only with quantize_")
        wrapped = _Observed(mod, obs(config.activation))
        wrapped.qconfig = config
        _replace(model, fqn, wrapped)
    return model


def prepare_qat(model, config=None, inplace=False, filter_fn=None):
    """Quantization-aware training: each ``nn.Linear``/``nn.Conv2d`` becomes a QAT layer
    that fake-quantizes its weight and input (observer ranges, or LSQ scales with
    ``QATConfig(learnable=True)``). Train, then :func:`convert`."""
    config = config or QATConfig()
    model = model if inplace else copy.deepcopy(model)
    for fqn, mod in _targets(model, filter_fn or _is_static_kind, "prepare_qat"):
        if type(mod) is nn.Embedding:
            raise ValueError(f"prepare_qat(): layer {fqn!r} (Embedding) has no QAT form")
        cls = QATLinear if type(mod) is nn.Linear else QATConv2d
        _replace(model, fqn, cls(mod, config.weight, config.activation, config.learnable))
    return model


def _convert_one(fqn, mod):
    if isinstance(mod, _Observed):
        cfg = mod.qconfig
        try:
            qparams = mod.activation_post_process.calculate_qparams()
        except ValueError:
            raise ValueError(f"convert(): calibration saw no data for layer {fqn!r}; run "
                             "calibration batches through the prepared model first") from None
        float_mod = mod.module
        return QUANTIZED_FORMS[type(float_mod)].from_float(float_mod, cfg.weight,
                                                           cfg.activation, qparams)
    if isinstance(mod, (QATLinear, QATConv2d)):
        act = mod.activation_post_process
        qparams = None
        if act is not None:
            try:
                qparams = act.calculate_qparams()
            except ValueError:
                raise ValueError(f"convert(): QAT layer {fqn!r} never ran; train it (or run "
                                 "data through it) first") from None
        w_fq = mod.weight_fake_quant
        if isinstance(mod, QATLinear):
            float_mod = nn.Linear(mod.in_features, mod.out_features, mod.bias is not None)
            float_mod.weight, float_mod.bias = mod.weight, mod.bias
        else:
            float_mod = mod._float
        learned = None  # LSQ: the trained weight scale; observers: the weight's own range
        if isinstance(w_fq, LearnableFakeQuantize):
            if w_fq.scale is None:
                w_fq(mod.weight.detach())  # initialises the scale if training never ran
            learned = w_fq.calculate_qparams()
        return QUANTIZED_FORMS[type(float_mod)].from_float(
            float_mod, w_fq.scheme, act.scheme if act is not None else None, qparams,
            weight_qparams=learned)
    return None


def convert(model, inplace=False):
    """Static quantization, step 2 (and the end of QAT): replace each observed or QAT layer by
    its quantized form with the calibrated activation qparams. A layer whose observer saw no
    data raises ValueError naming it."""
    model = model if inplace else copy.deepcopy(model)
    for fqn, mod in list(model.named_modules()):
        if fqn:
            new = _convert_one(fqn, mod)
            if new is not None:
                _replace(model, fqn, new)
    return model


# -- files -----------------------------------------------------------------------------------
def _layer_meta(mod):
    s = mod.weight_scheme
    meta = {"kind": type(mod).__name__, "weight": dataclasses.asdict(s)}
    if getattr(mod, "act_scheme", None) is not None:
        meta["activation"] = dataclasses.asdict(mod.act_scheme)
    return meta


def save_quantized(model, path):
    """Write ``model``'s state (codes, scales, zero points, float parameters) to a safetensors
    file, with each quantized layer's schemes in the metadata."""
    from ..io import write_safetensors

    layers = {fqn: _layer_meta(m) for fqn, m in model.named_modules()
              if type(m) in QUANTIZED_FORMS.values()}
    state = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    write_safetensors(path, state, {"tensorix.quant": json.dumps(layers)})


def load_quantized(model, path):
    """Quantize the float ``model`` (same architecture) as recorded in ``path`` and load the
    saved state into it; returns ``model``."""
    from ..io import read_safetensors
    from ..tensor import _make

    arrays, file_meta = read_safetensors(path)
    if "tensorix.quant" not in file_meta:
        raise ValueError(f"load_quantized(): {path} holds no tensorix.quant metadata (not "
                         "written by save_quantized)")
    meta = json.loads(file_meta["tensorix.quant"])
    for fqn, m in meta.items():
        mod = model.get_submodule(fqn)
        w = QScheme(**m["weight"])
        act = QScheme(**m["activation"]) if "activation" in m else None
        _replace(model, fqn, QUANTIZED_FORMS[type(mod)].from_float(mod, w, act))
    state = {k: _make(a) for k, a in arrays.items()}
    for fqn in meta:  # static layers: their act qparams are buffers to receive
        mod = model.get_submodule(fqn)
        if f"{fqn}.act_scale" in state:
            mod.register_buffer("act_scale", state[f"{fqn}.act_scale"])
            mod.register_buffer("act_zero_point", state[f"{fqn}.act_zero_point"])
    model.load_state_dict(state)
    return model
