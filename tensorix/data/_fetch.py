"""How one batch is made from a dataset: the same code runs in the calling process
(``num_workers=0``) and in each worker process."""

from __future__ import annotations

import itertools

from .collate import default_collate
from .dataset import TensorDataset


class MapFetcher:
    """Batches of a map-style dataset, one per list of indices (or one sample per index when
    batching is off)."""

    def __init__(self, dataset, auto_collation, collate_fn):
        self.dataset, self.auto, self.collate_fn = dataset, auto_collation, collate_fn
        # a TensorDataset with the default collate: one gather per tensor, not batch_size
        self.fast = auto_collation and isinstance(dataset, TensorDataset) and \
            collate_fn is default_collate
        self.getitems = getattr(dataset, "__getitems__", None) if auto_collation else None

    def fetch(self, index):
        if not self.auto:
            return self.collate_fn(self.dataset[index])
        if self.fast:
            from ..ops.creation import tensor

            sel = tensor(index, dtype="int64")
            return [t[sel] for t in self.dataset.tensors]
        if self.getitems is not None:
            return self.collate_fn(self.getitems(list(index)))
        return self.collate_fn([self.dataset[i] for i in index])


class IterableFetcher:
    """Batches read from one pass over an IterableDataset; ``fetch()`` raises StopIteration
    at the end of the stream (and keeps raising it)."""

    def __init__(self, dataset, auto_collation, collate_fn, batch_size, drop_last):
        self.it = iter(dataset)
        self.auto, self.collate_fn = auto_collation, collate_fn
        self.batch_size, self.drop_last = batch_size, drop_last
        self.ended = False

    def fetch(self, index=None):
        if self.ended:
            raise StopIteration
        if not self.auto:
            try:
                return self.collate_fn(next(self.it))
            except StopIteration:
                self.ended = True
                raise
        batch = list(itertools.islice(self.it, self.batch_size))
        if len(batch) < self.batch_size:
            self.ended = True
            if not batch or self.drop_last:
                raise StopIteration
        return self.collate_fn(batch)
