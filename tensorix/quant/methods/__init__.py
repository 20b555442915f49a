"""Post-training quantization methods for LLM-style models: GPTQ, AWQ, SmoothQuant and
Hadamard-rotation W4A4, built on the core quantizer (:mod:`tensorix.quant.quantizer`).

The ``*_`` functions quantize a model in place, from calibration batches of model inputs
where the method needs them, and return per-layer results; the per-weight functions
(``gptq_quantize``, ``awq_search``, ``smooth_scales``) work on backend arrays. See README.md
here and docs/quant.md.
"""

from ._calib import InputStats, collect_input_stats, linear_layers
from ._grid import weight_scheme
from ._linear import ActQuantLinear, quantize_linears_, token_scheme
from .awq import AWQResult, awq_, awq_clip, awq_fold_, awq_scales, awq_search
from .dkm import dkm_cluster
from .gptq import GPTQResult, gptq_, gptq_quantize
from .hadamard import HadamardRotation, fwht, hadamard_matrix
from .kvcache import BFPKVCache, IntKVCache, int_kv_encode
from .mixed import MixedPrecisionPlan, layer_sensitivity, mixed_precision_search
from .presets import PRESETS, Preset, kv_quant_, quantize_preset_
from .recurrent import LEVELS, binarize, lowbit_recurrent_, quaternarize, ternarize
from .rotation import w4a4_, w4a4_scheme
from .smoothquant import smooth_scales, smoothquant_

__all__ = ["InputStats", "collect_input_stats", "linear_layers", "weight_scheme",
           "ActQuantLinear", "quantize_linears_", "token_scheme", "AWQResult", "awq_",
           "awq_scales", "awq_search", "awq_clip", "GPTQResult", "gptq_", "gptq_quantize",
           "HadamardRotation", "fwht", "hadamard_matrix", "w4a4_", "w4a4_scheme",
           "smooth_scales", "smoothquant_", "MixedPrecisionPlan", "layer_sensitivity",
           "mixed_precision_search", "LEVELS", "binarize", "ternarize", "quaternarize",
           "lowbit_recurrent_", "BFPKVCache", "dkm_cluster", "awq_fold_", "PRESETS", "Preset",
           "quantize_preset_", "kv_quant_", "IntKVCache", "int_kv_encode"]
