"""``tensorix.backends.cudnn``: torch's cuDNN switches, for scripts that set them.

tensorix calls no cuDNN: convolutions are GEMMs (NumPy or cuBLAS through CuPy), so
``is_available()`` is False and ``version()`` is None, and ``benchmark``, ``deterministic``,
``enabled`` and ``allow_tf32`` are plain recorded attributes (nothing reads them). TF32 for
tensorix's GEMMs, convolutions included, is ``tensorix.backends.cuda.matmul.allow_tf32``.

Example::

    import tensorix.backends.cudnn
    tensorix.backends.cudnn.benchmark = True      # accepted; nothing to tune in tensorix
"""

from __future__ import annotations

__all__ = ["is_available", "version", "benchmark", "deterministic", "enabled", "allow_tf32"]


def is_available() -> bool:
    """False: tensorix does not use cuDNN (its convolutions are GEMMs)."""
    return False


def version():
    """None, as on a torch build without cuDNN."""
    return None


# torch's defaults: enabled, TF32 allowed for convolutions, no autotuning, not forced deterministic
benchmark = False
deterministic = False
enabled = True
allow_tf32 = True
