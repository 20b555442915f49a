"""DataLoader: batches from a dataset through a sampler and a collate function."""

from __future__ import annotations

import numbers

import numpy as np

from ..tensor import Tensor
from .dataset import BatchSampler, IterableDataset, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "default_collate"]


def default_collate(batch):
    """Stack a list of samples: tensors -> stacked tensor, numbers -> tensor, tuples/dicts
    collated field by field (like PyTorch's)."""
    from ..ops.creation import tensor

    first = batch[0]
    if isinstance(first, Tensor):
        from ..ops.shape import stack

        return stack(batch, 0)
    if isinstance(first, np.ndarray):
        return tensor(np.stack(batch))
    if isinstance(first, (bool, numbers.Number, np.generic)):
        return tensor(batch)
    if isinstance(first, str):
        return list(batch)
    if isinstance(first, dict):
        return {k: default_collate([b[k] for b in batch]) for k in first}
    if isinstance(first, (tuple, list)):
        if any(len(b) != len(first) for b in batch):
            raise RuntimeError("default_collate: each element in list of batch should be of "
                               "equal size")
        return type(first)(default_collate(list(s)) for s in zip(*batch)) \
            if isinstance(first, tuple) else [default_collate(list(s)) for s in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, "
                    f"dicts or lists; found {type(first).__name__}")


class DataLoader:
    """Iterate over ``dataset`` in batches.

    Example::

        loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True,
                            generator=tensorix.Generator().manual_seed(0))
        for xb, yb in loader: ...

    Fast path: a :class:`TensorDataset` with the default collate is batched by indexing
    its tensors with the whole batch of indices at once (one gather, not ``batch_size``).
    """

    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, drop_last=False, generator=None):
        self.dataset = dataset
        self.collate_fn = collate_fn or default_collate
        self.batch_size, self.drop_last = batch_size, drop_last
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle or sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader: an IterableDataset takes no shuffle or sampler")
            self.batch_sampler = None
            return
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler option is mutually exclusive with "
                                 "batch_size, shuffle, sampler, and drop_last")
            self.batch_sampler = batch_sampler
            return
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else \
                SequentialSampler(dataset)
        self.sampler = sampler
        self.batch_sampler = None if batch_size is None else \
            BatchSampler(sampler, batch_size, drop_last)

    def __iter__(self):
        if self._iterable:
            yield from self._iter_stream()
            return
        from .dataset import TensorDataset

        fast = isinstance(self.dataset, TensorDataset) and self.collate_fn is default_collate
        for idx in self.batch_sampler:
            if fast:
                from ..ops.creation import tensor

                sel = tensor(idx)
                yield tuple(t[sel] for t in self.dataset.tensors)
            else:
                yield self.collate_fn([self.dataset[i] for i in idx])

    def _iter_stream(self):
        batch = []
        for item in self.dataset:
            batch.append(item)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self):
        if self._iterable:
            raise TypeError("DataLoader: an IterableDataset has no len()")
        return len(self.batch_sampler)
