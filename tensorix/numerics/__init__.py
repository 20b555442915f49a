"""Low-precision numerics: element and block formats, exact casts, stochastic rounding, packed
storage, and low-precision arithmetic (precision-policy matmul, L-Mul, Ozaki GEMM, unit
scaling, 16-bit optimizers). See README.md here and docs/numerics.md."""

from .casting import cast, decode, encode, f32_bits, quantize
from .formats import FORMATS, ROUNDING_MODES, FormatSpec, get_format, make_format
from .packing import pack_fp4, pack_fp6, unpack_fp4, unpack_fp6
from .sr import philox4x32, random_bits, sr_cast

__all__ = ["FORMATS", "ROUNDING_MODES", "FormatSpec", "get_format", "make_format", "encode",
           "decode", "quantize", "cast", "f32_bits", "philox4x32", "random_bits", "sr_cast",
           "pack_fp4", "unpack_fp4", "pack_fp6", "unpack_fp6"]
