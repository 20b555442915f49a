"""DataLoader: batches from a dataset through a sampler and a collate function.

Loading runs in the calling process (``num_workers`` is accepted for source compatibility
with PyTorch and ignored): the NumPy/CuPy gathers that build a batch release the GIL, and a
single process keeps every run reproducible and resumable. A loader's position inside an
epoch can be saved (``state_dict``) and restored in a new process (``load_state_dict``).
"""

from __future__ import annotations

import collections.abc
import numbers

import numpy as np

from ..tensor import Tensor
from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert"]


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def default_collate(batch):
    """Stack a list of samples, like PyTorch's: tensors and NumPy arrays -> one stacked
    tensor; Python floats -> float64, ints -> int64, bools -> bool tensors; strings -> list;
    dicts, namedtuples and sequences are collated field by field (a tuple or list sample gives
    a list of batched fields).

    Example: ``default_collate([(x0, 0), (x1, 1)])`` is ``[stack([x0, x1]), tensor([0, 1])]``.
    """
    from ..ops.creation import tensor

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
    from ..ops.creation import tensor

    if isinstance(data, np.ndarray) and data.dtype.kind not in "USO":
        return tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if _is_namedtuple(data):
        return type(data)(*(default_convert(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(default_convert(v) for v in data)
    return data


class DataLoader:
    """Iterate over ``dataset`` in batches.

    ``batch_size`` samples per batch (None: no batching), ``shuffle`` draws a new order each
    epoch from ``generator`` (or the default generator), ``drop_last`` drops a short final
    batch, ``sampler``/``batch_sampler`` replace the index order, ``collate_fn`` turns a
    list of samples into a batch. A dataset with ``__getitems__`` is asked for a whole batch
    at once.

    Example::

        loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True,
                            generator=tensorix.Generator().manual_seed(0))
        for xb, yb in loader: ...

    Fast path: a :class:`TensorDataset` with the default collate is batched by indexing
    its tensors with the whole batch of indices at once (one gather, not ``batch_size``).
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, generator=None, *, prefetch_factor=None,
                 persistent_workers=False):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers option should be non-negative, got "
                             f"{num_workers!r}")
        self.dataset, self.num_workers, self.generator = dataset, num_workers, generator
        self.batch_size, self.drop_last = batch_size, drop_last
        self._iterable = isinstance(dataset, IterableDataset)
        self._skip = 0
        self._yielded = 0
        if self._iterable:
            if shuffle or sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader: an IterableDataset takes no shuffle, sampler or "
                                 "batch_sampler option (it decides its own order)")
            self.sampler = self.batch_sampler = None
        else:
            self._setup_sampling(batch_size, shuffle, sampler, batch_sampler, drop_last,
                                 generator)
        auto = self.batch_sampler is not None or (self._iterable and batch_size is not None)
        self.collate_fn = collate_fn or (default_collate if auto else default_convert)

    def _setup_sampling(self, batch_size, shuffle, sampler, batch_sampler, drop_last,
                        generator):
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler option is mutually exclusive with "
                                 "batch_size, shuffle, sampler, and drop_last")
            self.batch_size, self.drop_last = None, False
            self.sampler, self.batch_sampler = None, batch_sampler
            return
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if batch_size is None and drop_last:
            raise ValueError("DataLoader: batch_size=None option disables auto-batching and is "
                             "mutually exclusive with drop_last")
        if sampler is None:
            sampler = RandomSampler(self.dataset, generator=generator) if shuffle else \
                SequentialSampler(self.dataset)
        self.sampler = sampler
        self.batch_sampler = None if batch_size is None else \
            BatchSampler(sampler, batch_size, drop_last)

    def __iter__(self):
        skip, self._skip, self._yielded = self._skip, 0, 0
        if self._iterable:
            source = self._iter_stream()
        elif self.batch_sampler is None:
            source = (self.collate_fn(self.dataset[i]) for i in self._skipped(self.sampler,
                                                                               skip))
            skip = 0
        else:
            source = self._iter_batches(self._skipped(self.batch_sampler, skip))
            skip = 0
        for item in source:
            if skip:  # an IterableDataset can only be fast-forwarded by reading it
                skip -= 1
                continue
            self._yielded += 1
            yield item

    @staticmethod
    def _skipped(indices, n):
        it = iter(indices)
        for _ in range(n):
            next(it, None)
        return it

    def _iter_batches(self, batches):
        fast = isinstance(self.dataset, TensorDataset) and self.collate_fn is default_collate
        getitems = getattr(self.dataset, "__getitems__", None)
        from ..ops.creation import tensor

        for idx in batches:
            if fast:
                sel = tensor(idx, dtype="int64")
                yield [t[sel] for t in self.dataset.tensors]
            elif getitems is not None:
                yield self.collate_fn(getitems(list(idx)))
            else:
                yield self.collate_fn([self.dataset[i] for i in idx])

    def _iter_stream(self):
        if self.batch_size is None:
            for item in self.dataset:
                yield self.collate_fn(item)
            return
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
            n = len(self.dataset)  # TypeError when the stream has no length, as in PyTorch
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)

    # -- resumable position ------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Where the current epoch stands: batches already yielded, and the sampler's state
        (the generator state the epoch's order was drawn from). Save it with a checkpoint."""
        order = self.batch_sampler if self.batch_sampler is not None else self.sampler
        sd = getattr(order, "state_dict", None)
        return {"batches_yielded": self._yielded, "sampler": sd() if sd is not None else None}

    def load_state_dict(self, state: dict) -> None:
        """Make the next ``iter()`` replay the saved epoch's order and skip the batches that
        were already yielded (indices only: skipped batches are not loaded)."""
        order = self.batch_sampler if self.batch_sampler is not None else self.sampler
        if state.get("sampler") is not None:
            if not hasattr(order, "load_state_dict"):
                raise ValueError(f"DataLoader.load_state_dict: the saved state has sampler "
                                 f"state but this loader's {type(order).__name__} cannot "
                                 "load it")
            order.load_state_dict(state["sampler"])
        self._skip = int(state["batches_yielded"])
