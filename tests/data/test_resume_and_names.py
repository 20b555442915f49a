"""Resuming a DataLoader (twice, and from an epoch's end), the lazy endless RandomSampler,
and torch.utils.data's names under tensorix.utils.data."""

import pytest

import tensorix as tx
from tensorix.data import (
    DataLoader,
    DistributedSampler,
    RandomSampler,
    StackDataset,
    TensorDataset,
)
from tensorix.data.sampler import _CHUNK


def _ds(n=11):
    return TensorDataset(tx.arange(n * 2, dtype=tx.float32).reshape(n, 2), tx.arange(n))


def _make(kind, workers):
    if kind == "generator":
        return DataLoader(_ds(), batch_size=3, shuffle=True, num_workers=workers,
                          generator=tx.Generator().manual_seed(5))
    return DataLoader(_ds(), batch_size=3, shuffle=kind == "default", num_workers=workers)


def _take(it, n):
    return [next(it)[1].tolist() for _ in range(n)]


@pytest.mark.parametrize("kind, workers", [("generator", 0), ("default", 0),
                                           ("sequential", 0), ("generator", 2)])
def test_resuming_twice_continues_where_the_second_run_stopped(kind, workers):
    """Run 1 stops after 1 batch, run 2 resumes and stops after 2 more, run 3 finishes: the
    three together are the uninterrupted epoch (batches_yielded counts from the epoch start,
    not from the resume)."""
    tx.manual_seed(0)
    straight = [b[1].tolist() for b in _make(kind, workers)]

    tx.manual_seed(0)
    loader = _make(kind, workers)
    got = _take(iter(loader), 1)
    state, rng = loader.state_dict(), tx.get_rng_state()
    for n in (2, None):
        tx.manual_seed(99)  # a new process...
        loader = _make(kind, workers)
        tx.set_rng_state(rng)  # ...restoring the checkpoint
        loader.load_state_dict(state)
        it = iter(loader)
        got += _take(it, n) if n else [b[1].tolist() for b in it]
        state, rng = loader.state_dict(), tx.get_rng_state()
        del it
    assert state["batches_yielded"] == len(straight) == 4
    assert got == straight


@pytest.mark.parametrize("kind, workers", [("generator", 0), ("default", 0),
                                           ("sequential", 0), ("generator", 2)])
@pytest.mark.parametrize("when", ["last batch", "after the loop"])
def test_resuming_from_the_end_of_an_epoch_starts_the_next(kind, workers, when):
    tx.manual_seed(0)
    loader = _make(kind, workers)
    straight = [[b[1].tolist() for b in loader] for _ in range(2)]

    tx.manual_seed(0)
    loader = _make(kind, workers)
    first = []
    for b in loader:
        first.append(b[1].tolist())
        if when == "last batch" and len(first) == len(loader):  # saved inside the loop
            state, rng = loader.state_dict(), tx.get_rng_state()
    if when == "after the loop":
        state, rng = loader.state_dict(), tx.get_rng_state()
    assert first == straight[0]

    tx.manual_seed(123)
    fresh = _make(kind, workers)
    tx.set_rng_state(rng)
    fresh.load_state_dict(state)
    assert [b[1].tolist() for b in fresh] == straight[1]
    assert fresh.state_dict()["batches_yielded"] == 4


def test_resuming_an_iterable_dataset_from_its_end_starts_a_new_pass():
    from tensorix.data import IterableDataset

    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(5))

    loader = DataLoader(Stream(), batch_size=2)
    list(loader)
    fresh = DataLoader(Stream(), batch_size=2)
    fresh.load_state_dict(loader.state_dict())
    assert [b.tolist() for b in fresh] == [[0, 1], [2, 3], [4]]


def test_endless_random_sampler_draws_lazily():
    """The common "endless loader" idiom: 1e10 draws must not be made up front."""
    sampler = RandomSampler(range(7), replacement=True, num_samples=int(1e10),
                            generator=tx.Generator().manual_seed(0))
    assert len(sampler) == int(1e10)
    it = iter(sampler)
    first = [next(it) for _ in range(10)]
    assert first == tx.randint(0, 7, (10,), generator=tx.Generator().manual_seed(0)).tolist()
    loader = DataLoader(range(7), batch_size=4, sampler=sampler)
    assert len(next(iter(loader))) == 4


@pytest.mark.parametrize("n", [1, _CHUNK, 2 * _CHUNK + 5])
def test_chunked_draws_are_the_stream_of_one_draw(n):
    """The same generator seed gives the same indices as drawing them all at once."""
    sampler = RandomSampler(range(1000), replacement=True, num_samples=n,
                            generator=tx.Generator().manual_seed(3))
    want = tx.randint(0, 1000, (n,), generator=tx.Generator().manual_seed(3)).tolist()
    assert list(sampler) == want


def test_torch_utils_data_names():
    torch_data = pytest.importorskip("torch.utils.data")
    import tensorix.utils.data
    from tensorix.utils.data import DataLoader as Loader

    assert Loader is DataLoader and tx.utils.data is tensorix.utils.data
    datapipes = {"DFIterDataPipe", "DataChunk", "IterDataPipe", "MapDataPipe",
                 "functional_datapipe", "guaranteed_datapipes_determinism",
                 "non_deterministic", "argument_validation", "runtime_validation",
                 "runtime_validation_disabled"}  # torch's deprecated DataPipes
    wanted = {n for n in torch_data.__all__ if not n.startswith("_")} - datapipes
    assert wanted <= set(tensorix.utils.data.__all__)
    for name in tensorix.utils.data.__all__:
        assert getattr(tensorix.utils.data, name) is getattr(tx.data, name)


def test_stack_dataset_like_torch():
    torch_data = pytest.importorskip("torch.utils.data")
    a, b = list(range(4)), [x * 10 for x in range(4)]
    mine, ref = StackDataset(a, b), torch_data.StackDataset(a, b)
    assert [mine[i] for i in range(4)] == [ref[i] for i in range(4)]
    assert mine.__getitems__([2, 0]) == ref.__getitems__([2, 0])
    kw, ref_kw = StackDataset(x=a, y=b), torch_data.StackDataset(x=a, y=b)
    assert kw[1] == ref_kw[1] and len(kw) == len(ref_kw) == 4
    assert kw.__getitems__([3, 1]) == ref_kw.__getitems__([3, 1])
    batch = next(iter(DataLoader(StackDataset(x=_ds(4), y=a), batch_size=4)))
    assert batch["y"].tolist() == a
    with pytest.raises(ValueError, match="size mismatch"):
        StackDataset(a, b[:2])
    with pytest.raises(ValueError, match="not both"):
        StackDataset(a, y=b)
    with pytest.raises(ValueError, match="at least one dataset"):
        StackDataset()


@pytest.mark.parametrize("n, replicas, drop_last", [(10, 3, False), (10, 3, True),
                                                    (2, 4, False), (12, 4, True)])
def test_distributed_sampler_like_torch(n, replicas, drop_last):
    torch_data = pytest.importorskip("torch.utils.data")
    for rank in range(replicas):
        mine = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        ref = torch_data.DistributedSampler(range(n), replicas, rank, shuffle=False,
                                            drop_last=drop_last)
        assert list(mine) == list(ref) and len(mine) == len(ref)
    # shuffled: the ranks' shares partition one permutation that set_epoch changes
    shares = [list(DistributedSampler(range(12), 3, r, seed=1)) for r in range(3)]
    assert sorted(sum(shares, [])) == list(range(12))
    s = DistributedSampler(range(12), 3, 0, seed=1)
    s.set_epoch(1)
    assert list(s) != shares[0]


def test_distributed_sampler_errors(monkeypatch):
    for var in ("WORLD_SIZE", "RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ValueError, match="pass num_replicas and rank"):
        DistributedSampler(range(4))
    with pytest.raises(ValueError, match="invalid rank 3"):
        DistributedSampler(range(4), num_replicas=2, rank=3)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    assert list(DistributedSampler(range(4), shuffle=False)) == [1, 3]
