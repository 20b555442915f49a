"""torch's global numerics switches: ``set_float32_matmul_precision`` (wired to the TF32
setting, ``tensorix.cuda.matmul.allow_tf32``) and ``use_deterministic_algorithms`` (recorded:
tensorix's CPU kernels are NumPy's and deterministic; it does not audit GPU kernels).

Example::

    tensorix.set_float32_matmul_precision("high")    # TF32 GEMMs on a GPU, as in torch
"""

from __future__ import annotations

__all__ = ["set_float32_matmul_precision", "get_float32_matmul_precision",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled"]

_PRECISIONS = ("highest", "high", "medium")
_deterministic = {"enabled": False, "warn_only": False}


def set_float32_matmul_precision(precision: str) -> None:
    """``"highest"``: float32 GEMMs in full float32 (TF32 off); ``"high"`` or ``"medium"``:
    TF32 tensor cores allowed on a GPU (tensorix has no bf16x3 mode, so "medium" is "high").
    The same switch as ``tensorix.backends.cuda.matmul.allow_tf32``."""
    from .cuda import matmul

    if precision not in _PRECISIONS:
        raise RuntimeError(f"set_float32_matmul_precision: invalid precision {precision!r}; "
                           f"expected one of {list(_PRECISIONS)}")
    matmul.allow_tf32 = precision != "highest"


def get_float32_matmul_precision() -> str:
    """``"highest"`` unless TF32 is allowed, then ``"high"``."""
    from .cuda import matmul

    return "high" if matmul.allow_tf32 else "highest"


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record torch's determinism switch. tensorix's CPU ops are deterministic already; it
    does not check its CuPy kernels (e.g. scatter-adds), so on a GPU this is only recorded."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not "
                        f"{type(mode).__name__}")
    _deterministic.update(enabled=mode, warn_only=bool(warn_only))


def are_deterministic_algorithms_enabled() -> bool:
    """The recorded ``use_deterministic_algorithms`` mode."""
    return _deterministic["enabled"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """The recorded ``warn_only`` of ``use_deterministic_algorithms``."""
    return _deterministic["enabled"] and _deterministic["warn_only"]
