"""Low-precision element formats, declared once as data.

A :class:`FormatSpec` says everything the casts need about a format: field widths, bias, which
codes are Inf/NaN (``kind``), the largest finite value and its code, and the tensorix dtype
that stores it on the CPU. Every number here is derived from the four fields
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

import dataclasses
import functools

import numpy as np

__all__ = ["FormatSpec", "FORMATS", "ROUNDING_MODES", "get_format", "make_format"]

ROUNDING_MODES = ("rne", "rtz", "rna", "rup", "rdn", "sr")
_KINDS = ("ieee", "fn", "finite", "e8m0")


@dataclasses.dataclass(frozen=True)
class FormatSpec:
    """One element format. ``max``/``min_normal``/``min_subnormal`` are Python floats;
    ``max_code``, ``inf_code`` and ``nan_code`` are the positive (sign bit clear) codes, or None
    where the format has no such value; ``dtype`` names the tensorix storage dtype (None for
    study formats that only live as codes)."""

    name: str
    ebits: int
    mbits: int
    bias: int
    kind: str
    dtype: str | None = None

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise ValueError(f"FormatSpec: kind must be one of {_KINDS}, got {self.kind!r}")
        if self.kind == "e8m0" and self.mbits != 0:
            raise ValueError("FormatSpec: an e8m0-kind format has no mantissa bits")

    # -- layout ------------------------------------------------------------------------------
    @property
    def signed(self) -> bool:
        return self.kind != "e8m0"

    @property
    def bits(self) -> int:
        return int(self.signed) + self.ebits + self.mbits

    @property
    def sign_bit(self) -> int:
        """The code of -0 (the sign mask); 0 for unsigned formats."""
        return 1 << (self.bits - 1) if self.signed else 0

    @property
    def code_dtype(self):
        return np.uint8 if self.bits <= 8 else np.uint16

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal binade (E = 1, or E = 0 for e8m0)."""
        return -self.bias if self.kind == "e8m0" else 1 - self.bias

    @property
    def max_code(self) -> int:
        top = (1 << (self.ebits + self.mbits)) - 1  # all exponent and mantissa bits set
        return {"ieee": top - (1 << self.mbits), "fn": top - 1, "finite": top,
                "e8m0": top - 1}[self.kind]

    @property
    def inf_code(self) -> int | None:
        return ((1 << self.ebits) - 1) << self.mbits if self.kind == "ieee" else None

    @property
    def nan_code(self) -> int | None:
        """The canonical positive NaN a cast emits (quiet-bit NaN for ieee formats)."""
        top = (1 << (self.ebits + self.mbits)) - 1
        if self.kind == "ieee":
            return self.inf_code | (1 << (self.mbits - 1)) if self.mbits else None
        return top if self.kind in ("fn", "e8m0") else None

    @property
    def has_inf(self) -> bool:
        return self.kind == "ieee"

    @property
    def has_nan(self) -> bool:
        return self.kind != "finite"

    # -- values ------------------------------------------------------------------------------
    def value_of_magnitude_code(self, c: int) -> float:
        """The value of a sign-less finite code by the definition (normal/subnormal rule)."""
        e_field, m_field = c >> self.mbits, c & ((1 << self.mbits) - 1)
        if self.kind == "e8m0":
            return float(np.ldexp(1.0, e_field - self.bias))
        if e_field == 0:
            return float(np.ldexp(float(m_field), 1 - self.bias - self.mbits))
        return float(np.ldexp(float((1 << self.mbits) + m_field), e_field - self.bias - self.mbits))

    @property
    def max(self) -> float:
        return self.value_of_magnitude_code(self.max_code)

    @property
    def emax(self) -> int:
        """Exponent of the largest finite binade (``floor(log2(max))``)."""
        return (self.max_code >> self.mbits) - self.bias

    @property
    def min_normal(self) -> float:
        return self.value_of_magnitude_code(0 if self.kind == "e8m0" else 1 << self.mbits)

    @property
    def min_subnormal(self) -> float | None:
        return None if self.kind == "e8m0" else self.value_of_magnitude_code(1)

    @property
    def tx_dtype(self):
        """The tensorix dtype object storing this format, or None."""
        if self.dtype is None:
            return None
        from . import dtypes

        return getattr(dtypes, self.dtype)

    def __repr__(self):
        return (f"FormatSpec({self.name}: 1.{self.ebits}.{self.mbits} bias={self.bias} "
                f"kind={self.kind} max={self.max:g})" if self.signed else
                f"FormatSpec({self.name}: 0.{self.ebits}.0 bias={self.bias} kind={self.kind})")


FORMATS: dict[str, FormatSpec] = {
    f.name: f
    for f in (
        FormatSpec("bf16", 8, 7, 127, "ieee", "bfloat16"),
        FormatSpec("fp16", 5, 10, 15, "ieee", "float16"),
        FormatSpec("fp8_e4m3", 4, 3, 7, "fn", "float8_e4m3fn"),
        FormatSpec("fp8_e5m2", 5, 2, 15, "ieee", "float8_e5m2"),
        FormatSpec("fp6_e3m2", 3, 2, 3, "finite", "float6_e3m2fn"),
        FormatSpec("fp6_e2m3", 2, 3, 1, "finite", "float6_e2m3fn"),
        FormatSpec("fp4_e2m1", 2, 1, 1, "finite", "float4_e2m1fn"),
        FormatSpec("e8m0", 8, 0, 127, "e8m0", "float8_e8m0fnu"),
    )
}

# other spellings people use: the tensorix / ml_dtypes / torch dtype names and short forms
_ALIASES = {
    "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float8_e4m3fn": "fp8_e4m3",
    "e4m3": "fp8_e4m3", "fp8": "fp8_e4m3", "float8_e5m2": "fp8_e5m2", "e5m2": "fp8_e5m2",
    "float6_e3m2fn": "fp6_e3m2", "e3m2": "fp6_e3m2", "float6_e2m3fn": "fp6_e2m3",
    "e2m3": "fp6_e2m3", "float4_e2m1fn": "fp4_e2m1", "e2m1": "fp4_e2m1", "fp4": "fp4_e2m1",
    "float8_e8m0fnu": "e8m0", "ue8m0": "e8m0",
}


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
        key = _ALIASES.get(key, key)
        if key in FORMATS:
            return FORMATS[key]
        if key.startswith("e") and "m" in key:  # "e4m4": an ieee-kind study format
            e, _, m = key[1:].partition("m")
            if e.isdigit() and m.isdigit():
                return make_format(int(e), int(m))
    raise ValueError(f"get_format: unknown format {fmt!r}; expected one of "
                     f"{sorted(FORMATS)} (or an alias such as 'e4m3', a tensorix dtype, or "
                     "a FormatSpec)")
