"""One oracle helper for every op test: values against NumPy, values and gradients against
torch (where installed), tolerances from one table keyed by dtype."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt

__all__ = ["tolerance", "assert_close", "TOLERANCES", "COMPOSITE_TOLERANCES"]

# (rtol, atol) by dtype: what a correct implementation of one op reaches against an oracle
TOLERANCES = {
    "float64": (1e-7, 1e-9),
    "complex128": (1e-7, 1e-9),
    "float32": (1.3e-5, 1e-5),
    "complex64": (1.3e-5, 1e-5),
    "float16": (2e-3, 2e-3),
    "bfloat16": (1.6e-2, 1e-2),
    "float8_e4m3fn": (1.25e-1, 2e-2),
    "float8_e5m2": (2.5e-1, 4e-2),
}

# (rtol, atol) by dtype for composites (nn layers, losses, attention, convolutions): a chain
# of ops whose rounding adds up, against an oracle that sums in another order
COMPOSITE_TOLERANCES = {
    "float64": (1e-7, 1e-9),
    "complex128": (1e-7, 1e-9),
    "float32": (1e-4, 1e-5),
    "complex64": (1e-4, 1e-5),
    "float16": (1e-2, 1e-2),
    "bfloat16": (5e-2, 5e-2),
}


def tolerance(dtype, override=None, composite=False):
    """``(rtol, atol)`` for comparing results in ``dtype`` with an oracle: one op's
    (``TOLERANCES``), or a composite's (``COMPOSITE_TOLERANCES``); ``override`` maps dtype
    names to pairs that win. Integers and bools compare exactly.

    Example: ``tolerance(tensorix.float32)`` is ``(1.3e-5, 1e-5)``."""
    name = dt.as_dtype(dtype).name
    if override and name in override:
        return override[name]
    if composite and name in COMPOSITE_TOLERANCES:
        return COMPOSITE_TOLERANCES[name]
    return TOLERANCES.get(name, (0.0, 0.0))


def _np(x):
    if hasattr(x, "detach") and hasattr(x, "numpy") and type(x).__module__.startswith("torch"):
        x = x.detach()
        if x.dtype.is_floating_point and x.element_size() < 4:
            x = x.float()
        return x.numpy(force=True)  # force: torch may hand back lazy zero or conj tensors
    if hasattr(x, "__array__") and not isinstance(x, np.ndarray):
        x = np.asarray(x.__array__())
    x = np.asarray(x)
    if x.dtype.kind == "V" or x.dtype.name in ("bfloat16",) or "float8" in x.dtype.name:
        x = x.astype(np.float32)
    return x


def assert_close(actual, expected, dtype=None, rtol=None, atol=None, what="value",
                 check_dtype=False, equal_nan=True, composite=False):
    """Assert two arrays/tensors are close (tolerance from the dtype table unless given;
    ``composite`` takes the composites' table, see :func:`tolerance`)."""
    a, e = _np(actual), _np(expected)
    if a.shape != e.shape:
        raise AssertionError(f"{what}: shape {a.shape} != expected {e.shape}")
    if check_dtype and a.dtype != e.dtype:
        raise AssertionError(f"{what}: dtype {a.dtype} != expected {e.dtype}")
    if dtype is None:
        dtype = dt.float64 if a.dtype.kind in "fc" else dt.int64
    r, t = tolerance(dtype, composite=composite)
    r = r if rtol is None else rtol
    t = t if atol is None else atol
    if a.dtype.kind in "biu" and e.dtype.kind in "biu":
        if not np.array_equal(a, e):
            bad = np.argwhere(a != e)[:5].tolist()
            raise AssertionError(f"{what}: integer mismatch at {bad}")
        return
    af = a.astype(np.complex128 if a.dtype.kind == "c" or e.dtype.kind == "c" else np.float64)
    ef = e.astype(af.dtype)
    ok = np.isclose(af, ef, rtol=r, atol=t, equal_nan=equal_nan)
    if not ok.all():
        idx = np.argwhere(~ok)[:5]
        pairs = [(tuple(i), af[tuple(i)], ef[tuple(i)]) for i in idx]
        with np.errstate(invalid="ignore"):  # inf - inf where one side is infinite
            err = np.max(np.abs(af - ef)[~ok])
        raise AssertionError(f"{what}: {int((~ok).sum())} of {ok.size} elements differ (max abs "
                             f"err {err:.3g}, rtol={r}, atol={t}); first: {pairs}")
