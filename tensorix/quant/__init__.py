"""Quantization: uniform quantizers (int2..int8, fp8/fp6/fp4, MX, NVFP4), observers, fake
quantization and QAT (LSQ), the quantize_ / quantize_dynamic / prepare / convert / prepare_qat
flows, quantized layers, packed int4 storage, safetensors files and exact integer GEMM
kernels. See README.md here and docs/quant.md."""

from .flows import (
    Int4WeightOnlyConfig,
    Int8DynamicActivationInt8WeightConfig,
    Int8WeightOnlyConfig,
    QATConfig,
    QuantConfig,
    StaticConfig,
    convert,
    load_quantized,
    prepare,
    prepare_qat,
    quantize_,
    quantize_dynamic,
    save_quantized,
)
from .gemm import IntGemm, IntWeight, int_gemm, int_linear
from .intops import int_exp, int_gelu, int_layer_norm, int_poly, int_softmax, int_sqrt
from .kernels import int4_mm, int_mm, pack_int4, unpack_int4
from .layers import QuantizedConv2d, QuantizedEmbedding, QuantizedLinear
from .lut import bipolar_quantize, from_bitplanes, lut_gemm, lut_tables, to_bitplanes
from .observers import (
    HistogramObserver,
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MSEObserver,
)
from .qat import FakeQuantize, LearnableFakeQuantize, QATConv2d, QATLinear, lsq_fake_quantize
from .quantizer import (
    BLOCK_FORMATS,
    QScheme,
    compute_qparams,
    dequantize,
    fake_quantize,
    qparams_from_range,
    quantize,
)

__all__ = ["QScheme", "BLOCK_FORMATS", "compute_qparams", "qparams_from_range", "quantize",
           "dequantize", "fake_quantize", "int_mm", "int4_mm", "pack_int4", "unpack_int4",
           "MinMaxObserver", "MovingAverageMinMaxObserver", "HistogramObserver", "MSEObserver",
           "FakeQuantize", "LearnableFakeQuantize", "lsq_fake_quantize", "QATLinear",
           "QATConv2d", "QuantizedLinear", "QuantizedConv2d", "QuantizedEmbedding",
           "QuantConfig", "Int8WeightOnlyConfig", "Int4WeightOnlyConfig",
           "Int8DynamicActivationInt8WeightConfig", "StaticConfig", "QATConfig", "quantize_",
           "quantize_dynamic", "prepare", "convert", "prepare_qat", "save_quantized",
           "load_quantized", "IntGemm", "IntWeight", "int_gemm", "int_linear", "int_poly",
           "int_exp", "int_softmax", "int_gelu", "int_sqrt", "int_layer_norm",
           "bipolar_quantize", "to_bitplanes", "from_bitplanes", "lut_tables", "lut_gemm"]
