"""Low-precision element formats, declared once as data.

A :class:`FormatSpec` says everything the casts need about a format: field widths, bias, which
codes are Inf/NaN (``kind``), the largest finite value and its code, and the tensorix dtype
that stores it on the CPU. Each format is declared once, with its dtype, in ``dtypes.py``
(``tensorix.float8_e4m3fn.format``); this module indexes those declarations by name and makes
study formats (:func:`make_format`). Every number is derived from the four fields
``(ebits, mbits, bias, kind)``; nothing is copied in by hand, and the tests check the derived
values against the spec table and ml_dtypes.

Kinds (spec section 1.1):

* ``ieee``   - top exponent is Inf (M = 0) / NaN (M != 0): bf16, fp16, fp8_e5m2;
* ``fn``     - "finite + NaN": the top binade is ordinary, only S.1..1.1..1 is NaN: fp8_e4m3;
* ``finite`` - no Inf, no NaN: fp6_e3m2, fp6_e2m3, fp4_e2m1;
* ``e8m0``   - unsigned power of two ``2^(E-127)``, code 0xFF is NaN, no zero: the MX scale.

Example::

    >>> FORMATS["fp8_e4m3"].max, hex(FORMATS["fp8_e4m3"].max_code)
    (448.0, '0x7e')
"""

from __future__ import annotations

import functools

from . import dtypes as _dt
from .dtypes import FormatSpec

__all__ = ["FormatSpec", "FORMATS", "ROUNDING_MODES", "get_format", "make_format"]

ROUNDING_MODES = ("rne", "rtz", "rna", "rup", "rdn", "sr")


# the formats the dtypes declare, each under its name; other spellings (the dtype's name,
# e<E>m<M>, the declared aliases) lead to the same object
FORMATS: dict[str, FormatSpec] = {
    d.format.name: d.format for d in (_dt.bfloat16, _dt.float16, _dt.float8_e4m3fn,
                                      _dt.float8_e5m2, _dt.float6_e3m2fn, _dt.float6_e2m3fn,
                                      _dt.float4_e2m1fn, _dt.float8_e8m0fnu)
}
_NAMES = {n: f for f in FORMATS.values()
          for n in (f.name, f.tx_dtype.name, f"e{f.ebits}m{f.mbits}", *f.aliases)}


@functools.cache
def make_format(ebits: int, mbits: int, bias: int | None = None, kind: str = "ieee",
                name: str | None = None) -> FormatSpec:
    """A study format (for example ``make_format(4, 4)`` for a 4-bit-mantissa L-Mul).

    ``bias`` defaults to ``2^(ebits-1) - 1``. The casts support any format with
    ``mbits <= 20`` whose exponent range lies inside float32's (``emin >= -126``).
    """
    if not (1 <= ebits <= 8 and 0 <= mbits <= 20):
        raise ValueError(f"make_format: expected 1 <= ebits <= 8 and 0 <= mbits <= 20, got "
                         f"ebits={ebits}, mbits={mbits}")
    bias = (1 << (ebits - 1)) - 1 if bias is None else int(bias)
    spec = FormatSpec(name or f"e{ebits}m{mbits}", int(ebits), int(mbits), bias, kind)
    if spec.emin < -126 and kind != "e8m0":
        raise ValueError(f"make_format: emin = {spec.emin} is below float32's -126")
    return spec


def get_format(fmt) -> FormatSpec:
    """Resolve a format name, alias, tensorix dtype or FormatSpec to its FormatSpec.

    Example: ``get_format("e4m3") is get_format(tensorix.float8_e4m3fn) is
    FORMATS["fp8_e4m3"]``.
    """
    if isinstance(fmt, FormatSpec):
        return fmt
    name = getattr(fmt, "name", fmt)  # a tensorix dtype has .name
    if isinstance(name, str):
        key = name.lower()
        if key in _NAMES:
            return _NAMES[key]
        if key.startswith("e") and "m" in key:  # "e4m4": an ieee-kind study format
            e, _, m = key[1:].partition("m")
            if e.isdigit() and m.isdigit():
                return make_format(int(e), int(m))
    raise ValueError(f"get_format: unknown format {fmt!r}; expected one of "
                     f"{sorted(FORMATS)} (or an alias such as 'e4m3', a tensorix dtype, or "
                     "a FormatSpec)")
