"""Dtypes as objects, and the one type-promotion table.

Each dtype is declared once (name, storage dtype, category, bits). Promotion follows PyTorch:

* categories are ordered ``bool < integer < floating < complex``;
* inside a category, :func:`promote_types` walks a small lattice (``uint8 + int8 -> int16``,
  ``float16 + bfloat16 -> float32``, ``complex64 + float64 -> complex128``); float8 formats do
  not promote (PyTorch refuses too) and must be cast explicitly;
* :func:`result_type` splits operands into three tiers - tensors with dimensions, 0-d tensors and
  Python scalars - and a lower tier only matters when it is of a *higher category* than the
  tiers above it. Python ``float`` counts as the default dtype (float32), ``int`` as int64,
  ``complex`` as complex64, ``bool`` as bool.

Example::

    >>> tensorix.result_type(tensorix.ones(3, dtype=tensorix.int8), 2.5)
    tensorix.float32
"""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np

__all__ = [
    "dtype", "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
    "float32", "float64", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2",
    "float6_e3m2fn", "float6_e2m3fn", "float4_e2m1fn", "float8_e8m0fnu",
    "half", "float", "double", "short", "int", "long", "cfloat", "cdouble",
    "promote_types", "result_type", "get_default_dtype", "set_default_dtype", "finfo", "iinfo",
    "can_cast", "FormatSpec",
]

_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3
_KINDS = ("ieee", "fn", "finite", "e8m0")


@dataclasses.dataclass(frozen=True)
class FormatSpec:
    """One element format. ``max``/``min_normal``/``min_subnormal`` are Python floats;
    ``max_code``, ``inf_code`` and ``nan_code`` are the positive (sign bit clear) codes, or None
    where the format has no such value; ``tx_dtype`` is the tensorix dtype declared with it
    (None for study formats that only live as codes); ``aliases`` are other names people use
    (besides the dtype's name and ``e<E>m<M>``)."""

    name: str
    ebits: int
    mbits: int
    bias: int
    kind: str
    aliases: tuple = dataclasses.field(default=(), compare=False)
    # set once by the dtype that declares this format (see dtype.__init__)
    tx_dtype: object = dataclasses.field(default=None, compare=False, repr=False)

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
        return _pyint(self.signed) + self.ebits + self.mbits

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
            return _pyfloat(np.ldexp(1.0, e_field - self.bias))
        if e_field == 0:
            return _pyfloat(np.ldexp(_pyfloat(m_field), 1 - self.bias - self.mbits))
        return _pyfloat(np.ldexp(_pyfloat((1 << self.mbits) + m_field),
                                 e_field - self.bias - self.mbits))

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

    def __repr__(self):
        return (f"FormatSpec({self.name}: 1.{self.ebits}.{self.mbits} bias={self.bias} "
                f"kind={self.kind} max={self.max:g})" if self.signed else
                f"FormatSpec({self.name}: 0.{self.ebits}.0 bias={self.bias} kind={self.kind})")



class dtype:  # noqa: N801 - the public name mirrors torch.dtype
    """A tensorix dtype: ``name``, ``np`` (the storage dtype), ``category`` and ``bits``.

    ``is_floating_point``, ``is_complex`` and ``is_signed`` answer as in PyTorch. Instances are
    unique, so compare them with ``is`` or ``==``.
    """

    __slots__ = ("name", "np", "category", "bits", "rank", "low_precision", "storage_only",
                 "format")

    def __init__(self, name, np_dtype, category, rank, low_precision=False, format=None):  # noqa: A002
        self.name = name
        # the element format's fields (bits, exponent/mantissa, bias, Inf/NaN, max, ...) for
        # the 16-bit and narrower floats, declared here once; None for the others
        self.format = format
        if format is not None:
            object.__setattr__(format, "tx_dtype", self)
        self.np = np.dtype(np_dtype)
        self.category = category
        self.bits = self.np.itemsize * 8
        self.rank = rank  # position inside its category's lattice
        self.low_precision = low_precision  # bf16 and the storage-only formats below
        # fp8/fp6/fp4/E8M0: no promotion (rank -1), and no CuPy dtype (numerics spec R8): on
        # CUDA they live as uint8 codes, the same bytes as ml_dtypes' (see storage)
        self.storage_only = rank < 0

    def storage(self, xp) -> np.dtype:
        """The array dtype holding this dtype in array module ``xp``: ``self.np``, except for
        the storage-only formats on CUDA, which CuPy refuses ("Unsupported dtype"): there they
        are uint8 codes with ml_dtypes' bit patterns (docs/gpu.md)."""
        return _CODES if self.storage_only and xp is not np else self.np

    @property
    def is_floating_point(self):
        return self.category == _FLOAT

    @property
    def is_complex(self):
        return self.category == _COMPLEX

    @property
    def is_signed(self):
        return self.name != "uint8" and self.name != "bool"

    @property
    def itemsize(self):
        return self.np.itemsize

    def to_real(self):
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    def to_complex(self):
        """The complex dtype for this one (float16/bfloat16 give complex64: no complex32)."""
        if self.rank < 0:  # storage-only formats: PyTorch has no complex counterpart either
            raise TypeError(f"to_complex: {self.name} has no complex counterpart; cast it to "
                            "a standard floating dtype first")
        return complex128 if self is float64 else (self if self.is_complex else complex64)

    def __repr__(self):
        return f"tensorix.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


bool = dtype("bool", np.bool_, _BOOL, 0)  # noqa: A001
uint8 = dtype("uint8", np.uint8, _INT, 0)
int8 = dtype("int8", np.int8, _INT, 0)
int16 = dtype("int16", np.int16, _INT, 1)
int32 = dtype("int32", np.int32, _INT, 2)
int64 = dtype("int64", np.int64, _INT, 3)
# formats: FormatSpec(name, exponent bits, mantissa bits, bias, kind of Inf/NaN, aliases)
float8_e4m3fn = dtype("float8_e4m3fn", ml_dtypes.float8_e4m3fn, _FLOAT, -1, True,
                      FormatSpec("fp8_e4m3", 4, 3, 7, "fn", ("fp8",)))
float8_e5m2 = dtype("float8_e5m2", ml_dtypes.float8_e5m2, _FLOAT, -1, True,
                    FormatSpec("fp8_e5m2", 5, 2, 15, "ieee"))
# OCP FP6/FP4 elements and the E8M0 MX scale (storage formats; see tensorix.numerics)
float6_e3m2fn = dtype("float6_e3m2fn", ml_dtypes.float6_e3m2fn, _FLOAT, -1, True,
                      FormatSpec("fp6_e3m2", 3, 2, 3, "finite"))
float6_e2m3fn = dtype("float6_e2m3fn", ml_dtypes.float6_e2m3fn, _FLOAT, -1, True,
                      FormatSpec("fp6_e2m3", 2, 3, 1, "finite"))
float4_e2m1fn = dtype("float4_e2m1fn", ml_dtypes.float4_e2m1fn, _FLOAT, -1, True,
                      FormatSpec("fp4_e2m1", 2, 1, 1, "finite", ("fp4",)))
float8_e8m0fnu = dtype("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, _FLOAT, -1, True,
                       FormatSpec("e8m0", 8, 0, 127, "e8m0", ("ue8m0",)))
float16 = dtype("float16", np.float16, _FLOAT, 0, False,
                FormatSpec("fp16", 5, 10, 15, "ieee", ("half",)))
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, _FLOAT, 0, True,
                 FormatSpec("bf16", 8, 7, 127, "ieee"))
float32 = dtype("float32", np.float32, _FLOAT, 1)
float64 = dtype("float64", np.float64, _FLOAT, 2)
complex64 = dtype("complex64", np.complex64, _COMPLEX, 1)
complex128 = dtype("complex128", np.complex128, _COMPLEX, 2)

half, float, double = float16, float32, float64  # noqa: A001 - torch aliases
short, int, long = int16, int32, int64  # noqa: A001
cfloat, cdouble = complex64, complex128

ALL = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64,
       complex128, float8_e4m3fn, float8_e5m2, float6_e3m2fn, float6_e2m3fn, float4_e2m1fn,
       float8_e8m0fnu)
FLOATING = (float16, bfloat16, float32, float64)
_BY_NP = {d.np: d for d in ALL}
_CODES = np.dtype(np.uint8)
STORAGE_ONLY = tuple(d for d in ALL if d.storage_only)
STORAGE_ONLY_NP = frozenset(d.np for d in STORAGE_ONLY)
LOW_PRECISION_NP = frozenset(d.np for d in ALL if d.low_precision)  # cast by tensorix/_codec.py
_BY_NAME = {d.name: d for d in ALL}


def _by_name(name):
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """The tensorix dtype stored as ``np_dtype``; a clear error for unsupported ones."""
    d = _BY_NP.get(np.dtype(np_dtype))
    if d is None:
        raise TypeError(f"tensorix: unsupported array dtype {np.dtype(np_dtype)} "
                        f"(supported: {', '.join(d.name for d in ALL)})")
    return d


def as_dtype(obj) -> dtype:
    """Accept a tensorix dtype, a NumPy dtype, a Python type or a dtype name."""
    if isinstance(obj, dtype):
        return obj
    if obj is None:
        return _default[0]
    if isinstance(obj, str) and obj in _BY_NAME:
        return _BY_NAME[obj]
    if obj is _pyfloat:
        return _default[0]
    if obj is _pyint:
        return int64
    if obj is _pybool:
        return bool
    if obj is _pycomplex:
        return _default[0].to_complex()
    try:
        return from_numpy_dtype(obj)
    except TypeError:
        raise TypeError(f"tensorix: cannot interpret {obj!r} as a dtype") from None


import builtins as _builtins  # noqa: E402 - after the dtype names that shadow the builtins

_pyfloat, _pyint, _pybool, _pycomplex = (_builtins.float, _builtins.int, _builtins.bool,
                                         _builtins.complex)
_default = [float32]


def get_default_dtype() -> dtype:
    """The dtype of Python floats in tensor creation and promotion (float32 unless changed)."""
    return _default[0]


def set_default_dtype(d) -> None:
    """Set the default floating dtype (float32 or float64, like PyTorch)."""
    d = as_dtype(d)
    if d not in (float16, bfloat16, float32, float64):
        raise TypeError(f"set_default_dtype: expected a floating dtype, got {d}")
    _default[0] = d


def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both ``a`` and ``b`` convert to without losing their category.

    Example: ``promote_types(uint8, int8) is int16``; ``promote_types(float16, bfloat16) is
    float32``.
    """
    if a is b:
        return a
    if a.rank < 0 or b.rank < 0:  # float8: PyTorch refuses implicit promotion
        raise TypeError(f"promote_types: promotion for float8 types is not supported "
                        f"({a.name} and {b.name}); cast explicitly with .to(dtype)")
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        if hi.is_complex and lo is float64:
            return complex128
        return hi
    if a.category == _INT:
        if {a.name, b.name} == {"uint8", "int8"}:
            return int16
        return a if a.rank >= b.rank else b
    if a.category == _FLOAT and a.rank == b.rank:  # float16 with bfloat16
        return float32
    return a if a.rank >= b.rank else b


def _combine_categories(higher, lower):
    # c10's combine_categories: a lower tier only wins when its category is higher
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_complex:
        return higher
    if lower.is_complex:
        return higher.to_complex() if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher is bool or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def scalar_dtype(value) -> dtype:
    """The dtype a Python scalar takes part in promotion as."""
    if isinstance(value, _pybool):
        return bool
    if isinstance(value, _pyint):
        return int64
    if isinstance(value, _pyfloat):
        return _default[0]
    if isinstance(value, _pycomplex):
        return _default[0].to_complex()
    raise TypeError(f"tensorix: expected a Tensor or a Python number, got {type(value).__name__}")


def result_type(*operands) -> dtype:
    """The dtype PyTorch would give an op on ``operands`` (Tensors and Python numbers)."""
    dim = zero = wrapped = None
    for x in operands:
        d = getattr(x, "dtype", None)
        if isinstance(d, dtype):
            if x.ndim:
                dim = d if dim is None else promote_types(dim, d)
            else:
                zero = d if zero is None else promote_types(zero, d)
        else:
            d = scalar_dtype(x)
            wrapped = d if wrapped is None else promote_types(wrapped, d)
    return _combine_categories(dim, _combine_categories(zero, wrapped))


def can_cast(src: dtype, dst: dtype) -> _builtins.bool:
    """PyTorch's same-kind rule: no cast to a lower category (used by in-place ops)."""
    return src.category <= dst.category


class finfo:  # noqa: N801
    """Machine limits of a floating dtype: bits, eps, max, min, tiny (smallest normal)."""

    def __init__(self, d=None):
        d = as_dtype(d)
        if not (d.is_floating_point or d.is_complex):
            raise TypeError(f"finfo: expected a floating dtype, got {d}")
        info = ml_dtypes.finfo(d.to_real().np)
        self.dtype, self.bits = d.to_real(), info.bits
        self.eps, self.max, self.min = _builtins.float(info.eps), _builtins.float(info.max), \
            _builtins.float(info.min)
        self.tiny = self.smallest_normal = _builtins.float(info.tiny)
        self.resolution = _builtins.float(info.resolution)

    def __repr__(self):
        return f"finfo(dtype={self.dtype.name}, eps={self.eps}, max={self.max}, tiny={self.tiny})"


class iinfo:  # noqa: N801
    """Limits of an integer dtype: bits, min, max."""

    def __init__(self, d):
        d = as_dtype(d)
        if d.category not in (_INT, _BOOL):
            raise TypeError(f"iinfo: expected an integer dtype, got {d}")
        info = np.iinfo(d.np) if d is not bool else None
        self.dtype, self.bits = d, d.bits
        self.min, self.max = (0, 1) if info is None else (_builtins.int(info.min),
                                                          _builtins.int(info.max))

    def __repr__(self):
        return f"iinfo(dtype={self.dtype.name}, min={self.min}, max={self.max})"
