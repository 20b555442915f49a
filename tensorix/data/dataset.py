"""Datasets: Dataset, IterableDataset, TensorDataset, StackDataset, Subset, ConcatDataset,
ChainDataset and random_split (PyTorch's semantics)."""

from __future__ import annotations

import bisect
import math
import warnings

from ..ops.random import randperm
from ..tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "Subset",
           "ConcatDataset", "ChainDataset", "random_split"]


class Dataset:
    """A map-style dataset: implement ``__getitem__(i)`` and ``__len__()``.

    Optionally implement ``__getitems__(indices)`` returning the list of samples at once
    (the DataLoader then fetches each batch with one call).
    """

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream-style dataset: implement ``__iter__()``.

    Example::

        class Counter(IterableDataset):
            def __iter__(self):
                return iter(range(10))

        list(DataLoader(Counter(), batch_size=4))  # 3 batches: 4, 4 and 2 items
    """

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the ``i``-th rows of the given tensors (all with the same first dim).

    Example: ``TensorDataset(x, y)[3] == (x[3], y[3])``.
    """

    def __init__(self, *tensors: Tensor):
        if not tensors:
            raise ValueError("TensorDataset(): needs at least one tensor")
        if any(not isinstance(t, Tensor) for t in tensors):
            raise TypeError(f"TensorDataset(): expected tensors, got "
                            f"{[type(t).__name__ for t in tensors]}")
        n = tensors[0].shape[0] if tensors[0].ndim else None
        if any(t.ndim == 0 or t.shape[0] != n for t in tensors):
            raise ValueError(f"TensorDataset(): size mismatch between tensors: first dims "
                             f"{[t.shape[0] if t.ndim else None for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class StackDataset(Dataset):
    """Samples of several equally long datasets side by side: a tuple for positional
    datasets, a dict for keyword ones.

    Example: ``StackDataset(images, labels)[i] == (images[i], labels[i])``;
    ``StackDataset(x=images, y=labels)[i] == {"x": images[i], "y": labels[i]}``.
    """

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("StackDataset: datasets are given either positionally (tuple "
                             "samples) or by keyword (dict samples), not both")
        if not args and not kwargs:
            raise ValueError("StackDataset: at least one dataset should be passed")
        self.datasets = args or kwargs
        sizes = [len(d) for d in (args or kwargs.values())]
        if any(k != sizes[0] for k in sizes):
            raise ValueError(f"StackDataset: size mismatch between datasets: {sizes}")
        self._length = sizes[0]

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices):
        """A batch at once: each dataset's own ``__getitems__`` where it has one."""
        def column(d):
            getitems = getattr(d, "__getitems__", None)
            rows = getitems(list(indices)) if getitems is not None else [d[i] for i in indices]
            if len(rows) != len(indices):
                raise ValueError(f"StackDataset: nested __getitems__ returned {len(rows)} "
                                 f"samples for {len(indices)} indices")
            return rows

        if isinstance(self.datasets, dict):
            cols = {k: column(d) for k, d in self.datasets.items()}
            return [{k: c[j] for k, c in cols.items()} for j in range(len(indices))]
        cols = [column(d) for d in self.datasets]
        return [tuple(c[j] for c in cols) for j in range(len(indices))]

    def __len__(self):
        return self._length


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``. Example: ``Subset(ds, range(100))``."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, [int(i) for i in indices]

    def __getitem__(self, i):
        if isinstance(i, list):
            return self.__getitems__(i)
        return self.dataset[self.indices[i]]

    def __getitems__(self, idx):
        inner = [self.indices[j] for j in idx]
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems is not None:
            return getitems(inner)
        return [self.dataset[j] for j in inner]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """Map-style datasets one after another. Example: ``ConcatDataset([train, extra])``."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset: does not support IterableDataset (use "
                                "ChainDataset)")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, i):
        n = len(self)
        if i < 0:
            if -i > n:
                raise ValueError(f"ConcatDataset: absolute value of index {i} should not "
                                 f"exceed dataset length {n}")
            i += n
        if i >= n:
            raise IndexError(f"ConcatDataset: index {i} out of range for length {n}")
        k = bisect.bisect_right(self.cumulative_sizes, i)
        start = self.cumulative_sizes[k - 1] if k else 0
        return self.datasets[k][i - start]


class ChainDataset(IterableDataset):
    """Iterable datasets streamed one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError("ChainDataset: only supports IterableDataset")
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


def _fraction_lengths(n, fractions):
    """PyTorch's rule: floor each share, then hand out the remainder round-robin."""
    sizes = [int(math.floor(n * f)) for f in fractions]
    for i in range(n - sum(sizes)):
        sizes[i % len(sizes)] += 1
    for i, k in enumerate(sizes):
        if k == 0:
            warnings.warn(f"random_split(): length of split at index {i} is 0; this might "
                          "result in an empty dataset", UserWarning, stacklevel=3)
    return sizes


def random_split(dataset, lengths, generator=None):
    """Split into non-overlapping random subsets of the given lengths, or of the given
    fractions (summing to 1: floors, then the remainder one by one from the first split).

    Example: ``train, val = random_split(ds, [0.8, 0.2], generator=tensorix.Generator()
    .manual_seed(0))``.
    """
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1 and not all(
            isinstance(k, int) for k in lengths):
        for i, f in enumerate(lengths):
            if f < 0 or f > 1:
                raise ValueError(f"random_split(): fraction at index {i} is not between 0 "
                                 f"and 1: {f}")
        lengths = _fraction_lengths(n, lengths)
    if any(not isinstance(k, int) or k < 0 for k in lengths):
        raise ValueError(f"random_split(): lengths must be non-negative integers or fractions "
                         f"summing to 1, got {lengths}")
    if sum(lengths) != n:
        raise ValueError(f"random_split(): sum of input lengths ({sum(lengths)}) does not equal "
                         f"the length of the input dataset ({n})")
    perm = randperm(n, generator=generator).tolist()
    out, start = [], 0
    for k in lengths:
        out.append(Subset(dataset, perm[start:start + k]))
        start += k
    return out
