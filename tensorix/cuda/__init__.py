"""``tensorix.cuda``: the GPU runtime, with ``torch.cuda``'s names, over CuPy.

Devices (``is_available``, ``device_count``, ``current_device``, ``set_device``, ``device``,
``synchronize``), streams and events (``Stream``, ``Event``, ``current_stream``, ``stream``),
the memory pool (``memory_allocated``, ``max_memory_allocated``, ``reset_peak_memory_stats``,
``memory_reserved``, ``empty_cache``), the GPUs' default random generators (``manual_seed``,
``manual_seed_all``, ``get_rng_state``, ...) and the TF32 switch (``matmul.allow_tf32``).

CuPy is reached only through :mod:`tensorix.backend`, so importing this package on a machine
without CuPy works: ``is_available()`` is False, ``device_count()`` is 0, the seeding functions
are silently ignored where there is no GPU (as in PyTorch), and everything that needs a GPU
raises backend's clear "CUDA was requested but ... not available" error.

Status: written and tested on CPU machines only; docs/gpu.md says what has run on a GPU.
"""

from . import _device, _memory, _rng, _streams, _tf32
from ._device import *
from ._memory import *
from ._rng import *
from ._streams import *
from ._tf32 import *

__all__ = _device.__all__ + _memory.__all__ + _rng.__all__ + _streams.__all__ + _tf32.__all__


def __getattr__(name):
    # tensorix.cuda.amp sits above cuda (it uses numerics), so it loads on first use
    if name == "amp":
        import importlib

        return importlib.import_module(f"{__name__}.amp")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
