"""tensorix's own thread use (tensorix/_threads.py): the thread-count API as in torch, the BLAS
kept to one thread (no spinning idle threads), GEMMs split over the library's one pool."""

import json
import os
import pathlib
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tensorix as tx
from tensorix import _threads

OVER = _threads.OVERSPLIT  # pieces per thread's part


@pytest.fixture
def two_threads_split_small(monkeypatch, counted_parts):
    """Two threads, and every GEMM big enough to split (so small tests exercise the split)."""
    monkeypatch.setattr(_threads, "_GEMM_MIN_PART", 1)
    return counted_parts


def test_thread_count_api_as_in_torch():
    old = tx.get_num_threads()
    try:
        tx.set_num_threads(3)
        assert tx.get_num_threads() == 3
        import tensorix.numerics as nx

        assert nx.get_num_threads() == 3  # one setting, one pool for the whole library
    finally:
        tx.set_num_threads(old)
    with pytest.raises(RuntimeError, match=r"set_num_threads\(\): expects a positive integer"):
        tx.set_num_threads(0)
    with pytest.raises(RuntimeError, match=r"set_num_threads\(\): expects an int, but got float"):
        tx.set_num_threads(2.5)


def test_default_is_the_usable_cores():
    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    if expected is None:
        pytest.skip("no affinity API")
    assert _threads._cores() == expected


def test_interop_threads_set_once(monkeypatch):
    monkeypatch.setattr(_threads, "_interop", None)
    tx.set_num_interop_threads(2)
    assert tx.get_num_interop_threads() == 2
    with pytest.raises(RuntimeError, match=r"set_num_interop_threads\(\): cannot set"):
        tx.set_num_interop_threads(3)
    monkeypatch.setattr(_threads, "_interop", None)
    with pytest.raises(RuntimeError, match="expects a positive integer"):
        tx.set_num_interop_threads(-1)


def test_blas_runs_one_thread_after_a_gemm():
    """In a fresh process (libraries that other tests load bring BLASes of their own): every
    BLAS loaded at tensorix's first GEMM, NumPy's among them, runs one thread."""
    pytest.importorskip("threadpoolctl")
    code = ("import json, tensorix as tx, threadpoolctl; a = tx.randn(64, 64); a @ a; "
            "print(json.dumps([i['num_threads'] for i in threadpoolctl.threadpool_info() "
            "if i['user_api'] == 'blas']))")
    root = pathlib.Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    threads = json.loads(out.stdout.strip().splitlines()[-1])
    assert threads and threads == [1] * len(threads), out.stderr[-2000:]


def test_no_spinning_idle_threads_after_large_gemms():
    """OpenBLAS's own idle threads spun ~0.1 s of a core after every threaded call."""
    old = tx.get_num_threads()
    tx.set_num_threads(2)
    try:
        a = tx.randn(512, 512)
        for _ in range(3):
            _ = a @ a
        t0 = time.process_time()
        time.sleep(0.3)
        assert time.process_time() - t0 < 0.03
    finally:
        tx.set_num_threads(old)


@pytest.mark.parametrize("sa, sb", [
    ((6, 5, 7), (6, 7, 3)),        # a batch of GEMMs: split by batch
    ((4, 6, 5, 7), (6, 7, 3)),     # broadcast batch: b shared by every part
    ((1, 5, 7), (4, 7, 3)),        # a's batch dim of 1 broadcasts
    ((9, 7), (7, 3)),              # one GEMM, more rows than columns: split by rows
    ((3, 7), (7, 11)),             # more columns: split by columns
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_split_gemm_matches_numpy(two_threads_split_small, sa, sb, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(sa).astype(dtype)
    b = rng.standard_normal(sb).astype(dtype)
    got = (tx.tensor(a) @ tx.tensor(b)).numpy()
    assert len(two_threads_split_small) == 1 and 2 <= two_threads_split_small[0] <= 2 * OVER
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)


def test_small_gemm_and_one_thread_do_not_split(monkeypatch):
    calls = []
    monkeypatch.setattr(_threads, "_run_parts", lambda tasks, *a: calls.append(tasks))
    a = tx.randn(8, 8)
    _ = a @ a  # far below the split size
    old = tx.get_num_threads()
    tx.set_num_threads(1)
    try:
        monkeypatch.setattr(_threads, "_GEMM_MIN_PART", 1)
        _ = a @ a
    finally:
        tx.set_num_threads(old)
    assert calls == []


def test_split_gemm_gradients(two_threads_split_small):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 6, 5)), rng.standard_normal((4, 5, 3))
    ta, tb = tx.tensor(a, requires_grad=True), tx.tensor(b, requires_grad=True)
    (ta @ tb).sum().backward()
    pa, pb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (pa @ pb).sum().backward()
    np.testing.assert_allclose(ta.grad.numpy(), pa.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tb.grad.numpy(), pb.grad.numpy(), rtol=1e-12)


def test_einsum_batch_contraction_splits(two_threads_split_small):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((8, 4, 5)), rng.standard_normal((8, 5, 6))
    got = tx.einsum("bij,bjk->bik", tx.tensor(a), tx.tensor(b)).numpy()
    assert two_threads_split_small
    np.testing.assert_allclose(got, np.einsum("bij,bjk->bik", a, b), rtol=1e-12)


def test_parallel_covers_the_range_and_nests_without_deadlock():
    old = tx.get_num_threads()
    tx.set_num_threads(2)
    try:
        started, seen, names = threading.Event(), [], {}

        def inner(a, b):
            seen.append((threading.current_thread().name, a, b))

        def outer(a, b):
            names[a] = threading.current_thread().name
            if a == 0:  # the caller's part waits for a pool thread to take the other
                assert started.wait(30), "no pool thread ran the second part"
            else:
                started.set()
            _threads.parallel(100, inner, 1)  # inside a worker: runs whole, in this thread

        _threads.parallel(10, outer, 1)
        assert names[0] == threading.current_thread().name
        assert names[5].startswith("tensorix_")
        assert (names[5], 0, 100) in seen  # no nested split on a pool thread
        hits = np.zeros(1000, int)

        def mark(a, b):
            hits[a:b] += 1

        _threads.parallel(1000, mark, 10)
        assert (hits == 1).all()
    finally:
        tx.set_num_threads(old)


def test_busy_pool_threads_never_hold_up_the_caller():
    """A pool thread that gets no core (here: busy with another caller's part) is not waited
    for: the caller runs the parts nobody took, and an error in a part reaches the caller."""
    old = tx.get_num_threads()
    tx.set_num_threads(2)
    release, busy = threading.Event(), threading.Event()
    try:
        def hold():  # the pool's one thread, busy elsewhere (a machine with no core free)
            busy.set()
            release.wait(30)

        _threads._get_pool().queue.put(hold)
        assert busy.wait(30)
        ran = []
        _threads.parallel(4, lambda a, b: ran.append((threading.current_thread().name, a)), 1)
        me = threading.current_thread().name
        assert sorted(ran) == [(me, i) for i in range(4)]  # all here, none lost or doubled

        def fail(a, b):
            raise ValueError(f"part {a}")

        with pytest.raises(ValueError, match="part"):
            _threads.parallel(4, fail, 1)
    finally:
        release.set()
        tx.set_num_threads(old)


@pytest.fixture
def concurrent_gemms(monkeypatch, counted_parts):
    """Two threads, every GEMM worth a task; counts the batches of tasks handed out."""
    monkeypatch.setattr(_threads, "_GEMM_MIN_TASK", 1)
    return counted_parts


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_concurrent_gemms_are_bit_identical(concurrent_gemms, dtype):
    rng = np.random.default_rng(3)
    g, w, x = (rng.standard_normal(s).astype(dtype) for s in ((37, 11), (11, 13), (37, 13)))
    gx, gw = _threads.matmuls([(g, w), (g.T, x)])
    assert concurrent_gemms == [2]
    assert np.array_equal(gx, g @ w) and np.array_equal(gw, g.T @ x)
    # unbalanced (the largest more than 4x the smallest) or alone: one after the other
    small = rng.standard_normal((2, 11)).astype(dtype)
    a, b = _threads.matmuls([(small, w), (g.T, x)])
    assert concurrent_gemms == [2] and np.array_equal(a, small @ w)
    assert np.array_equal(_threads.matmuls([(g, w)])[0], g @ w)


def test_linear_backward_runs_its_gemms_together_with_the_recorded_path_bits(concurrent_gemms):
    """The first-order raw-array backward of F.linear gives the bits of its recorded (Tensor
    op) backward, for 2-d and stacked inputs."""
    F = tx.nn.functional
    rng = np.random.default_rng(4)
    for shape in ((9, 6), (3, 4, 6)):
        x = tx.tensor(rng.standard_normal(shape), requires_grad=True)
        w = tx.tensor(rng.standard_normal((5, 6)), requires_grad=True)
        b = tx.tensor(rng.standard_normal(5), requires_grad=True)
        g = tx.tensor(rng.standard_normal(shape[:-1] + (5,)))
        got = tx.autograd.grad(F.linear(x, w, b), (x, w, b), g)
        assert concurrent_gemms[-1] == 2
        want = tx.autograd.grad(F.linear(x, w, b), (x, w, b), g, create_graph=True)
        for a, c in zip(got, want):
            assert np.array_equal(a.numpy(), c.detach().numpy())


def test_a_busy_machine_changes_who_runs_the_parts_never_the_parts(monkeypatch):
    """With more runnable threads than the machine's CPUs (other processes' work), an op whose
    parts are shorter than BUSY_FACTOR times the usual minimum runs every part on the calling
    thread; the cuts (so a split GEMM's or sum's rounding) never depend on the load. The run
    queue is sampled at most every _BUSY_EVERY s."""
    import threading

    monkeypatch.undo()  # the suite-wide fixture that ignores the machine's load
    samples = iter([1] * 5 + [_threads._cpus + 9] * 40 + [1] * 50)
    monkeypatch.setattr(_threads, "_runnable", lambda: next(samples))
    monkeypatch.setattr(_threads, "_BUSY_EVERY", 0.0)
    monkeypatch.setattr(_threads, "_busy_state", {"next": 0.0, "runnable": 0.0, "ok": True})
    old = tx.get_num_threads()
    tx.set_num_threads(2)
    me = threading.get_ident()

    def run(n):
        seen = []
        _threads.parallel(n, lambda a, b: seen.append((a, b, threading.get_ident())), 1)
        return sorted(seen)

    try:
        small = 2 * _threads.BUSY_FACTOR - 1  # just under two busy-machine parts of work
        quiet = run(small)
        assert len(quiet) > 1 and _threads.parts_for(small, 1) == 2
        for _ in range(40):  # the smoothed count rises past the CPUs
            busy = run(small)
        assert [p[:2] for p in busy] == [p[:2] for p in quiet]  # the same parts ...
        assert {p[2] for p in busy} == {me}  # ... all run here
        assert _threads.parts_for(small, 1) == 2  # the plan never depends on the load
        for _ in range(50):
            again = run(small)
        assert [p[:2] for p in again] == [p[:2] for p in quiet]
        monkeypatch.setattr(_threads, "_busy_state", {"next": 0.0, "runnable": 0.0, "ok": False})
        assert not _threads._machine_busy()  # no run queue to read: never busy
    finally:
        tx.set_num_threads(old)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs an affinity API and two usable CPUs")
def test_pool_threads_are_steered_off_the_callers_cpu(monkeypatch):
    """A pool thread woken on the caller's own CPU preempts the caller, and a split op's parts
    then run one after another on one core: before waking the pool, the caller takes its CPU
    out of the pool threads' affinity (and nothing happens where its CPU is unknown)."""
    old = tx.get_num_threads()
    tx.set_num_threads(2)
    mine = os.sched_getaffinity(0)
    try:
        pool = _threads._get_pool()  # started with the caller's full affinity
        assert pool.cpus == mine and len(pool.tids) == 1
        for cpu in sorted(mine)[:2]:
            os.sched_setaffinity(0, {cpu})  # the caller on a known CPU
            ran = []
            _threads.parallel(4, lambda a, b: ran.append(a), 1)
            assert sorted(ran) == [0, 1, 2, 3]
            assert os.sched_getaffinity(pool.tids[0]) == mine - {cpu}
        os.sched_setaffinity(0, mine)
        monkeypatch.setattr(_threads, "_current_cpu", lambda: -1)
        pool.steered = None
        _threads.parallel(4, lambda a, b: None, 1)
        assert pool.steered is None
    finally:
        os.sched_setaffinity(0, mine)
        tx.set_num_threads(old)


def test_steering_stops_where_affinity_cannot_be_set(monkeypatch):
    """A sandbox that refuses sched_setaffinity turns steering off; splits still run."""
    old = tx.get_num_threads()
    tx.set_num_threads(2)
    try:
        pool = _threads._get_pool()
        pool.cpus, pool.steered = frozenset({0, 1}), None

        def refuse(*args):
            raise PermissionError("not here")

        monkeypatch.setattr(os, "sched_setaffinity", refuse, raising=False)
        monkeypatch.setattr(_threads, "_current_cpu", lambda: 0)
        ran = []
        _threads.parallel(4, lambda a, b: ran.append(a), 1)
        assert sorted(ran) == [0, 1, 2, 3] and pool.cpus is None
        _threads.parallel(4, lambda a, b: None, 1)  # no further attempt
    finally:
        tx.set_num_threads(old)


def test_parallel_pieces_per_thread(counted_parts):
    """``pieces`` caps the pieces per thread (1 for kernels of many NumPy calls); the pieces
    still cover the range once."""
    hits = np.zeros(100, int)

    def mark(a, b):
        hits[a:b] += 1

    _threads.parallel(100, mark, 1)
    _threads.parallel(100, mark, 1, pieces=1)
    assert counted_parts == [2 * OVER, 2] and (hits == 2).all()
