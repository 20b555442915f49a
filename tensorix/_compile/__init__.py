"""tensorix.compile: graphs captured at the dispatcher (tensorix.fx), optimized, fused into
numba / NumPy / CuPy kernels, run with guards and a cache. ``tensorix.compile`` is the
function :func:`~tensorix._compile.api.compile`; see docs/compile.md.
"""

from .api import CompiledFunction, OptimizedModule, compile

__all__ = ["compile", "CompiledFunction", "OptimizedModule"]
