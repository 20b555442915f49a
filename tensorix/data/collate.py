"""Collate functions: how a list of samples becomes a batch (PyTorch's rules)."""

from __future__ import annotations

import collections.abc
import numbers

import numpy as np

from ..ops.creation import tensor
from ..tensor import Tensor

__all__ = ["default_collate", "default_convert"]


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def default_collate(batch):
    """Stack a list of samples, like PyTorch's: tensors and NumPy arrays -> one stacked
    tensor; Python floats -> float64, ints -> int64, bools -> bool tensors; strings -> list;
    dicts, namedtuples and sequences are collated field by field (a tuple or list sample gives
    a list of batched fields).

    Example: ``default_collate([(x0, 0), (x1, 1)])`` is ``[stack([x0, x1]), tensor([0, 1])]``.
    """
    first = batch[0]
    if isinstance(first, Tensor):
        from ..ops.shape import stack

        return stack(batch, 0)
    if isinstance(first, np.ndarray):
        if first.dtype.kind in "USO":
            raise TypeError(f"default_collate: NumPy arrays of dtype {first.dtype} cannot be "
                            "collated into a tensor")
        return tensor(np.stack(batch))
    if isinstance(first, np.generic):
        return tensor(np.array(batch))
    if isinstance(first, bool):
        return tensor(batch, dtype="bool")
    if isinstance(first, numbers.Integral):
        return tensor(batch, dtype="int64")
    if isinstance(first, numbers.Real):
        return tensor(batch, dtype="float64")
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, collections.abc.Mapping):
        return {k: default_collate([b[k] for b in batch]) for k in first}
    if _is_namedtuple(first):
        return type(first)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(first, collections.abc.Sequence):
        if any(len(b) != len(first) for b in batch):
            raise RuntimeError("default_collate: each element in list of batch should be of "
                               "equal size")
        return [default_collate(list(s)) for s in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, "
                    f"dicts or lists; found {type(first).__name__}")


def default_convert(data):
    """Convert NumPy arrays (also inside dicts/sequences) to tensors, leaving the rest; the
    collate function used when batching is disabled (``batch_size=None``)."""
    if isinstance(data, np.ndarray) and data.dtype.kind not in "USO":
        return tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if _is_namedtuple(data):
        return type(data)(*(default_convert(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(default_convert(v) for v in data)
    return data
