"""Autotuning of the CPU kernel form: numba's per-element loop or NumPy's SIMD ufuncs over row
blocks (and the block size), chosen by measurement with a small learned cost model.

Why measure: a numba loop calls libm's scalar ``exp``/``tanh``/``erf`` per element, while
NumPy's ufuncs run SIMD implementations; a group of cheap arithmetic wins in numba (one pass,
no temporaries), a group heavy in transcendentals can win as NumPy blocks. Which one depends
on the machine, so it is measured, not guessed.

The cost model: per kernel (its key) and form, ``time = overhead + per_element * n`` with the
two coefficients fitted by least squares to every run measured so far (stored in
``<cache>/tuning.json``); a new shape of a known kernel is decided from the model without
measuring again, once the kernel has been measured at two sizes or more.

Tiers (as a JIT's): compiling a numba kernel costs about a second (LLVM), paid before the
first result if the choice were made at the first call. So where the cost model cannot decide
yet, a kernel starts as the NumPy form (no compile) and is measured, numba compiled, at its
``tier_up``-th call: a program run once never pays for numba, a training loop pays at its
third step, and the measurement goes into the model, so the next process picks the form (from
numba's disk cache) at once. The numba compile itself runs in a child process (numba's
pipeline is mostly Python, ~1-5 s per kernel on a cold disk cache; on a thread of this process
its ``warnings.catch_warnings()`` would reset the warning filters other threads set), started
and waited on by one background thread: the NumPy form keeps serving calls meanwhile, and the
first call after the compile is done loads the kernel from numba's disk cache (importing
numba there, on the calling thread, the first time), measures and switches, so a training
loop never stalls on the compiler (``wait()`` blocks until it is idle).

Example::

    run = choose(plan, device, arrays, chunks=True)   # the fastest form, measured
"""

from __future__ import annotations

import atexit
import collections
import concurrent.futures
import contextlib
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
import weakref

import numpy as np

from . import _precompile as _precompile_py
from . import kernels
from .codegen import cache_dir, numba_source, numpy_source
from .kernels import DEFAULT_CHUNK, build

__all__ = ["choose", "CostModel", "CHUNKS", "TIER_UP", "wait", "cost_key"]

CHUNKS = (1 << 12, 1 << 14, 1 << 16, 1 << 18)  # elements per NumPy block, swept by max-autotune
TIER_UP = 3  # calls a kernel runs in the NumPy form before it is measured against numba


class CostModel:
    """Measured runs per (kernel key, form) and the linear fit over them."""

    def __init__(self, path=None):
        self.path = path or cache_dir() / "tuning.json"
        try:
            self.runs = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.runs = {}

    def add(self, key, form, n, seconds):
        self.runs.setdefault(key, {}).setdefault(form, []).append([n, seconds])

    def predict(self, key, form, n):
        """Predicted seconds at ``n`` elements: the best run measured at ``n`` itself, else the
        fit; None without a run at ``n`` or two distinct sizes."""
        pts = np.array(self.runs.get(key, {}).get(form, []), dtype=float)
        if len(pts) and (pts[:, 0] == n).any():
            return float(pts[pts[:, 0] == n, 1].min())
        if len(pts) < 2 or len(set(pts[:, 0])) < 2:
            return None
        a = np.stack([np.ones(len(pts)), pts[:, 0]], 1)
        (c0, c1), *_ = np.linalg.lstsq(a, pts[:, 1], rcond=None)
        return max(c0, 0.0) + max(c1, 0.0) * n

    def save(self):
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.runs))
        tmp.replace(self.path)


_model: list = []


def _cost_model():
    if not _model:
        _model.append(CostModel())
    return _model[0]


def cost_key(plan) -> str:
    """The cost model's key of ``plan``'s kernel: its key and a hash of the source of both
    forms it times. ``plan.key`` names the computation (and numba's cache file) but not how
    the forms are written: a changed NumPy form (a new block loop) or numba lowering keeps
    it, and the timings of the old code would go on deciding the form (a kernel pinned to
    numba by a NumPy form that has since become faster). Example::

        model.predict(cost_key(plan), "numba", plan.outer * plan.inner)
    """
    key = _cost_keys.get(plan)
    if key is None:  # once per plan: writing both sources costs ~0.1 ms
        text = numba_source(plan) + "\0" + numpy_source(plan)
        key = _cost_keys[plan] = f"{plan.key}-{hashlib.sha1(text.encode()).hexdigest()[:12]}"
    return key


_cost_keys: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _time(run, arrays, repeat=3):
    run(arrays)  # first call: numba compiles or loads its cache here, not in the timing
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        run(arrays)
        best = min(best, time.perf_counter() - t)
    return best


def choose(plan, device, arrays, chunks: bool = False, prefer: str = "auto", tier_up: int = 0):
    """The fastest ``run`` for ``plan`` among numba and the NumPy form (at the default block
    size, or every size in :data:`CHUNKS` with ``chunks``), predicted by the cost model where
    it can, else measured on ``arrays`` (and the measurements added to the model); with
    ``tier_up`` > 0 that measurement waits for the kernel's ``tier_up``-th call (the NumPy
    form runs until then, see the module docstring)."""
    if device.type != "cpu" or prefer == "numpy" or not kernels.numba_available():
        return build(plan, device, prefer)
    forms = _forms(plan, device, chunks)
    n = plan.outer * plan.inner
    model = _cost_model()
    key = cost_key(plan)
    predicted = {f: model.predict(key, f, n) for f in forms}
    if all(p is not None for p in predicted.values()):
        best = min(predicted, key=predicted.get)
        if best == "numba" and tier_up > 0 and not kernels.numba_loaded(plan):
            # decided, but loading numba (import, its first-call setup, the disk cache) costs
            # seconds: NumPy answers until it is loaded in the background
            return Tiered(plan, device, chunks, 1, decided=forms[best])
        return forms[best]()
    if tier_up > 0:
        return Tiered(plan, device, chunks, tier_up)
    return _measure(plan, arrays, forms)


def _forms(plan, device, chunks):
    forms = {"numba": lambda: build(plan, device, "numba")}
    for c in (CHUNKS if chunks else (DEFAULT_CHUNK,)):
        forms[f"numpy:{c}"] = lambda c=c: build(plan, device, "numpy", c)
    return forms


def _measure(plan, arrays, forms):
    model = _cost_model()
    n = plan.outer * plan.inner
    measured = {}
    for form, make in forms.items():
        run = make()
        measured[form] = (_time(run, arrays), run)
        model.add(cost_key(plan), form, n, measured[form][0])
    with contextlib.suppress(OSError):  # a read-only cache: the choice stands for this run
        model.save()
    best = min(measured, key=lambda f: measured[f][0])
    return measured[best][1]


class Tiered:
    """A kernel's ``run`` that is the NumPy form until its numba form is compiled (started in
    the background at the ``calls``-th call) and the measured fastest form from then on
    (``kind`` says which runs now)."""

    def __init__(self, plan, device, chunks, calls, decided=None):
        self.plan, self.device, self.chunks, self.left = plan, device, chunks, calls
        self.current = build(plan, device, "numpy")
        self._job = None
        self.decided = decided  # the form the cost model chose: no measurement then

    @property
    def kind(self):
        return self.current.kind

    def __call__(self, arrays):
        if self.left:
            self.left -= 1
            if not self.left:
                self._job = _compile_in_background(self.plan, arrays)
        if self._job is not None and self._job.done():
            job, self._job = self._job, None
            if job.cancelled() or job.exception() is not None:
                pass  # numba failed (or the process is exiting): the NumPy form stays
            elif self.decided is not None:
                self.current = self.decided()
            else:
                self.current = _measure(self.plan, arrays,
                                        _forms(self.plan, self.device, self.chunks))
        return self.current(arrays)


class _Compiler:
    """One background thread running compiles in order, numba's in one child process (see
    :func:`_compile_in_background`) that it keeps while compiles are queued (numba's import
    costs the child seconds: paid once per batch, not per kernel) and ends once idle for
    :data:`IDLE` seconds. The thread is a daemon, so an idle one never holds up exit; at exit
    the compiles not started are dropped and the child is terminated (a thread pool's exit
    hook would run every queued compile first). Terminated, not waited for: an exiting
    program has no use for the kernel, and numba writes its cache files whole (a temporary
    file, then a rename), so a killed child leaves no broken entry; the next process compiles
    again in its own background."""

    IDLE = 2.0

    def __init__(self):
        self._reset()
        if hasattr(os, "register_at_fork"):  # a forked child (data workers) has no thread
            os.register_at_fork(after_in_child=self._after_fork)

    def _after_fork(self):
        # nor the parent's compile process: close the inherited ends of its pipes, or it would
        # not see its input end when the parent closes it
        if self.child is not None:
            for pipe in (self.child.stdin, self.child.stdout):
                with contextlib.suppress(OSError):
                    pipe.close()
            _not_ours.append(self.child)  # not reaped here: kept, so that its collection
            # does not warn that it still runs
        self._reset()

    def _reset(self):
        self.jobs: collections.deque = collections.deque()
        self.cv = threading.Condition()
        self.thread = None
        self.child = None  # the compile process, while compiles are queued
        self.closed = False

    def submit(self, fn) -> concurrent.futures.Future:
        future = concurrent.futures.Future()
        with self.cv:
            if self.closed:
                future.cancel()
                return future
            self.jobs.append((fn, future))
            if self.thread is None:
                self.thread = threading.Thread(target=self._loop, name="tensorix-compile",
                                               daemon=True)
                self.thread.start()
                atexit.register(self.close)
            self.cv.notify()
        return future

    def _loop(self):
        while True:
            with self.cv:
                if not self.jobs and self.child is not None:
                    self.cv.wait(self.IDLE)
                idle = None
                if not self.jobs:
                    idle, self.child = self.child, None
            if idle is not None:
                _end(idle)
            with self.cv:
                while not self.jobs and not self.closed:
                    self.cv.wait()
                if self.closed:
                    return
                fn, future = self.jobs.popleft()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except BaseException as e:  # noqa: BLE001 - the caller reads it off the future
                    future.set_exception(e)

    def run(self, request) -> None:
        """Send ``request`` to the compile process (started if needed) and wait for its
        answer, on the compiler's thread; raises what the compile raised there, or if the
        process died or the compiler closed."""
        with self.cv:
            if self.closed:
                raise RuntimeError("tensorix.compile: the process is exiting")
            if self.child is None:
                self.child = subprocess.Popen(
                    [sys.executable, "-c", _RUNNER, _precompile_py.__file__],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL, text=True)
            child = self.child
        try:
            child.stdin.write(json.dumps(request) + "\n")
            child.stdin.flush()
            answer = child.stdout.readline()
        except OSError:
            answer = ""
        if not answer:  # it died (or was terminated at exit): the next compile starts one
            with self.cv:
                if self.child is child:
                    self.child = None
            raise RuntimeError(f"tensorix.compile: the compile process exited "
                               f"({_end(child)}) compiling {request[0]}")
        if json.loads(answer):
            raise RuntimeError(f"tensorix.compile: numba's compile of {request[0]} failed: "
                               f"{json.loads(answer)}")

    def close(self):
        with self.cv:
            self.closed = True
            for _, future in self.jobs:
                future.cancel()
            self.jobs.clear()
            if self.child is not None:  # the thread sees it end, and reaps it
                self.child.terminate()
            self.cv.notify()
        if self.thread is not None:
            self.thread.join()


_not_ours: list = []  # in a forked process: the parent's compile process


def _end(child) -> int:
    """Close the compile process's input (it exits at its end, if not dead already), reap it
    and close its output: its exit status."""
    with contextlib.suppress(OSError):
        child.stdin.close()
    code = child.wait()
    child.stdout.close()
    return code


_compiler = _Compiler()
# the child runs _precompile.py by path (``-m`` would import tensorix, seconds, before it),
# without the working directory on its path (-c puts it there)
_RUNNER = ("import runpy, sys; sys.path[:] = [p for p in sys.path if p]; "
           "sys.argv[:] = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")


def _compile_in_child(path, name, types) -> None:
    """Compile the numba kernel in ``path`` for ``types`` in the compile process (which
    writes numba's disk cache); on the compiler's thread."""
    _compiler.run([str(path), name, types])


def _compile_in_background(plan, arrays):
    """A future that is done when ``plan``'s numba kernel is compiled into numba's disk cache
    for the argument types of ``arrays`` (or found there), by a child process: numba's
    compiler is never run, nor numba imported, beside this process's other threads (it saves
    and restores the process-wide warning filters, see _precompile.py). The caller then loads
    the kernel from the cache on its own thread."""
    path, name = kernels.numba_file(plan)
    types = kernels.argument_types(kernels.run_arguments(plan, arrays))
    return _compiler.submit(lambda: _compile_in_child(path, name, types))


def wait() -> None:
    """Block until the background compiles submitted so far are done (tests, benchmarks)."""
    _compiler.submit(lambda: None).result()
