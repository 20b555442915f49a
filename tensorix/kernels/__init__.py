"""Fused kernels, declared per device by the primitives that use them.

A primitive lists its kernels on its class (``_kernels = {role: (cuda.gelu, jit(...))}``, see
docs/architecture.md) and asks the one dispatcher for the one serving its input
(``autograd.dispatch.kernel``); it keeps its NumPy/``xp`` path where none serves. The CUDA
kernels (module ``cuda`` here) are CuPy kernels
(ElementwiseKernel and warp-per-row RawKernels) for the hot composites: gelu (exact and tanh,
forward and backward), softmax / log_softmax (forward and backward), nll_loss's backward,
layer_norm (forward and backward), the Adam/AdamW update, dropout's mask, and 16-bit matmul.
Sources are in ``_cuda_src.py``; they compile on first use, so importing this package never
needs CuPy. See docs/gpu.md for what has and has not run on a GPU.

On the CPU, ``jit(name, dtypes, example)`` declares a numba one-pass kernel of ``_cpu_jit.py``
(the ``jit`` extra), served only where numba compiles it; each gives the bits of the NumPy
kernel it replaces (igamma's to the C library's exp/log, logcumsumexp's scan that of its body
applied in order): igamma64, cumextreme, hardshrink, softshrink, threshold, logcumsumexp32,
angle_real, hardswish, elu32 (on ``_math32``'s expm1_32), fmod32 and remainder32 (exact float64
arithmetic, NumPy's bits); the activations' ``_jit_13act.py``: relu, hardtanh, leaky_relu,
hardsigmoid, softsign (torch's bits) and ``_act32.py``'s float32 sigmoid, softplus, logsigmoid,
logit and glu (the same bits as their NumPy form); ``_jit_13spec.py``: hypot32 (float64
arithmetic rounded once), nextafter_bits32/64 (bit increments), mvlgamma32 (on lgamma32) and
igamma_lanes64 (igamma64's bits, 32 elements in vectorised lanes). ``float32_math(name, *xs)``
runs a float32 function of ``_math32.py`` (expm1, log1p, sinh, cosh, atanh, softplus, lgamma,
digamma, i0, silu, tan, atan2, erf, erfc, logaddexp, logaddexp2) as numba's pass or NumPy
blocks; ``float32_pass(compiled, name, *arrays)`` does so for a primitive's declared kernel
(exact GELU and its backward; ``_math32``'s fused multiply-adds are ``_fma32.fma32`` on NumPy,
``_jit_13gelu.fma`` under numba, the same bits). ``sum_squares(x)`` is a float32 norm's one pass
(BLAS dots of chunks added in float64).
"""

from . import _cuda as cuda  # the CUDA kernels (sources only; nothing compiles here)
from ._cpu import atan2, float32_math, float32_pass, jit, jit_kernel, logaddexp, sum_squares
from ._table import Kernel, cuda_kernel, declared, select

__all__ = ["Kernel", "cuda", "cuda_kernel", "declared", "float32_math", "float32_pass", "jit",
           "jit_kernel",
           "logaddexp", "select", "atan2", "sum_squares"]
