"""Fused device kernels, looked up by (op, device type): ``lookup(op, device, dtype)``.

Ops ask the table through the Device object of their input and keep their NumPy/``xp`` path
when it answers None, which it always does on the CPU. The CUDA entries are CuPy kernels
(ElementwiseKernel and warp-per-row RawKernels) for the hot composites: gelu (exact and tanh,
forward and backward), softmax / log_softmax (forward and backward), nll_loss's backward,
layer_norm (forward and backward), the Adam/AdamW update, dropout's mask, and 16-bit matmul.
Sources are in ``_cuda_src.py``; they compile on first use, so importing this package never
needs CuPy. See docs/gpu.md for what has and has not run on a GPU.

On the CPU, ``jit_kernel(name, ...)`` gives the numba one-pass kernels of ``_cpu_jit.py`` (the
``jit`` extra), or None; each gives the bits of the NumPy kernel it replaces.
``float32_math(name, x)`` runs a float32 function of ``_math32.py`` (expm1, log1p, sinh, cosh,
atanh) on either.
"""

from . import _cuda  # registers the CUDA entries (sources only; nothing compiles here)
from ._cpu import float32_math, jit_kernel, logaddexp
from ._table import entries, lookup, register

__all__ = ["lookup", "register", "entries", "jit_kernel", "float32_math", "logaddexp"]
