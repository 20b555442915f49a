"""Quantization: uniform quantizers (int2..int8, fp8/fp6/fp4, MX, NVFP4), observers, fake
quantization and QAT, the quantize_/prepare/convert flows, quantized layers, packed int4
storage and exact integer GEMM kernels. See README.md here and docs/quant.md."""

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
           "dequantize", "fake_quantize"]
