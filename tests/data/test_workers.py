"""DataLoader worker processes: same batches as in-process loading, PyTorch's seeds,
worker_init_fn, get_worker_info sharding, errors, timeouts, persistent workers, cleanup."""

import multiprocessing
import os
import random
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tensorix as tx
from tensorix.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    TensorDataset,
    WorkerInfo,
    get_worker_info,
)
from tensorix.data._workers import _generate_state

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork start method")


class Squares(Dataset):
    def __init__(self, n, fail_at=None, sleep=0.0):
        self.n, self.fail_at, self.sleep = n, fail_at, sleep

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise ValueError(f"bad sample {i}")
        if self.sleep:
            time.sleep(self.sleep)
        return {"i": i, "sq": float(i * i), "vec": np.full(3, i, np.int32)}


class WhoAmI(Dataset):
    """Each sample says which process made it and what its RNGs gave."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return {"pid": os.getpid(), "id": info.id, "seed": info.seed,
                "num_workers": info.num_workers, "tx": tx.rand(1).item(),
                "np": float(np.random.rand()), "py": random.random(),
                "tag": getattr(info.dataset, "tag", "")}


class Sharded(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        first, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(first, self.n, step))


def _no_children():
    """Every worker is gone and reaped (multiprocessing.active_children joins the dead)."""
    # why 30 s: a worker's exit took over 10 s once in a full run beside other jobs (load 8+)
    deadline = time.monotonic() + 30
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    left = multiprocessing.active_children()
    if left:  # name them: which test's worker outlived it is the clue to a leak
        print("children left:", [(p.name, p.pid, p.exitcode) for p in left])
    return not left


def _pid_gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] in "ZX"  # a zombie is dead, awaiting its reaper
    except FileNotFoundError:
        return True


def _tag(worker_id):
    get_worker_info().dataset.tag = f"init {worker_id}"


def _as_lists(batches):
    return [{k: v.tolist() if hasattr(v, "tolist") else v for k, v in b.items()}
            for b in batches]


@pytest.mark.parametrize("kwargs", [dict(batch_size=3, shuffle=True),
                                    dict(batch_size=4, drop_last=True),
                                    dict(batch_size=None),
                                    dict(batch_size=2, prefetch_factor=1)])
def test_workers_give_the_batches_of_in_process_loading(kwargs):
    def run(n):
        extra = {} if n else {k: v for k, v in kwargs.items() if k != "prefetch_factor"}
        args = kwargs if n else extra
        loader = DataLoader(Squares(11), num_workers=n, **args,
                            **({"generator": tx.Generator().manual_seed(3)}
                               if kwargs.get("shuffle") else {}))
        return [_as_lists(loader) for _ in range(2)]  # two epochs

    want = run(0)
    assert run(2) == want
    assert run(3) == want
    assert _no_children()


def test_tensor_dataset_fast_path_in_workers():
    x = tx.arange(40, dtype=tx.float32).reshape(20, 2)
    y = tx.arange(20)
    kw = dict(batch_size=6, shuffle=True)
    want = [[a.tolist(), b.tolist()] for a, b in DataLoader(
        TensorDataset(x, y), generator=tx.Generator().manual_seed(0), **kw)]
    got = [[a.tolist(), b.tolist()] for a, b in DataLoader(
        TensorDataset(x, y), generator=tx.Generator().manual_seed(0), num_workers=2, **kw)]
    assert got == want


def test_workers_are_processes_seeded_like_pytorch():
    loader = DataLoader(WhoAmI(), batch_size=2, num_workers=2, worker_init_fn=_tag,
                        generator=tx.Generator().manual_seed(7))
    samples = [{k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in b.items()}
               for b in loader]
    rows = [{k: s[k][j] for k in s} for s in samples for j in range(2)]
    assert {r["pid"] for r in rows}.isdisjoint({os.getpid()})
    assert len({r["pid"] for r in rows}) == 2
    assert [r["id"] for r in rows] == [0, 0, 1, 1, 0, 0, 1, 1]  # batches round robin
    assert all(r["num_workers"] == 2 for r in rows)
    assert [r["tag"] for r in rows] == [f"init {r['id']}" for r in rows]  # worker_init_fn
    base = rows[0]["seed"]
    for wid in (0, 1):
        mine = [r for r in rows if r["id"] == wid]
        seed = base + wid
        assert all(r["seed"] == seed for r in mine)
        gen = tx.Generator().manual_seed(seed)
        assert [r["tx"] for r in mine] == [tx.rand(1, generator=gen).item() for _ in mine]
        py = random.Random(seed)
        assert [r["py"] for r in mine] == [py.random() for _ in mine]
        rs = np.random.RandomState(_generate_state(base, wid))
        assert [r["np"] for r in mine] == [rs.rand() for _ in mine]
    # the base seed comes from the loader's generator: the same generator, the same seeds
    again = DataLoader(WhoAmI(), batch_size=2, num_workers=2,
                       generator=tx.Generator().manual_seed(7))
    assert next(iter(again))["seed"].tolist()[0] == base


def test_generate_state_matches_pytorch():
    worker = pytest.importorskip("torch.utils.data._utils.worker")
    for base in (0, 1, 12345, 2**32 + 7, 2**63 - 1):
        for wid in (0, 1, 5):
            assert _generate_state(base, wid) == worker._generate_state(base, wid)


def test_get_worker_info_is_none_in_main_process_and_read_only():
    assert get_worker_info() is None
    info = WorkerInfo(id=0, num_workers=1, seed=3, dataset=None)
    with pytest.raises(RuntimeError, match="Cannot assign attributes"):
        info.id = 2
    assert "seed=3" in repr(info)


@pytest.mark.filterwarnings("ignore:This DataLoader will create")  # torch's, on 2 cores
def test_iterable_dataset_sharded_like_pytorch():
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader as TorchLoader
    from torch.utils.data import IterableDataset as TorchIterable
    from torch.utils.data import get_worker_info as torch_info

    class TorchSharded(TorchIterable):
        def __iter__(self):
            info = torch_info()
            first, step = (0, 1) if info is None else (info.id, info.num_workers)
            return iter(range(first, 10, step))

    want = [b.tolist() for b in TorchLoader(TorchSharded(), batch_size=2, num_workers=3)]
    got = [b.tolist() for b in DataLoader(Sharded(10), batch_size=2, num_workers=3)]
    assert got == want == [[0, 3], [1, 4], [2, 5], [6, 9], [7], [8]]
    assert isinstance(torch.tensor(0), torch.Tensor)


def test_worker_error_is_raised_naming_worker_and_indices():
    loader = DataLoader(Squares(10, fail_at=5), batch_size=2, num_workers=2)
    with pytest.raises(ValueError, match=r"(?s)worker process 0 while fetching batch 2 "
                                         r"\(indices \[4, 5\]\).*bad sample 5"):
        list(loader)
    assert _no_children()


class _OddError(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


class _Odd(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        raise _OddError(1, 2)


def test_worker_error_that_cannot_be_rebuilt_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="Caught _OddError in DataLoader worker process"):
        list(DataLoader(_Odd(), num_workers=1))


def test_worker_error_of_a_local_class_is_reported():
    class LocalError(Exception):
        pass

    class Raises(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            raise LocalError("from a class made in a function")

    with pytest.raises(RuntimeError, match="(?s)Caught LocalError.*made in a function"):
        list(DataLoader(Raises(), num_workers=1, timeout=30))


def test_unpicklable_batch_is_reported():
    loader = DataLoader(Squares(2), num_workers=1, collate_fn=lambda b: (lambda: b))
    with pytest.raises(Exception, match="worker process 0 while fetching batch 0"):
        list(loader)


def test_worker_init_fn_error_is_reported():
    def init(worker_id):
        raise KeyError("no config")

    with pytest.raises(KeyError, match="in worker_init_fn"):
        list(DataLoader(Squares(4), num_workers=2, worker_init_fn=init))


def test_timeout():
    loader = DataLoader(Squares(4, sleep=20), num_workers=1, timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.5 seconds"):
        next(iter(loader))
    assert _no_children()  # the busy worker is terminated, not waited for
    assert time.monotonic() - t0 < 15


class _Dies(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        os._exit(3)


def test_worker_that_dies_is_reported():
    with pytest.raises(RuntimeError, match="exited unexpectedly.*exit code 3"):
        list(DataLoader(_Dies(), num_workers=1))
    assert _no_children()


def test_breaking_early_or_deleting_the_loader_stops_the_workers():
    loader = DataLoader(WhoAmI(), batch_size=1, num_workers=2)
    for b in loader:
        pid = b["pid"].item()
        break
    assert _no_children() and _pid_gone(pid)

    it = iter(loader)
    pid = next(it)["pid"].item()
    del it
    assert _no_children() and _pid_gone(pid)

    persistent = DataLoader(WhoAmI(), batch_size=1, num_workers=2, persistent_workers=True)
    pid = next(iter(persistent))["pid"].item()
    assert not _pid_gone(pid)  # persistent: alive between epochs
    del persistent
    assert _no_children() and _pid_gone(pid)


def test_persistent_workers_keep_their_processes_across_epochs():
    loader = DataLoader(WhoAmI(), batch_size=2, num_workers=2, persistent_workers=True)
    first = [b["pid"].tolist() for b in loader]
    second = [b["pid"].tolist() for b in loader]
    assert first == second and len({p for b in first for p in b}) == 2
    it = iter(loader)
    next(it)  # an abandoned epoch: its late batches must not leak into the next one
    del it
    assert [b["pid"].tolist() for b in loader] == first
    stream = DataLoader(Sharded(7), batch_size=2, num_workers=2, persistent_workers=True)
    assert [b.tolist() for b in stream] == [b.tolist() for b in stream] == \
        [[0, 2], [1, 3], [4, 6], [5]]
    del loader, stream
    assert _no_children()


class _Big(Dataset):
    """Batches over the size that travels through a file rather than the queue."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return {"x": np.full((300, 300), i, np.float64), "i": i,
                "odd": np.arange(3, dtype=np.uint8)}  # unaligned sizes pack back to back


def test_large_batches_travel_through_files_that_are_removed():
    import tensorix.data._workers as workers

    loader = DataLoader(_Big(), batch_size=2, num_workers=2, persistent_workers=True)
    batches = list(loader)
    assert batches[0]["x"].numel() * 8 >= workers._SPILL_MIN
    for k, b in enumerate(batches):
        assert b["x"].tolist() == np.stack([np.full((300, 300), 2 * k + j, np.float64)
                                            for j in range(2)]).tolist()
        assert b["i"].tolist() == [2 * k, 2 * k + 1]
        assert b["odd"].tolist() == [[0, 1, 2]] * 2
    batches[0]["x"].add_(1)  # a batch is an ordinary writable tensor
    it = iter(loader)
    next(it)  # abandon an epoch with batches in flight
    del it
    assert len(list(loader)) == 3
    spill = loader._pool.spec.spill_dir
    assert spill is None or os.listdir(spill) == []  # read or discarded: all deleted
    del loader
    assert _no_children()
    assert spill is None or not os.path.exists(spill)


def test_pin_memory_is_accepted():
    got = [b["i"].tolist() for b in DataLoader(Squares(5), batch_size=2, num_workers=1,
                                                pin_memory=True)]
    assert got == [[0, 1], [2, 3], [4]]


def test_spawn_start_method():
    loader = DataLoader(Squares(5), batch_size=2, num_workers=1,
                        multiprocessing_context="spawn")
    assert [b["i"].tolist() for b in loader] == [[0, 1], [2, 3], [4]]


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(num_workers=-1), ValueError, "num_workers option should be non-negative"),
    (dict(timeout=-1), ValueError, "timeout option should be non-negative"),
    (dict(prefetch_factor=2), ValueError, "prefetch_factor option could only be specified"),
    (dict(num_workers=1, prefetch_factor=-1), ValueError, "prefetch_factor option should be"),
    (dict(persistent_workers=True), ValueError, "persistent_workers option needs"),
    (dict(num_workers=1, worker_init_fn=3), TypeError, "worker_init_fn should be callable"),
])
def test_worker_option_errors(kwargs, err, match):
    with pytest.raises(err, match=match):
        DataLoader(Squares(3), **kwargs)


def test_resume_mid_epoch_with_workers():
    def make():
        return DataLoader(Squares(11), batch_size=2, shuffle=True, num_workers=2,
                          generator=tx.Generator().manual_seed(4))

    straight = [b["i"].tolist() for b in make()]
    loader = make()
    it = iter(loader)
    first = [next(it)["i"].tolist() for _ in range(2)]
    state = loader.state_dict()
    del it
    fresh = make()
    fresh.load_state_dict(state)
    assert first + [b["i"].tolist() for b in fresh] == straight


_MAIN_RAISES = """
import os, sys
import tensorix as tx
from tensorix.data import DataLoader, Dataset

class D(Dataset):
    def __len__(self):
        return 100
    def __getitem__(self, i):
        return os.getpid()

it = iter(DataLoader(D(), batch_size=1, num_workers=2))
print(next(it).item(), next(it).item(), flush=True)
raise SystemExit("the training loop failed")
"""


def test_main_process_failing_leaves_no_workers(tmp_path):
    script = tmp_path / "main_raises.py"
    script.write_text(textwrap.dedent(_MAIN_RAISES))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 1 and "the training loop failed" in proc.stderr
    assert time.monotonic() - t0 < 30
    pids = [int(p) for p in proc.stdout.split()]
    assert len(set(pids)) == 2
    deadline = time.monotonic() + 10
    while not all(_pid_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_pid_gone(p) for p in pids)
