import contextlib
import os

import numpy as np
import pytest
from hypothesis import settings

import tensorix as tx

# Property tests run derandomized by default, so CI is reproducible; set
# HYPOTHESIS_PROFILE=explore to search with fresh random examples.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# Tests marked ``slow`` (exhaustive sweeps, minutes each) are skipped in the default run; run
# them with ``--runslow`` or TENSORIX_RUN_SLOW=1 (``-m slow --runslow`` runs only them).
def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run tests marked slow (or set TENSORIX_RUN_SLOW=1)")


def run_slow(config) -> bool:
    return config.getoption("--runslow") or os.environ.get("TENSORIX_RUN_SLOW", "") not in (
        "", "0")


def pytest_collection_modifyitems(config, items):
    if run_slow(config):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow or TENSORIX_RUN_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# Tests that take ``device`` run once per device: 'cpu' and 'cuda' (the cuda case marked
# ``cuda``). Where CuPy sees a GPU the cuda case runs on it; elsewhere it runs on the CuPy
# stand-in (tensorix/fakecupy/: host memory, CuPy's rules), so CI checks the device
# plumbing without a GPU. TENSORIX_TEST_DEVICE=cuda (or cpu) keeps only that one, as
# scripts/gpu_check.sh does on the GPU machine (with -m cuda).
DEVICES = [d for d in ("cpu", "cuda") if os.environ.get("TENSORIX_TEST_DEVICE", d) == d]
DEVICE_PARAMS = [pytest.param(d, marks=pytest.mark.cuda) if d == "cuda" else d
                 for d in DEVICES]


def on_device(name):
    """A context running ``name`` ('cpu' or 'cuda') where it can: the real GPU, else the
    stand-in."""
    if name == "cuda" and not tx.backend.cuda_available():
        return tx.backend.fake_cuda()
    return contextlib.nullcontext()


@pytest.fixture(params=DEVICE_PARAMS)
def device(request):
    with on_device(request.param):
        yield request.param


@pytest.fixture
def cuda():
    """For tests marked ``cuda`` that need no cpu twin: the GPU, else the stand-in."""
    with on_device("cuda"):
        yield "cuda"


@pytest.fixture
def counted_parts(monkeypatch):
    """Two library threads, and the batches of tasks handed to the pool counted: yields the
    list of their sizes (tests then lower a split threshold to exercise the split)."""
    from tensorix import _threads

    old = tx.get_num_threads()
    tx.set_num_threads(2)
    calls = []
    run = _threads._run_parts

    def counting(tasks, *args):
        calls.append(len(tasks))
        run(tasks, *args)

    monkeypatch.setattr(_threads, "_run_parts", counting)
    yield calls
    tx.set_num_threads(old)


@pytest.fixture(autouse=True)
def _splits_ignore_machine_load(monkeypatch):
    """Whether an op splits over the pool never depends on how busy the test machine is
    (tests/test_threads.py tests the busy-machine rule itself)."""
    from tensorix import _threads

    monkeypatch.setattr(_threads, "_machine_busy", lambda: False)


@pytest.fixture(autouse=True)
def _restore_global_state():
    """Tests that change global modes or the default dtype don't leak into others."""
    default = tx.get_default_dtype()
    yield
    tx.set_default_dtype(default)
    tx.autograd.set_detect_anomaly(False)
    tx.set_grad_enabled(True)
