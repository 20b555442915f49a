"""numba's scalar fused multiply-add for ``_math32``'s bodies (exact GELU, silu, sigmoid and
glu's gate, erfc): ``_cpu_jit`` puts ``fma`` in the place of ``_fma32.fma32`` (the NumPy
form, the same bits) when it recompiles them.

numba contracts no ``a * b + c`` without fastmath (which would also let LLVM reorder and give
other bits than the NumPy fallback), so the fused steps are written out: LLVM's ``llvm.fma``,
the CPU's vfmadd, which vectorises. Torch's vectorised kernels (``Vectorized<float>::fmadd``)
do the same; without it exact GELU ran 1.5x longer than with it.
"""

import numba
import numba.extending

__all__ = ["fma"]


@numba.extending.intrinsic
def _fma_intrinsic(typingctx, a, b, c):
    def codegen(context, builder, sig, args):
        return builder.fma(*args)  # one rounding of a * b + c
    return a(a, a, a), codegen


@numba.njit(inline="always")
def fma(a, b, c):
    """a * b + c rounded once (float32 or float64 scalars, all three of one type)."""
    return _fma_intrinsic(a, b, c)
