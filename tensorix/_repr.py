"""``repr`` of a tensor in PyTorch's style: ``tensor([1.0000, 2.5000], requires_grad=True)``.

Floats print as integers with a trailing dot when every value is integral, in scientific
notation when magnitudes span more than 1e3 (or exceed 1e8 / fall below 1e-4), and with four
decimals otherwise; large tensors are summarised with ``...`` like PyTorch.
"""

from __future__ import annotations

import numpy as np

from . import dtypes as dt

_DEFAULT_SHOWN = ("float32", "int64", "bool", "complex64")


def _float_formatter(values):
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return lambda v: f"{v:.4f}".replace("inf", "inf")
    mags = np.abs(finite)
    nz = mags[mags > 0]
    if np.all(finite == np.round(finite)) and (nz.size == 0 or nz.max() < 1e8):
        return lambda v: f"{v:.0f}." if np.isfinite(v) else f"{v}"
    if nz.size and (nz.max() / nz.min() > 1000 or nz.max() > 1e8 or nz.min() < 1e-4):
        return lambda v: f"{v:.4e}"
    return lambda v: f"{v:.4f}"


def _body(arr, dtype):
    summarize = arr.size > 1000
    kw = dict(separator=", ", prefix="tensor(", threshold=1000 if summarize else arr.size + 1,
              edgeitems=3, max_line_width=80)
    if dtype.category == 2:
        vals = arr.astype(np.float64)
        fmt = _float_formatter(vals.ravel())
        return np.array2string(vals, formatter={"float_kind": fmt}, **kw)
    if dtype.category == 3:
        re = _float_formatter(np.concatenate([arr.real.ravel(), arr.imag.ravel()]))
        return np.array2string(arr, formatter={
            "complex_kind": lambda v: f"{re(v.real)}{'+' if v.imag >= 0 else '-'}"
                                      f"{re(abs(v.imag))}j"}, **kw)
    return np.array2string(arr, **kw)


def tensor_repr(t) -> str:
    arr = np.asarray(t.__array__())
    extras = []
    if arr.size == 0 and arr.ndim != 1:
        body = "[]"
        extras.append(f"size={tuple(arr.shape)}")
    elif arr.ndim == 0:
        body = _body(arr.reshape(1), t.dtype)[1:-1]
    else:
        body = _body(arr, t.dtype)
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    if t.dtype.name not in _DEFAULT_SHOWN or (t.dtype.name == "float32" and
                                              dt.get_default_dtype() is not dt.float32):
        extras.append(f"dtype=tensorix.{t.dtype.name}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + ", ".join([body] + extras) + ")"
