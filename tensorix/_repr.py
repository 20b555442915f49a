"""``repr`` of a tensor, character for character PyTorch's (``torch/_tensor_str.py``).

One formatter per tensor (two for complex: real and imaginary parts) fixes a common width:

* integers and bools print as Python does, right-aligned to the widest element;
* floats whose finite non-zero values are all integral print as ``1.`` ("int mode");
* floats switch to scientific notation (``1.0000e+09``) when the largest finite non-zero
  magnitude is over 1e8, the smallest under 1e-4, or their ratio over 1000;
* otherwise four decimals (``precision``).

Tensors with more than ``threshold`` elements are summarised (``edgeitems`` per side, ``...``
between), and lines wrap at ``linewidth``. The options live in :data:`PRINT_OPTS` and are set
with :func:`set_printoptions`, as in PyTorch.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from . import dtypes as dt

__all__ = ["set_printoptions", "get_printoptions", "printoptions", "tensor_repr"]


@dataclasses.dataclass
class _PrinterOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrinterOptions()
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
             "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None) -> None:
    """Set print options like ``torch.set_printoptions`` (``profile`` is 'default', 'short'
    or 'full'; ``sci_mode`` None lets the formatter choose).

    Example: ``tensorix.set_printoptions(precision=2)``.
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions(): unknown profile {profile!r}; expected one of "
                             f"{sorted(_PROFILES)}")
        (PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems,
         PRINT_OPTS.linewidth) = _PROFILES[profile]
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(PRINT_OPTS, name, value)
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options, as keyword arguments for :func:`set_printoptions`."""
    return dataclasses.asdict(PRINT_OPTS)


class printoptions:  # noqa: N801 - a context manager named like torch's
    """``with tensorix.printoptions(precision=2): ...`` changes the options temporarily."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs

    def __enter__(self):
        self._old = get_printoptions()
        set_printoptions(**self._kwargs)

    def __exit__(self, *exc):
        set_printoptions(**self._old)


class _Formatter:
    """Chooses int / fixed / scientific mode and the common width from the values shown."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode, self.sci_mode, self.max_width = True, False, 1
        flat = values.ravel()
        p = PRINT_OPTS.precision
        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        flat = flat.astype(np.float64)
        nz = flat[np.isfinite(flat) & (flat != 0)]
        if nz.size == 0:
            return
        mags = np.abs(nz)
        lo, hi = mags.min(), mags.max()
        self.int_mode = bool(np.all(nz == np.ceil(nz)))
        self.sci_mode = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4) \
            if PRINT_OPTS.sci_mode is None else PRINT_OPTS.sci_mode
        vals = nz.tolist()
        if self.sci_mode:
            width = max(len(f"{v:.{p}e}") for v in vals)
        elif self.int_mode:
            width = max(len(f"{v:.0f}") for v in vals) + 1
        else:
            width = max(len(f"{v:.{p}f}") for v in vals)
        self.max_width = max(self.max_width, width)

    def width(self):
        return self.max_width

    def format(self, value):
        if self.floating:
            p = PRINT_OPTS.precision
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{p}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _complex_str(value, real_fmt, imag_fmt):
    real = real_fmt.format(value.real)
    imag = (imag_fmt.format(value.imag) + "j").lstrip()
    return real + imag if imag[0] in "+-" else real + "+" + imag


def _vector_str(arr, indent, summarize, fmts):
    real_fmt, imag_fmt = fmts
    element_length = real_fmt.width() + 2
    if imag_fmt is not None:
        element_length += imag_fmt.width() + 1
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))

    def one(v):
        return real_fmt.format(v) if imag_fmt is None else _complex_str(v, real_fmt, imag_fmt)

    edge = PRINT_OPTS.edgeitems
    if summarize and not edge:
        data = ["..."]
    elif summarize and arr.shape[0] > 2 * edge:
        data = [one(v) for v in arr[:edge].tolist()] + [" ..."] + \
            [one(v) for v in arr[-edge:].tolist()]
    else:
        data = [one(v) for v in arr.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _array_str(arr, indent, summarize, fmts):
    if arr.ndim == 0:
        v = arr.item()
        return fmts[0].format(v) if fmts[1] is None else _complex_str(v, *fmts)
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, fmts)
    edge, n = PRINT_OPTS.edgeitems, arr.shape[0]
    if summarize and n > 2 * edge:
        rows = list(range(edge)) + [None] + list(range(n - edge, n))
    else:
        rows = list(range(n))
    slices = ["..." if i is None else _array_str(arr[i], indent + 1, summarize, fmts)
              for i in rows]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _summarized(arr):
    """The elements a summarised print shows (the formatter is fitted to those only)."""
    edge = PRINT_OPTS.edgeitems
    if arr.ndim == 0:
        return arr
    if arr.ndim == 1:
        return np.concatenate([arr[:edge], arr[-edge:]]) if arr.shape[0] > 2 * edge else arr
    if not edge:
        return arr[(slice(0, 0),) * arr.ndim]
    rows = list(range(edge)) + list(range(arr.shape[0] - edge, arr.shape[0])) \
        if arr.shape[0] > 2 * edge else range(arr.shape[0])
    return np.stack([_summarized(arr[i]) for i in rows])


def _values(t):
    """Host values to print: low-precision floats as float32 (exact for bf16/fp16/fp8)."""
    arr = np.asarray(t.__array__())
    if t.dtype.low_precision:
        arr = arr.astype(np.float32)
    return arr


def _body(t, indent):
    arr = _values(t)
    summarize = arr.size > PRINT_OPTS.threshold
    shown = _summarized(arr) if summarize else arr
    if t.dtype.is_complex:
        fmts = (_Formatter(shown.real, True), _Formatter(shown.imag, True))
    else:
        fmts = (_Formatter(shown, t.dtype.is_floating_point), None)
    return _array_str(arr, indent, summarize, fmts)


def _add_suffixes(text, suffixes, indent):
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t, prefix="tensor(") -> str:
    """The PyTorch-style repr of tensor ``t`` (``prefix`` lets Parameter reuse it)."""
    indent = len(prefix)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    default = dt.get_default_dtype()
    shows_dtype = t.dtype not in (default, default.to_complex(), dt.int64, dt.bool)
    if t.numel() == 0:
        if t.ndim != 1:
            suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype is not default:
            suffixes.append(f"dtype=tensorix.{t.dtype.name}")
        text = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(t.shape)}")
        if shows_dtype:
            suffixes.append(f"dtype=tensorix.{t.dtype.name}")
        text = _body(t, indent)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + text, suffixes, indent)
