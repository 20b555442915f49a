"""DataLoader, samplers, datasets, random_split and Subset."""

from collections import namedtuple

import numpy as np
import pytest

import tensorix as tx
from tensorix.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    random_split,
)


def _ds(n=10):
    x = tx.arange(n * 2, dtype=tx.float32).reshape(n, 2)
    y = tx.arange(n)
    return TensorDataset(x, y)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return {"i": i, "sq": float(i * i), "name": f"s{i}", "vec": np.full(3, i, np.int32)}


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))


def _ys(loader):
    return [b[1].tolist() for b in loader]


def test_batches_and_len():
    loader = DataLoader(_ds(10), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [tuple(b[0].shape) for b in batches] == [(4, 2), (4, 2), (2, 2)]
    assert _ys(loader) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][1].dtype == tx.int64 and batches[0][0].dtype == tx.float32
    np.testing.assert_array_equal(batches[2][0].numpy(), [[16, 17], [18, 19]])


def test_drop_last():
    loader = DataLoader(_ds(10), batch_size=4, drop_last=True)
    assert len(loader) == 2 and _ys(loader) == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_shuffle_reproducible_with_seeded_generator():
    def orders(seed, epochs=3):
        loader = DataLoader(_ds(10), batch_size=3, shuffle=True,
                            generator=tx.Generator().manual_seed(seed))
        return [sum(_ys_epoch(loader), []) for _ in range(epochs)]

    def _ys_epoch(loader):
        return [b[1].tolist() for b in loader]

    a, b = orders(7), orders(7)
    assert a == b  # same seed: same order, epoch by epoch
    assert all(sorted(e) == list(range(10)) for e in a)  # each epoch a permutation
    assert a[0] != a[1]  # a new order every epoch
    assert orders(8) != a


def test_shuffle_uses_default_generator_when_none_given():
    tx.manual_seed(3)
    first = sum(_ys(DataLoader(_ds(12), batch_size=5, shuffle=True)), [])
    tx.manual_seed(3)
    again = sum(_ys(DataLoader(_ds(12), batch_size=5, shuffle=True)), [])
    assert first == again and sorted(first) == list(range(12)) and first != list(range(12))


def test_collate_fn_and_dict_samples():
    loader = DataLoader(Squares(5), batch_size=2)
    b = next(iter(loader))
    assert b["i"].tolist() == [0, 1] and b["i"].dtype == tx.int64
    assert b["sq"].dtype == tx.float64 and b["sq"].tolist() == [0.0, 1.0]
    assert b["name"] == ["s0", "s1"]
    assert b["vec"].dtype == tx.int32 and tuple(b["vec"].shape) == (2, 3)
    custom = DataLoader(Squares(5), batch_size=2, collate_fn=lambda s: [d["name"] for d in s])
    assert list(custom) == [["s0", "s1"], ["s2", "s3"], ["s4"]]


def test_default_collate_matches_torch_structure():
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate

    Pair = namedtuple("Pair", "a b")
    samples = [(np.float32(i), [i, float(i) / 2], Pair(i, True), {"k": np.arange(2) + i})
               for i in range(3)]
    ours, theirs = default_collate(samples), torch_collate(samples)

    def compare(a, b):
        if isinstance(b, torch.Tensor):
            assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        elif isinstance(b, dict):
            assert a.keys() == b.keys()
            for k in b:
                compare(a[k], b[k])
        else:
            assert type(a) is type(b) and len(a) == len(b)
            for x, y in zip(a, b):
                compare(x, y)

    compare(ours, theirs)


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors"):
        default_collate([object(), object()])


class Reversed(Sampler):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n - 1, -1, -1))

    def __len__(self):
        return self.n


def test_custom_sampler():
    loader = DataLoader(_ds(5), batch_size=2, sampler=Reversed(5))
    assert _ys(loader) == [[4, 3], [2, 1], [0]]


def test_batch_sampler():
    loader = DataLoader(_ds(6), batch_sampler=[[5, 0], [1, 2, 3], [4]])
    assert _ys(loader) == [[5, 0], [1, 2, 3], [4]]
    bs = BatchSampler(SequentialSampler(range(5)), 2, drop_last=False)
    assert list(bs) == [[0, 1], [2, 3], [4]] and len(bs) == 3
    assert [b["i"].tolist() for b in DataLoader(Squares(5), batch_sampler=bs)] == \
        [[0, 1], [2, 3], [4]]


@pytest.mark.parametrize("kwargs,match", [
    (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
    (dict(batch_sampler=[[0]], shuffle=True), "batch_sampler option is mutually exclusive"),
    (dict(sampler=[0, 1], shuffle=True), "sampler option is mutually exclusive with shuffle"),
    (dict(batch_size=None, drop_last=True), "mutually exclusive with drop_last"),
    (dict(num_workers=-1), "num_workers option should be non-negative"),
    (dict(batch_size=0), "BatchSampler: batch_size should be a positive integer"),
])
def test_loader_argument_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DataLoader(_ds(4), **kwargs)


def test_iterable_dataset():
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5],
                                                                        [6]]
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3, drop_last=True)] == \
        [[0, 1, 2], [3, 4, 5]]
    assert list(DataLoader(Stream(3), batch_size=None)) == [0, 1, 2]
    with pytest.raises(ValueError, match="an IterableDataset takes no shuffle"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(TypeError):
        len(DataLoader(Stream(3)))
    chained = ChainDataset([Stream(2), Stream(3)])
    assert [b.tolist() for b in DataLoader(chained, batch_size=4)] == [[0, 1, 0, 1], [2]]


def test_batch_size_none_converts_without_batching():
    loader = DataLoader(Squares(3), batch_size=None)
    items = list(loader)
    assert len(loader) == 3 and [d["i"] for d in items] == [0, 1, 2]
    assert isinstance(items[1]["vec"], tx.Tensor) and items[1]["vec"].tolist() == [1, 1, 1]


def test_dataset_with_getitems_gets_whole_batches():
    calls = []

    class Batched(Squares):
        def __getitems__(self, idx):
            calls.append(list(idx))
            return [self[i] for i in idx]

    out = list(DataLoader(Batched(5), batch_size=2))
    assert calls == [[0, 1], [2, 3], [4]] and out[2]["i"].tolist() == [4]


def test_random_split_lengths_and_fractions():
    torch = pytest.importorskip("torch")
    ds = Squares(10)
    for lengths in ([3, 7], [0.33, 0.33, 0.34], [0.5, 0.5], [0.1, 0.2, 0.3, 0.4], [10, 0]):
        parts = random_split(ds, lengths, generator=tx.Generator().manual_seed(0))
        theirs = torch.utils.data.random_split(range(10), lengths,
                                               generator=torch.Generator().manual_seed(0))
        assert [len(p) for p in parts] == [len(p) for p in theirs]
        got = sum((p.indices for p in parts), [])
        assert sorted(got) == list(range(10))  # disjoint and covering


def test_random_split_warns_on_empty_fraction():
    with pytest.warns(UserWarning, match="length of split at index 1 is 0"):
        parts = random_split(Squares(3), [0.9, 0.1])  # floor: 2, 0; remainder to the first
    assert [len(p) for p in parts] == [3, 0]


def test_random_split_is_seeded():
    ds = Squares(20)
    a = random_split(ds, [0.75, 0.25], generator=tx.Generator().manual_seed(1))
    b = random_split(ds, [0.75, 0.25], generator=tx.Generator().manual_seed(1))
    c = random_split(ds, [0.75, 0.25], generator=tx.Generator().manual_seed(2))
    assert [p.indices for p in a] == [p.indices for p in b] != [p.indices for p in c]
    assert a[1][0]["i"] == a[1].indices[0]


def test_random_split_errors():
    with pytest.raises(ValueError, match=r"sum of input lengths \(9\) does not equal the "
                                         r"length of the input dataset \(10\)"):
        random_split(Squares(10), [4, 5])
    with pytest.raises(ValueError, match="lengths must be non-negative integers or fractions"):
        random_split(Squares(10), [0.5, 9.5])


def test_subset():
    ds = Squares(10)
    sub = Subset(ds, [9, 3, 5])
    assert len(sub) == 3 and sub[0]["i"] == 9 and sub[-1]["i"] == 5
    assert [s["i"] for s in sub[[2, 0]]] == [5, 9]
    nested = Subset(sub, [2, 1])
    assert [nested[i]["i"] for i in range(2)] == [5, 3]
    assert [b["i"].tolist() for b in DataLoader(nested, batch_size=2)] == [[5, 3]]
    tsub = Subset(_ds(6), range(2, 5))
    assert [b[1].tolist() for b in DataLoader(tsub, batch_size=2)] == [[2, 3], [4]]


def test_concat_dataset():
    cat = Squares(3) + Squares(2)
    assert isinstance(cat, ConcatDataset) and len(cat) == 5
    assert [cat[i]["i"] for i in range(5)] == [0, 1, 2, 0, 1] and cat[-1]["i"] == 1
    with pytest.raises(IndexError, match="ConcatDataset: index 5 out of range"):
        cat[5]
    with pytest.raises(ValueError, match="should not exceed dataset length"):
        cat[-6]
    with pytest.raises(TypeError, match="does not support IterableDataset"):
        ConcatDataset([Stream(2)])


def test_tensor_dataset_errors():
    with pytest.raises(ValueError, match="size mismatch between tensors"):
        TensorDataset(tx.zeros(3), tx.zeros(4))
    with pytest.raises(ValueError, match="needs at least one tensor"):
        TensorDataset()


def test_samplers():
    g = tx.Generator().manual_seed(0)
    rs = RandomSampler(range(5), replacement=True, num_samples=50, generator=g)
    draws = list(rs)
    assert len(draws) == 50 and set(draws) <= set(range(5)) and len(set(draws)) > 1
    more = list(RandomSampler(range(4), num_samples=10, generator=g))
    assert sorted(more[:4]) == [0, 1, 2, 3] and sorted(more[4:8]) == [0, 1, 2, 3]
    assert len(more) == 10
    sub = list(SubsetRandomSampler([10, 20, 30], generator=g))
    assert sorted(sub) == [10, 20, 30]
    w = list(WeightedRandomSampler([0.0, 1.0, 3.0], 200, generator=g))
    assert 0 not in w and w.count(2) > w.count(1)
    nr = list(WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False, generator=g))
    assert sorted(nr) == [0, 1, 2]
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0]], 2)


@pytest.mark.parametrize("shuffle_kind", ["generator", "default", "weighted", "sequential"])
def test_loader_state_dict_resumes_mid_epoch(shuffle_kind):
    """A loader restored from state_dict (as in a fresh process: new objects, the default
    generator at the saved state) yields exactly the batches of an uninterrupted run."""

    def make():
        if shuffle_kind == "generator":
            return DataLoader(_ds(11), batch_size=3, shuffle=True,
                              generator=tx.Generator().manual_seed(5))
        if shuffle_kind == "weighted":
            return DataLoader(_ds(11), batch_size=3,
                              sampler=WeightedRandomSampler([1.0] * 11, 11))
        return DataLoader(_ds(11), batch_size=3, shuffle=shuffle_kind == "default")

    def stream(loader, n):
        out, it = [], None
        while len(out) < n:
            it = iter(loader) if it is None else it
            b = next(it, None)
            if b is None:
                it = None
                continue
            out.append(b[1].tolist())
        return out, it

    tx.manual_seed(0)
    straight, _ = stream(make(), 14)

    tx.manual_seed(0)
    loader = make()
    first, it = stream(loader, 6)  # 6 batches: epoch 1 (4 batches) + 2 of epoch 2
    state, rng = loader.state_dict(), tx.get_rng_state()
    assert state["batches_yielded"] == 2

    tx.manual_seed(123)  # the "new process" starts elsewhere...
    fresh = make()
    tx.set_rng_state(rng)  # ...and restores the checkpointed default generator state
    fresh.load_state_dict(state)
    rest, _ = stream(fresh, 8)
    assert first + rest == straight


def test_loader_state_dict_through_save(tmp_path):
    loader = DataLoader(_ds(9), batch_size=2, shuffle=True,
                        generator=tx.Generator().manual_seed(1))
    it = iter(loader)
    next(it)
    tx.save({"loader": loader.state_dict()}, tmp_path / "l.safetensors")
    expected = [b[1].tolist() for b in it]
    fresh = DataLoader(_ds(9), batch_size=2, shuffle=True,
                       generator=tx.Generator().manual_seed(99))
    fresh.load_state_dict(tx.load(tmp_path / "l.safetensors")["loader"])
    assert [b[1].tolist() for b in fresh] == expected


def test_iterable_loader_resume_skips_consumed_items():
    loader = DataLoader(Stream(10), batch_size=3)
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    fresh = DataLoader(Stream(10), batch_size=3)
    fresh.load_state_dict(state)
    assert [b.tolist() for b in fresh] == [[3, 4, 5], [6, 7, 8], [9]]
    assert len(list(fresh)) == 4  # the following epoch is whole again
