"""Turn registry samples into tensorix / torch arguments, shared by the op tests."""

from __future__ import annotations

import numpy as np

import tensorix as tx

try:
    import torch
except ImportError:  # the oracle tests skip cleanly without torch
    torch = None

TORCH_DTYPES = {}
if torch is not None:
    TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64,
                    "float16": torch.float16, "bfloat16": torch.bfloat16,
                    "complex64": torch.complex64, "complex128": torch.complex128}


def grad_positions(sample):
    if sample.grad is not None:
        return set(sample.grad)
    return {i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray) and
            a.dtype.kind in "fc"}


def _cast(a, dtype):
    if a.dtype.kind == "f" and dtype.category == 1:  # integer runs: small integers
        return np.round(a * 3).astype(dtype.np)
    if a.dtype.kind == "f" and dtype.is_floating_point:
        return a.astype(dtype.np)
    if a.dtype.kind in "fc" and dtype.is_complex:
        return a.astype(dtype.np)
    return a


def _convert(x, fn):
    if isinstance(x, np.ndarray):
        return fn(x)
    if isinstance(x, (list, tuple)) and x and all(isinstance(e, np.ndarray) for e in x):
        return type(x)(fn(e) for e in x)
    return x


def tx_args(sample, dtype, requires_grad=False):
    pos = grad_positions(sample) if requires_grad else set()

    def one(i, a):
        def make(arr):
            arr = _cast(arr, dtype)
            return tx.tensor(arr, requires_grad=(i in pos and arr.dtype.kind in "fc"
                                                 or i in pos and "float" in arr.dtype.name))
        return _convert(a, make)

    args = [one(i, a) for i, a in enumerate(sample.args)]
    kwargs = {k: _convert(v, lambda arr: tx.tensor(_cast(arr, dtype)))
              for k, v in sample.kwargs.items()}
    return args, kwargs


def np_args(sample, dtype):
    """Reference inputs: the dtype-rounded values, in float64 for low-precision dtypes."""
    def conv(arr):
        arr = _cast(arr, dtype)
        if dtype.low_precision or dtype.name == "float16":
            return arr.astype(np.float64) if arr.dtype.kind not in "biu" else arr
        return arr

    return ([_convert(a, conv) for a in sample.args],
            {k: _convert(v, conv) for k, v in sample.kwargs.items()})


def torch_args(sample, dtype, requires_grad=False):
    pos = grad_positions(sample) if requires_grad else set()

    def one(i, a):
        def make(arr):
            arr = _cast(arr, dtype)
            if arr.dtype.kind in "fcV" or "float" in arr.dtype.name:
                t = torch.tensor(np.asarray(arr, dtype=np.complex128 if arr.dtype.kind == "c"
                                            else np.float64)).to(TORCH_DTYPES[dtype.name])
                return t.requires_grad_(i in pos)
            return torch.from_numpy(np.array(arr))
        return _convert(a, make)

    args = [one(i, a) for i, a in enumerate(sample.args)]
    kwargs = {k: _convert(v, lambda arr: torch.from_numpy(np.array(_cast(arr, dtype))))
              for k, v in sample.kwargs.items()}
    return args, kwargs


def outputs(out, post=None):
    if post is not None:
        out = post(out)
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]
