"""Adapters for a frozen ``nn.Linear`` (parameter-efficient fine-tuning), with PEFT's names:
``base_layer``, ``r``, ``lora_alpha``, ``lora_dropout``, ``merge()``/``unmerge()``,
``merge_and_unload()``.

Each adapter adds ``scaling * dW`` to the frozen weight ``W0 (out, in)``:

* :class:`LoRALinear` (Hu et al. 2021, "LoRA", arXiv 2106.09685): ``dW = B A`` with
  ``A (r, in)`` Kaiming-uniform and ``B (out, r)`` zero, ``scaling = lora_alpha / r``;
* :class:`TeRALinear` (Gu et al. 2025, "TeRA: Vector-based Random Tensor Network for High-Rank
  Adaptation", arXiv 2509.03234): ``dW`` is the tensor of modes ``(out_1..out_d, in_1..in_d)``
  in Tucker form ``C x_1 (A_1 diag l_1) ... x_2d (A_2d diag l_2d)`` reshaped to ``(out, in)``;
  the core ``C (R,)*2d`` and factors ``A_k (I_k, R)`` are random and frozen (drawn from
  ``seed``, so every layer of one shape shares them), only the vectors ``l_k (R,)`` train:
  ``2 d R`` parameters for an update of matrix rank up to ``min(R^d, out, in)``;
* :class:`TLoRALinear` (tensor-train LoRA, Anjum et al. 2024, "Tensor Train Low-rank
  Approximation (TT-LoRA)", arXiv 2408.01008): ``dW`` is a TT-matrix whose trainable cores
  entangle the factorized input and output modes through the TT bonds; the last core starts
  at zero.

All start with ``dW = 0`` (the adapted model equals the base model before training).
"""

from __future__ import annotations

import math
import warnings

from ...autograd import no_grad
from ...nn import Dropout, Identity, Linear, Module, ParameterList, init
from ...nn import functional as F
from ...nn.parameter import Parameter
from ...ops.creation import ones
from ...ops.random import Generator, randn
from .._base import multi_mode_dot
from ._tt import TTLinear
from ._util import modes_for

__all__ = ["LoRALinear", "TeRALinear", "TLoRALinear", "apply_lora", "merge_and_unload",
           "ADAPTERS"]


class _Adapter(Module):
    """The frozen base layer, dropout, scaling and merging; subclasses give the update."""

    def __init__(self, op, base_layer, lora_dropout):
        super().__init__()
        if not isinstance(base_layer, Linear):
            raise TypeError(f"{op}: expected base_layer to be an nn.Linear, got "
                            f"{type(base_layer).__name__}")
        if not 0 <= lora_dropout < 1:
            raise ValueError(f"{op}: lora_dropout must be in [0, 1), got {lora_dropout!r}")
        self.base_layer = base_layer
        for p in base_layer.parameters():
            p.requires_grad_(False)
        self.in_features, self.out_features = base_layer.in_features, base_layer.out_features
        self.lora_dropout = Dropout(lora_dropout) if lora_dropout else Identity()
        self.merged = False

    def _factory(self):
        w = self.base_layer.weight
        return dict(device=w.device, dtype=w.dtype)

    def delta_weight(self):
        """``scaling * dW`` as a dense ``(out_features, in_features)`` matrix."""
        raise NotImplementedError

    def _delta(self, x):
        """``x @ (scaling * dW).T`` for the (dropped-out) input, the cheapest way."""
        return F.linear(x, self.delta_weight())

    def _fold(self, merge):
        # PEFT warns (and does nothing) on a second merge or an unmerge of an unmerged layer
        if self.merged == merge:
            state = "merged" if merge else "unmerged"
            warnings.warn(f"{type(self).__name__}: already {state}; nothing to do",
                          UserWarning, stacklevel=3)
            return
        with no_grad():
            self.base_layer.weight.add_(self.delta_weight() * (1 if merge else -1))
        self.merged = merge

    def merge(self):
        """Fold the update into the base weight (inference without the adapter's cost)."""
        self._fold(True)

    def unmerge(self):
        """Take the update back out of the base weight."""
        self._fold(False)

    def merge_and_unload(self):
        """The base ``nn.Linear`` with the update merged in (the adapter discarded)."""
        if not self.merged:
            self.merge()
        return self.base_layer

    def forward(self, input):
        out = self.base_layer(input)
        if self.merged:
            return out
        return out + self._delta(self.lora_dropout(input))


class LoRALinear(_Adapter):
    """``y = base_layer(x) + (lora_alpha / r) * lora_B(lora_A(dropout(x)))``:
    (*, in_features) -> (*, out_features), the base layer frozen.

    ``lora_A (r, in)`` starts Kaiming-uniform (a = sqrt(5)) and ``lora_B (out, r)`` at zero,
    as in PEFT; ``r (in + out)`` trainable parameters.

    Example::

        layer = LoRALinear(nn.Linear(64, 32), r=4, lora_alpha=8)
        layer(tx.randn(5, 64)).shape      # (5, 32); equals the base layer until trained
        merged = layer.merge_and_unload() # an nn.Linear with W0 + 2 * B @ A
    """

    def __init__(self, base_layer, r=8, lora_alpha=8, lora_dropout=0.0):
        super().__init__("LoRALinear", base_layer, lora_dropout)
        if not isinstance(r, int) or r < 1:
            raise ValueError(f"LoRALinear: r must be a positive int, got {r!r}")
        self.r, self.lora_alpha, self.scaling = r, lora_alpha, lora_alpha / r
        self.lora_A = Linear(self.in_features, r, bias=False, **self._factory())
        self.lora_B = Linear(r, self.out_features, bias=False, **self._factory())
        self.reset_lora_parameters()

    def reset_lora_parameters(self):
        init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        init.zeros_(self.lora_B.weight)

    def delta_weight(self):
        return (self.lora_B.weight @ self.lora_A.weight) * self.scaling

    def _delta(self, x):
        return self.lora_B(self.lora_A(x)) * self.scaling

    def extra_repr(self):
        return f"r={self.r}, lora_alpha={self.lora_alpha}, merged={self.merged}"


class TeRALinear(_Adapter):
    """TeRA: ``y = base_layer(x) + alpha * x @ dW.T`` with ``dW`` a Tucker tensor network of
    frozen random core and factors and trainable diagonal scalings (see the module docstring):
    (*, in_features) -> (*, out_features).

    ``out_modes``/``in_modes``: ``d`` factors each (default: balanced); ``r``: the Tucker
    rank of every mode (at most the mode size). The frozen parts are buffers drawn from
    ``seed`` and scaled so that with all scalings 1, ``dW`` has the entry variance of a fresh
    ``nn.Linear`` (``1 / (3 in)``); the first output mode's scaling starts at 0.
    Trainable: ``r * 2d`` entries.

    Example: ``TeRALinear(nn.Linear(256, 256), r=16, d=2)`` trains 64 numbers for an update of
    matrix rank up to 256 (LoRA needs 512 per unit of rank).
    """

    def __init__(self, base_layer, r=8, alpha=1.0, lora_dropout=0.0, out_modes=None,
                 in_modes=None, d=2, seed=0):
        super().__init__("TeRALinear", base_layer, lora_dropout)
        op = "TeRALinear"
        self.out_modes = modes_for(op, "out_modes", self.out_features, out_modes, d)
        self.in_modes = modes_for(op, "in_modes", self.in_features, in_modes, d)
        sizes = self.out_modes + self.in_modes
        if not isinstance(r, int) or not 1 <= r <= min(sizes):
            raise ValueError(f"{op}: r must be an int in [1, {min(sizes)}] (the smallest mode "
                             f"of {sizes}), got {r!r}")
        self.r, self.alpha, self.scaling, self.seed = r, alpha, alpha, seed
        gen = Generator()
        gen.manual_seed(int(seed))
        fac = self._factory()
        # entry variance of dW: r^(2d) * prod_k var(A_k) = 1 / (3 in) with var(A_k) = s^2
        s = (1 / (3 * self.in_features)) ** (1 / (4 * d)) / math.sqrt(r)
        self.register_buffer("core", randn(*(r,) * (2 * d), generator=gen,
                                           dtype=fac["dtype"]).to(fac["device"]))
        for k, size in enumerate(sizes):
            self.register_buffer(f"factor_{k}", (randn(size, r, generator=gen,
                                                       dtype=fac["dtype"]) * s).to(
                fac["device"]))
        # the first output mode's scaling starts at 0 so that dW = 0 (LoRA's B = 0)
        self.scalings = ParameterList([Parameter(ones(r, **fac) * (k > 0))
                                       for k in range(2 * d)])

    def delta_weight(self):
        n = len(self.out_modes) + len(self.in_modes)
        factors = [getattr(self, f"factor_{k}") * self.scalings[k] for k in range(n)]
        full = multi_mode_dot(self.core, factors)
        return full.reshape(self.out_features, self.in_features) * self.scaling

    def extra_repr(self):
        return (f"r={self.r}, out_modes={self.out_modes}, in_modes={self.in_modes}, "
                f"alpha={self.alpha}, merged={self.merged}")


class TLoRALinear(_Adapter):
    """Tensor-train LoRA: ``y = base_layer(x) + (lora_alpha / r) * tt(dropout(x))`` with
    ``tt`` a bias-free :class:`TTLinear` (cores ``(r_k, out_k, in_k, r_k+1)``, trainable)
    whose last core starts at zero: (*, in_features) -> (*, out_features). The update is
    applied core by core, never formed, and stores ``sum_k r_k out_k in_k r_k+1`` numbers.

    Example: ``TLoRALinear(nn.Linear(256, 256), r=4, d=3)`` (modes (8, 8, 4) each side).
    """

    def __init__(self, base_layer, r=4, lora_alpha=4, lora_dropout=0.0, out_modes=None,
                 in_modes=None, d=3):
        super().__init__("TLoRALinear", base_layer, lora_dropout)
        if not isinstance(r, int) or r < 1:
            raise ValueError(f"TLoRALinear: r (the TT rank bound) must be a positive int, got "
                             f"{r!r}")
        self.r, self.lora_alpha, self.scaling = r, lora_alpha, lora_alpha / r
        self.tt = TTLinear(self.in_features, self.out_features, r, in_modes, out_modes, d,
                           bias=False, **self._factory())
        init.zeros_(self.tt.cores[len(self.tt.cores) - 1])

    def delta_weight(self):
        return self.tt.to_dense() * self.scaling

    def _delta(self, x):
        return self.tt(x) * self.scaling

    def extra_repr(self):
        return f"rank={self.tt.rank}, lora_alpha={self.lora_alpha}, merged={self.merged}"


ADAPTERS = {"lora": LoRALinear, "tera": TeRALinear, "tlora": TLoRALinear}


def _matches(name, targets):
    return targets is None or any(name == t or name.endswith("." + t) for t in targets)


def apply_lora(model, adapter="lora", target_modules=None, **kwargs):
    """Wrap, in place, every ``nn.Linear`` of ``model`` whose qualified name is or ends with one
    of ``target_modules`` (all of them for None) in an adapter (``'lora'``, ``'tera'``,
    ``'tlora'``, constructed with ``kwargs``), and freeze every other parameter, as PEFT's
    ``get_peft_model``. Returns the list of wrapped names.

    Example: ``apply_lora(model, "lora", target_modules=["q_proj", "v_proj"], r=8)``.
    """
    if adapter not in ADAPTERS:
        raise ValueError(f"apply_lora: adapter must be one of {sorted(ADAPTERS)}, got "
                         f"{adapter!r}")
    for p in model.parameters():
        p.requires_grad_(False)
    wrapped = []
    for name, parent in list(model.named_modules()):
        if isinstance(parent, _Adapter):
            continue
        for child_name, child in list(parent.named_children()):
            full = f"{name}.{child_name}" if name else child_name
            if type(child) is Linear and _matches(full, target_modules):
                setattr(parent, child_name, ADAPTERS[adapter](child, **kwargs))
                wrapped.append(full)
    if not wrapped:
        raise ValueError(f"apply_lora: no nn.Linear of the model matches target_modules="
                         f"{target_modules!r}")
    return wrapped


def merge_and_unload(model):
    """Replace, in place, every adapter of ``model`` by its base layer with the update merged;
    returns ``model``. Example: ``merge_and_unload(model)`` after fine-tuning."""
    for _, parent in list(model.named_modules()):
        for child_name, child in list(parent.named_children()):
            if isinstance(child, _Adapter):
                setattr(parent, child_name, child.merge_and_unload())
    return model
