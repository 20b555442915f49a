"""The background numba compile of tensorix._compile.tune: it runs in a child process, so the
calling process's warning filters (and everything else numba's compiler touches) are never
changed under it, and the kernel it leaves in numba's disk cache is what the caller loads."""

import time
import uuid
import warnings

import numpy as np
import pytest

import tensorix as tx


def _np(t):
    return t.detach().cpu().numpy()


def _fresh_kernel(monkeypatch, tmp_path):
    """A compiled function whose kernel no cache holds: a fresh cache folder and a constant of
    its own (the kernel's key is its source)."""
    from tensorix._compile import tune

    monkeypatch.setenv("TENSORIX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tune, "_model", [tune.CostModel(tmp_path / "tuning.json")])
    c = 1.0 + (uuid.uuid4().int % 10**6) / 10**7
    fn = lambda x: (x * c - 0.25).sigmoid().sum(-1)  # noqa: E731
    return fn, tx.compile(fn, options={"tier_up": 1})


def test_a_background_compile_leaves_the_callers_warning_filters_alone(monkeypatch, tmp_path):
    """Regression: numba's compiler enters and leaves ``warnings.catch_warnings()``, which
    saves and restores the process-wide filter list; run on a thread it wiped the filters the
    main thread set meanwhile (pytest.warns, a user's filterwarnings). The main thread changes
    the filters all through the compile and finds exactly its own afterwards."""
    pytest.importorskip("numba")
    from tensorix._compile import tune

    fn, cf = _fresh_kernel(monkeypatch, tmp_path)
    x = tx.randn(8, 24)
    with warnings.catch_warnings():
        cf(x)  # the tier-up call: the compile starts
        idle = tune._compiler.submit(lambda: None)  # done once the compile is
        expected = list(warnings.filters)
        before = len(expected)
        while not idle.done():
            warnings.filterwarnings("ignore", message=f"tensorix-test-{len(expected)}")
            expected.insert(0, warnings.filters[0])  # what filterwarnings adds: at the front
            time.sleep(0.005)
        assert len(expected) > before  # the filters did change during the compile
        assert warnings.filters == expected
    np.testing.assert_allclose(_np(cf(x)), _np(fn(x)), rtol=1e-5, atol=1e-5)


def test_the_parent_loads_what_the_child_compiled_from_numbas_cache(monkeypatch, tmp_path):
    """The child compiles for the types numba.typeof gives the parent's arguments (dtype,
    ndim, layout, readonly), so the parent's first numba call is a disk-cache hit, not a
    compile on the calling thread."""
    pytest.importorskip("numba")
    from tensorix._compile import kernels, tune

    fn, cf = _fresh_kernel(monkeypatch, tmp_path)
    x = tx.randn(8, 24)
    cf(x)
    tune.wait()
    np.testing.assert_allclose(_np(cf(x)), _np(fn(x)), rtol=1e-5, atol=1e-5)  # measures
    (key,) = tune._model[0].runs
    assert "numba" in tune._model[0].runs[key]
    dispatcher = kernels._loaded[(key.split("-")[0], "numba")]  # the cost key: plan key-hash
    assert sum(dispatcher.stats.cache_hits.values()) == 1
    assert sum(dispatcher.stats.cache_misses.values()) == 0


def test_a_row_kernel_with_a_max_and_a_min_loads_from_numbas_cache(monkeypatch, tmp_path):
    """The max/min helper is one function taking the kind as an argument (not a closure per
    kind, which numba cannot cache): the row kernel the child compiled is a disk-cache hit
    in the parent, and computes both extremes."""
    pytest.importorskip("numba")
    from tensorix._compile import kernels, tune

    monkeypatch.setenv("TENSORIX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tune, "_model", [tune.CostModel(tmp_path / "tuning.json")])
    c = 1.0 + (uuid.uuid4().int % 10**6) / 10**7  # a kernel of its own

    def fn(x):
        y = x * c
        return (y - y.amax(-1, keepdim=True)).exp() + (y - y.amin(-1, keepdim=True))

    cf = tx.compile(fn, options={"tier_up": 1})
    x = tx.randn(8, 37)
    cf(x)
    tune.wait()
    np.testing.assert_allclose(_np(cf(x)), _np(fn(x)), rtol=1e-5, atol=1e-5)
    (key,) = tune._model[0].runs
    src = kernels.numba_file(_entry_plan(cf))[0].read_text()
    assert "_rowext(" in src and ", inner, True)" in src and ", inner, False)" in src
    dispatcher = kernels._loaded[(key.split("-")[0], "numba")]
    assert sum(dispatcher.stats.cache_hits.values()) == 1
    assert sum(dispatcher.stats.cache_misses.values()) == 0


def _entry_plan(cf):
    (entry,) = cf.entries.values()
    (plan,) = entry.graph.plans
    return plan


def test_argument_types_are_what_numba_typeof_says():
    numba = pytest.importorskip("numba")
    from tensorix._compile import _precompile, kernels

    base = np.zeros((6, 8), dtype=np.float32)
    ro = np.ones(5, dtype=np.int64)
    ro.flags.writeable = False
    args = [3, 2**40, base, base[:, ::2], np.asfortranarray(base), base.T, ro,
            np.zeros((), dtype=np.float64), np.zeros((2, 3, 4), dtype=np.bool_)[:, 1]]
    spec = kernels.argument_types(args)
    assert _precompile._types(numba, np, spec) == tuple(numba.typeof(a) for a in args)
    with pytest.raises(TypeError, match="argument_types: expected an int or a NumPy array"):
        kernels.argument_types([1.5])


@pytest.mark.parametrize("how", ["compile error", "child died"])
def test_a_failed_child_compile_keeps_the_numpy_form(monkeypatch, tmp_path, how):
    """numba failing in the child (types its kernel cannot take), or the child dying, leaves
    the kernel on its NumPy form, with the reason on the compile's future."""
    pytest.importorskip("numba")
    from tensorix._compile import kernels, tune

    monkeypatch.setattr(tune, "_compiler", tune._Compiler())  # no compile process yet
    if how == "compile error":
        monkeypatch.setattr(kernels, "argument_types",
                            lambda args: [1, 1] + [["<f4", 3, "C", False]] * (len(args) - 2))
        reason = "numba's compile of .* failed: Typing"
    else:
        monkeypatch.setattr(tune, "_RUNNER", "import sys; sys.exit(3)")
        reason = r"the compile process exited \(3\)"
    fn, cf = _fresh_kernel(monkeypatch, tmp_path)
    x = tx.randn(8, 24)
    cf(x)
    graph = next(iter(cf.entries.values())).graph
    (tiered,) = graph._kernels
    tune.wait()
    with pytest.raises(RuntimeError, match=reason):
        tiered._job.result()
    for _ in range(2):
        np.testing.assert_allclose(_np(cf(x)), _np(fn(x)), rtol=1e-5, atol=1e-5)
    assert graph.kernel_kinds() == ["numpy"] and tune._model[0].runs == {}
    tune._compiler.close()


def test_exit_terminates_a_running_compile_process(monkeypatch):
    """At exit (the compiler's close) a compile still running is not waited for: its process
    is terminated and reaped, and the compile's future fails (the NumPy form stays)."""
    from tensorix._compile import tune

    compiler = tune._Compiler()
    monkeypatch.setattr(tune, "_compiler", compiler)
    monkeypatch.setattr(tune, "_RUNNER", "import time; time.sleep(120)")
    job = compiler.submit(lambda: tune._compile_in_child("k.py", "m", []))
    deadline = time.perf_counter() + 60
    while compiler.child is None and time.perf_counter() < deadline:
        time.sleep(0.01)
    child, start = compiler.child, time.perf_counter()
    compiler.close()
    assert time.perf_counter() - start < 30
    assert child.returncode is not None and child.stdout.closed
    with pytest.raises(RuntimeError, match="the compile process exited"):
        job.result(timeout=0)
    assert compiler.submit(lambda: None).cancelled()  # closed: nothing more runs


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_process_lets_go_of_the_parents_compile_process(monkeypatch):
    """A forked process (a data-loader worker) closes its inherited ends of the compile
    process's pipes: the parent's idle compile process still sees the end of its input, and
    exits, while the fork lives on."""
    import os

    from tensorix._compile import tune

    compiler = tune._Compiler()
    compiler.IDLE = 120.0
    monkeypatch.setattr(tune, "_compiler", compiler)
    monkeypatch.setattr(tune, "_RUNNER", "import sys; sys.stdin.readline(); print('null', "
                        "flush=True); sys.stdin.read()")
    compiler.submit(lambda: tune._compile_in_child("k.py", "m", [])).result(timeout=60)
    child = compiler.child
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the fork reports through its exit code
        time.sleep(5)
        os._exit(0 if compiler.child is None and compiler.thread is None else 1)
    try:
        with compiler.cv:
            compiler.IDLE = 0.0
            compiler.cv.notify()  # the thread ends the idle compile process now
        child.wait(timeout=4)  # before the fork exits
        assert child.returncode == 0
    finally:
        _, status = os.waitpid(pid, 0)
        compiler.close()
    assert os.WEXITSTATUS(status) == 0


def test_a_timing_of_an_older_numpy_form_does_not_decide_the_form(monkeypatch, tmp_path):
    """The cost model's key hashes the source of the forms it times: a NumPy form written
    differently (a new block loop) under the same kernel key starts without timings, where
    the old key pinned it to the form the old source lost to."""
    from tensorix._compile import codegen, tune
    from tensorix._compile.fusion import partition
    from tensorix.fx import symbolic_trace
    from tensorix.fx.passes import optimize

    x = tx.randn(8, 24)
    gm = symbolic_trace(lambda x: (x * 1.25 - 0.5).exp().sum(-1), x)
    optimize(gm.graph)
    (group,) = partition(gm.graph)
    plan = codegen.KernelPlan(group)
    key = tune.cost_key(plan)
    assert key.startswith(plan.key + "-") and key == tune.cost_key(codegen.KernelPlan(group))
    model = tune.CostModel(tmp_path / "tuning.json")
    monkeypatch.setattr(tune, "_model", [model])
    monkeypatch.setattr(tune.kernels, "numba_available", lambda: True)
    n = plan.outer * plan.inner
    model.add(key, "numba", n, 1e-6)  # the old NumPy form lost
    model.add(key, f"numpy:{tune.DEFAULT_CHUNK}", n, 1e-3)
    arrays = [x.numpy()]
    device = tx.device("cpu")
    decided = tune.choose(plan, device, arrays, tier_up=1)
    assert isinstance(decided, tune.Tiered) and decided.decided is not None  # by the model
    monkeypatch.setattr(tune, "numpy_source",
                        lambda p: codegen.numpy_source(p) + "# a new block loop\n")
    rewritten = codegen.KernelPlan(group)
    assert rewritten.key == plan.key and tune.cost_key(rewritten) != key
    fresh = tune.choose(rewritten, device, arrays, tier_up=1)
    assert isinstance(fresh, tune.Tiered) and fresh.decided is None  # to be measured
