"""Samplers: which indices a DataLoader fetches, in which order, grouped into batches.

RandomSampler is *resumable*: it remembers the generator state its current epoch's order was
drawn from, so ``DataLoader.state_dict()`` can restore a half-finished epoch in a new
process and continue with exactly the batches an uninterrupted run would have seen.
"""

from __future__ import annotations

import math
import os

from ..ops.creation import tensor
from ..ops.random import Generator, multinomial, randint, randperm

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "DistributedSampler"]

_SEED_BOUND = 1 << 63
_CHUNK = 1 << 16  # draws per call when sampling with replacement (the same stream as one call)


class Sampler:
    """Yields indices into a dataset (implement ``__iter__``, and ``__len__`` if known)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class _EpochRng:
    """The generator of one epoch: ``generator`` itself, or (for None) a fresh one seeded by
    one draw from the default generator, like PyTorch's samplers. Its state at the start of
    the epoch is kept so that the epoch can be replayed (``state_dict``/``load_state_dict``)."""

    def __init__(self, generator):
        self.generator = generator
        self.epoch_state = None
        self._resume = None

    def start_epoch(self):
        if self._resume is not None:
            gen = self.generator if self.generator is not None else Generator()
            gen.set_state(self._resume)
            self._resume = None
        elif self.generator is not None:
            gen = self.generator
        else:
            seed = int(randint(0, _SEED_BOUND, (1,)).item())
            gen = Generator().manual_seed(seed)
        self.epoch_state = gen.get_state()
        return gen

    def state_dict(self):
        return {"epoch_rng_state": self.epoch_state}

    def load_state_dict(self, state):
        self._resume = state["epoch_rng_state"]


class _EpochSampler(Sampler):
    """A sampler whose order is drawn each epoch from an :class:`_EpochRng`, so that a
    half-finished epoch can be replayed."""

    def __init__(self, generator):
        self.generator = generator
        self._rng = _EpochRng(generator)

    def state_dict(self):
        """The generator state the current epoch's order was drawn from."""
        return self._rng.state_dict()

    def load_state_dict(self, state):
        """Replay that epoch's order on the next ``iter()``."""
        self._rng.load_state_dict(state)


class RandomSampler(_EpochSampler):
    """A random permutation each epoch (or ``num_samples`` draws with ``replacement``), from
    ``generator`` (reproducible) or from the default generator's stream."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler: replacement should be a boolean value, but got "
                            f"replacement={replacement!r}")
        self.data_source, self.replacement = data_source, replacement
        self._num_samples = num_samples
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"RandomSampler: num_samples should be a positive integer value, "
                             f"but got num_samples={self.num_samples!r}")
        super().__init__(generator)

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        gen = self._rng.start_epoch()
        n = len(self.data_source)
        if self.replacement:  # in chunks: the endless-loader idiom asks for ~1e10 draws
            for start in range(0, self.num_samples, _CHUNK):
                size = min(_CHUNK, self.num_samples - start)
                yield from randint(0, n, (size,), generator=gen).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from randperm(n, generator=gen).tolist()
        yield from randperm(n, generator=gen).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(_EpochSampler):
    """The given ``indices`` in a random order each epoch."""

    def __init__(self, indices, generator=None):
        self.indices = list(indices)
        super().__init__(generator)

    def __iter__(self):
        gen = self._rng.start_epoch()
        for i in randperm(len(self.indices), generator=gen).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(_EpochSampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``.

    Example (balance two classes): ``WeightedRandomSampler([0.1] * 900 + [0.9] * 100,
    num_samples=1000)``.
    """

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or \
                num_samples <= 0:
            raise ValueError(f"WeightedRandomSampler: num_samples should be a positive integer "
                             f"value, but got num_samples={num_samples!r}")
        if not isinstance(replacement, bool):
            raise ValueError(f"WeightedRandomSampler: replacement should be a boolean value, "
                             f"but got replacement={replacement!r}")
        self.weights = tensor(weights, dtype="float64")
        if self.weights.ndim != 1:
            raise ValueError(f"WeightedRandomSampler: weights should be a 1d sequence but "
                             f"given weights have shape {tuple(self.weights.shape)}")
        self.num_samples, self.replacement = num_samples, replacement
        super().__init__(generator)

    def __iter__(self):
        gen = self._rng.start_epoch()
        yield from multinomial(self.weights, self.num_samples, self.replacement,
                               generator=gen).tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Group another sampler's indices into lists of ``batch_size``.

    Example: ``list(BatchSampler(SequentialSampler(range(5)), 2, drop_last=False))`` is
    ``[[0, 1], [2, 3], [4]]``.
    """

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"BatchSampler: batch_size should be a positive integer value, "
                             f"but got batch_size={batch_size!r}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"BatchSampler: drop_last should be a boolean value, but got "
                             f"drop_last={drop_last!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def state_dict(self):
        sd = getattr(self.sampler, "state_dict", None)
        return {"sampler": sd() if sd is not None else None}

    def load_state_dict(self, state):
        if state.get("sampler") is not None:
            self.sampler.load_state_dict(state["sampler"])


def _launcher_env(names):
    """The first of ``names`` set in the environment, as an int (set by torchrun / mpiexec)."""
    for name in names:
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return None


class DistributedSampler(Sampler):
    """The share of the dataset's indices that one of ``num_replicas`` processes reads
    (PyTorch's rule): the order (a permutation seeded by ``seed + epoch`` when ``shuffle``)
    is padded by repeating its start to a multiple of ``num_replicas`` (or cut, with
    ``drop_last``), and rank ``r`` takes every ``num_replicas``-th index from ``r``.
    ``num_replicas`` and ``rank`` default to the launcher's environment (``WORLD_SIZE`` /
    ``RANK``, or Open MPI's ``OMPI_COMM_WORLD_SIZE`` / ``OMPI_COMM_WORLD_RANK``). Call
    ``set_epoch(e)`` before each epoch for a new shuffle.

    Example: ``list(DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False))``
    is ``[1, 3, 0]``.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None:
            num_replicas = _launcher_env(("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"))
        if rank is None:
            rank = _launcher_env(("RANK", "OMPI_COMM_WORLD_RANK"))
        if num_replicas is None or rank is None:
            raise ValueError("DistributedSampler: pass num_replicas and rank (no launcher "
                             "environment WORLD_SIZE/RANK or OMPI_COMM_WORLD_SIZE/RANK found)")
        if not isinstance(num_replicas, int) or num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas should be a positive integer, "
                             f"got {num_replicas!r}")
        if not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler: invalid rank {rank!r}, rank should be in "
                             f"the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            gen = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=gen).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        elif self.total_size > n and indices:
            pad = self.total_size - n
            indices += (indices * math.ceil(pad / n))[:pad]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch`` in the shuffle's seed (call it before each epoch's ``iter()``)."""
        self.epoch = epoch
