"""DataLoader: batches from a dataset through a sampler and a collate function.

With ``num_workers=0`` batches are loaded in the calling process; with more, in that many
worker processes (``_workers.py``: seeds, sharding, prefetching, in-order delivery, cleanup).
A loader's position inside an epoch can be saved (``state_dict``) and restored in a new
process (``load_state_dict``): the sampler order is replayed and the batches already yielded
are skipped without being loaded.
"""

from __future__ import annotations

from ._fetch import IterableFetcher, MapFetcher
from ._workers import WorkerPool
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert"]

_END = object()


class DataLoader:
    """Iterate over ``dataset`` in batches.

    ``batch_size`` samples per batch (None: no batching), ``shuffle`` draws a new order each
    epoch from ``generator`` (or the default generator), ``drop_last`` drops a short final
    batch, ``sampler``/``batch_sampler`` replace the index order, ``collate_fn`` turns a
    list of samples into a batch. A dataset with ``__getitems__`` is asked for a whole batch
    at once.

    ``num_workers > 0`` loads in that many worker processes (forked, as in PyTorch), each
    seeded ``base_seed + id`` and set up by ``worker_init_fn(id)``; see
    :func:`get_worker_info` to shard an IterableDataset. ``prefetch_factor`` batches are
    requested ahead per worker (default 2), batches arrive in sampler order, ``timeout``
    seconds (0: no limit) bounds the wait for one batch, ``persistent_workers`` keeps the
    workers between epochs, and an exception in a worker is raised here naming the worker
    and the batch's indices. ``pin_memory`` is accepted (batches are host NumPy arrays
    already; a GPU copy is made by ``.to("cuda")``).

    Example::

        loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True,
                            generator=tensorix.Generator().manual_seed(0))
        for xb, yb in loader: ...

    Fast path: a :class:`TensorDataset` with the default collate is batched by indexing
    its tensors with the whole batch of indices at once (one gather, not ``batch_size``).
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None,
                 *, prefetch_factor=None, persistent_workers=False, pin_memory_device=""):
        self._check_worker_options(num_workers, timeout, worker_init_fn, prefetch_factor,
                                   persistent_workers)
        self.dataset, self.num_workers, self.generator = dataset, num_workers, generator
        self.batch_size, self.drop_last = batch_size, drop_last
        self.timeout, self.worker_init_fn = timeout, worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.prefetch_factor = prefetch_factor if num_workers == 0 or prefetch_factor \
            is not None else 2
        self.persistent_workers = persistent_workers
        self.pin_memory, self.pin_memory_device = bool(pin_memory), pin_memory_device
        self._iterable = isinstance(dataset, IterableDataset)
        self._skip = 0  # batches to skip in the next epoch (load_state_dict)
        self._yielded = 0  # position in the current epoch
        self._base_seed = self._resume_seed = None  # the workers' base seed of the epoch
        self._pool = None  # the persistent workers
        if self._iterable:
            if shuffle or sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader: an IterableDataset takes no shuffle, sampler or "
                                 "batch_sampler option (it decides its own order)")
            self.sampler = self.batch_sampler = None
        else:
            self._setup_sampling(batch_size, shuffle, sampler, batch_sampler, drop_last,
                                 generator)
        self._auto_collation = self.batch_sampler is not None or \
            (self._iterable and batch_size is not None)
        self.collate_fn = collate_fn or (default_collate if self._auto_collation
                                         else default_convert)

    @staticmethod
    def _check_worker_options(num_workers, timeout, worker_init_fn, prefetch_factor,
                              persistent_workers):
        if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers option should be non-negative, got "
                             f"{num_workers!r}; use num_workers=0 to disable multiprocessing")
        if not isinstance(timeout, (int, float)) or timeout < 0:
            raise ValueError(f"DataLoader: timeout option should be non-negative, got "
                             f"{timeout!r}")
        if worker_init_fn is not None and not callable(worker_init_fn):
            raise TypeError(f"DataLoader: worker_init_fn should be callable, got "
                            f"{type(worker_init_fn).__name__}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("DataLoader: prefetch_factor option could only be specified in "
                             "multiprocessing; let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None")
        if prefetch_factor is not None and (not isinstance(prefetch_factor, int)
                                            or prefetch_factor < 0):
            raise ValueError(f"DataLoader: prefetch_factor option should be non-negative, got "
                             f"{prefetch_factor!r}")
        if persistent_workers and num_workers == 0:
            raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")

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

    @property
    def _index_sampler(self):
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def __iter__(self):
        skip, self._skip = self._skip, 0
        base_seed, self._resume_seed = self._resume_seed, None
        # the count starts at the resumed position, so a second save/resume is exact too
        self._yielded = skip
        order = None
        if not self._iterable:  # replay the saved order (indices only: nothing is loaded)
            order = self._after(lambda: iter(self._index_sampler), skip)
            if self._yielded == 0:  # the saved epoch was complete: this is a new one
                base_seed = None
        if base_seed is None:
            # drawn whatever num_workers is, as in PyTorch, so that the shuffle does not
            # depend on it; drawn before the sampler's first draw of the epoch
            from ..ops.random import randint

            base_seed = int(randint(0, 1 << 63, (1,), generator=self.generator).item())
        self._base_seed = base_seed
        pool = None
        if self.num_workers:
            pool = self._pool if self._pool is not None and self._pool.alive else \
                WorkerPool(self, base_seed)
            self._pool = pool if self.persistent_workers else None
        try:
            for item in self._batches(order, skip, pool):
                self._yielded += 1
                yield item
        finally:  # also when the loop is left early or fails: no worker outlives its epoch
            if pool is not None and not self.persistent_workers:
                pool.shutdown()

    def _batches(self, order, skip, pool):
        if self._iterable:
            if pool is not None:
                def start():
                    return pool.batches(None)
            else:
                def start():
                    fetcher = IterableFetcher(self.dataset, self._auto_collation,
                                              self.collate_fn, self.batch_size, self.drop_last)
                    return iter(fetcher.fetch, _END)  # fetch raises StopIteration at the end
            return self._after(start, skip)  # a stream is fast-forwarded by reading it
        if pool is not None:
            return pool.batches(order)
        return map(MapFetcher(self.dataset, self._auto_collation, self.collate_fn).fetch, order)

    def _after(self, start, skip):
        """``start()``'s items after the first ``skip``. A saved epoch that ends within them
        was complete: the next epoch (a fresh ``start()``) begins, and ``_yielded`` is 0."""
        if not skip:
            return start()
        it = start()
        for _ in range(skip):
            if next(it, _END) is _END:
                break
        else:
            first = next(it, _END)
            if first is not _END:
                return _prepend(first, it)
        self._yielded = 0
        return start()

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
        sd = getattr(self._index_sampler, "state_dict", None)
        return {"batches_yielded": self._yielded, "sampler": sd() if sd is not None else None,
                "base_seed": self._base_seed}

    def load_state_dict(self, state: dict) -> None:
        """Make the next ``iter()`` replay the saved epoch's order and skip the batches that
        were already yielded (indices only: skipped batches are not loaded)."""
        order = self._index_sampler
        if state.get("sampler") is not None:
            if not hasattr(order, "load_state_dict"):
                raise ValueError(f"DataLoader.load_state_dict: the saved state has sampler "
                                 f"state but this loader's {type(order).__name__} cannot "
                                 "load it")
            order.load_state_dict(state["sampler"])
        self._skip = int(state["batches_yielded"])
        self._resume_seed = state.get("base_seed")  # the resumed epoch's workers seed alike

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown()


def _prepend(first, it):
    yield first
    yield from it
