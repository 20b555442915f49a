"""Low-precision numerics: element and block formats, exact casts, stochastic rounding, packed
storage, and low-precision arithmetic (precision-policy matmul, L-Mul, Ozaki GEMM, unit
scaling, 16-bit optimizers). See README.md here and docs/numerics.md."""

from .._threads import get_num_threads, set_num_threads
from ..formats import FORMATS, ROUNDING_MODES, FormatSpec, get_format, make_format
from .casting import cast, decode, encode, f32_bits, quantize
from .layers import Conv1d, Conv2d, Conv3d, Linear, conv1d, conv2d, conv3d, convert_to_policy
from .lmul import lmul, lmul_attention, lmul_matmul, lmul_offset_bits
from .mx import (
    MX_ELEMENTS,
    MXArray,
    e8m0_scale_exponents,
    mx_dequantize,
    mx_fake_quant,
    mx_quantize,
)
from .nvfp4 import (
    HiF4Array,
    NVFP4Array,
    hif4_dequantize,
    hif4_quantize,
    nvfp4_dequantize,
    nvfp4_quantize,
)
from .optim16 import (
    SGD16,
    UPDATE_MODES,
    AdamW16,
    adamw16_update,
    apply_update,
    sgd16_update,
    sgd_update_,
)
from .ozaki import componentwise_error, exact_matmul, ozaki_gemm, ozaki_moduli
from .packing import pack_fp4, pack_fp6, unpack_fp4, unpack_fp6
from .policy import POLICIES, GradScaler, Policy, autocast, get_policy, linear, matmul, round_tensor
from .sr import philox4x32, random_bits, sr_cast
from .unit_scaling import (
    CONSTRAINTS,
    apply_constraint,
    residual_add,
    residual_split,
    scale_bwd,
    scale_fwd,
    unit_add,
    unit_cross_entropy,
    unit_dropout,
    unit_gelu,
    unit_linear,
    unit_matmul,
    unit_mse_loss,
    unit_silu,
    unit_softmax,
)

__all__ = ["FORMATS", "ROUNDING_MODES", "FormatSpec", "get_format", "make_format", "encode",
           "decode", "quantize", "cast", "f32_bits", "philox4x32", "random_bits", "sr_cast",
           "pack_fp4", "unpack_fp4", "pack_fp6", "unpack_fp6", "MX_ELEMENTS", "MXArray",
           "e8m0_scale_exponents", "mx_quantize", "mx_dequantize", "mx_fake_quant",
           "set_num_threads", "get_num_threads",
           "NVFP4Array", "nvfp4_quantize", "nvfp4_dequantize", "HiF4Array", "hif4_quantize",
           "hif4_dequantize", "lmul", "lmul_matmul", "lmul_attention", "lmul_offset_bits",
           "ozaki_gemm", "ozaki_moduli", "exact_matmul", "componentwise_error", "Policy",
           "POLICIES", "autocast", "get_policy", "matmul", "linear", "round_tensor", "conv1d",
           "conv2d", "conv3d", "Linear", "Conv1d", "Conv2d", "Conv3d", "convert_to_policy",
           "GradScaler", "UPDATE_MODES", "sgd_update_", "apply_update", "sgd16_update",
           "adamw16_update", "SGD16", "AdamW16", "CONSTRAINTS", "apply_constraint", "scale_fwd",
           "scale_bwd", "unit_matmul", "unit_linear", "unit_add", "residual_split",
           "residual_add", "unit_gelu", "unit_silu", "unit_softmax", "unit_dropout",
           "unit_cross_entropy", "unit_mse_loss"]
