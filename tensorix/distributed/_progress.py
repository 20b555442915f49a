"""A progress thread for the "mpi" backend's non-blocking collectives.

Why it exists: Open MPI (like MPICH without its own async thread) advances a non-blocking
collective only inside an MPI call on some thread of the process. A rank that starts an
``MPI_Iallreduce`` and then computes for 40 ms makes no MPI call in that time, so the
all-reduce does not move until the rank waits for it: DDP's buckets then overlap nothing.
This thread calls ``MPI_Test`` on every pending ``Work`` (``async_op=True``) every
``interval`` seconds, sleeping in between; when nothing is pending it blocks on a condition
and uses no CPU.

Threads and MPI: with ``MPI_THREAD_MULTIPLE`` (what mpi4py asks for by default, and what the
Open MPI and MPICH wheels provide) MPI may be called from this thread and the main one at
once; with ``MPI_THREAD_SERIALIZED`` every MPI call of the backend takes one lock
(``_mpi.serialized``), so the thread's tests never overlap another call; below that (FUNNELED,
SINGLE: MPI from the main thread only) there is no thread: progress happens inside the
main thread's MPI calls as before, and the pending Works are only listed, so that the exit can
complete them on the main thread. A ``Work``'s own lock keeps two threads from testing the
same request (erroneous in MPI); the results (copies back into tensors, AVG's division) are
applied on the thread that waits, never on this one.

The thread is a daemon, stopped and joined by ``destroy_process_group`` and at interpreter
exit (before mpi4py finalizes MPI), so it never holds up exit; first it gives the Works still
pending a bounded time to complete (a collective nobody waited for would otherwise be finished
by MPI_Finalize into buffers already freed, which crashed Open MPI now and then). A rank that
raises aborts the job through the excepthook, as before; an MPI error in a test is kept on the
Work and raised by its ``wait()``.
"""

from __future__ import annotations

import atexit
import threading
import time

# seconds between two rounds of tests, short against a layer's compute (milliseconds): a
# collective's every step needs a test. Once nothing has started or completed for
# BACKOFF_AFTER seconds (longer than a bucket's all-reduce takes), the pause doubles up to
# MAX_INTERVAL, so a Work left pending for long (a late peer) costs little CPU (a round is
# 30-80 us of CPU here)
DEFAULT_INTERVAL = 2e-4
BACKOFF_AFTER = 0.02
MAX_INTERVAL = 2e-3
# at exit, how long pending Works may take to complete before MPI is finalized under them
# (a Work whose peers never come is left: bounded, so that exit never hangs)
EXIT_DRAIN_SECONDS = 10.0


class ProgressThread:
    """Tests the requests of registered Works until each completes (see the module doc)."""

    def __init__(self, interval: float = DEFAULT_INTERVAL, threaded: bool = True):
        self.interval = interval
        # why a threadless form: below MPI_THREAD_SERIALIZED no thread may call MPI, yet a
        # Work nobody waited for must still complete before MPI_Finalize (drain does it)
        self.threaded = threaded
        self._pending: list = []
        self._cond = threading.Condition()
        self._thread = None
        self._stopping = False
        self.rounds = 0  # rounds of tests run (for tests and benchmarks)
        self.added = 0  # Works registered
        self._cpu = 0.0

    def launch(self) -> None:
        """Start the thread (idle until a Work is added). Done once, up front: starting it
        inside a training step would put its allocations into that step's memory counts."""
        with self._cond:
            if self.threaded and self._thread is None and not self._stopping:
                self._thread = threading.Thread(target=self._run, name="tensorix-mpi-progress",
                                                daemon=True)
                self._thread.start()

    def add(self, work) -> None:
        """Keep testing ``work`` (its buffers stay referenced here until it completes)."""
        with self._cond:
            if self._stopping:
                return
            if not self.threaded:  # why: nobody else prunes the list of a threadless one
                self._pending = [w for w in self._pending if not w._progress_done()]
            self._pending.append(work)
            self.added += 1
            self._cond.notify_all()  # all: a drain() may wait on the same condition
        self.launch()

    def discard(self, work) -> None:
        """Stop listing ``work`` (its caller completed it): the thread then holds nothing of
        a finished collective, not even until its next round."""
        with self._cond:
            if work in self._pending:
                self._pending.remove(work)
                if not self._pending:
                    self._cond.notify_all()  # a drain() may be waiting for this

    def cpu_seconds(self) -> float:
        """CPU time the thread has used so far (its thread_time, sampled each round)."""
        return self._cpu

    def pending(self) -> int:
        with self._cond:
            return len(self._pending)

    def _run(self):
        pause, seen, event = self.interval, self.added, time.monotonic()
        while True:
            with self._cond:
                while not self._pending and not self._stopping:
                    self._cond.wait()  # idle: no polling, no CPU
                if self._stopping:
                    return
                works, before = list(self._pending), len(self._pending)
            self._test_all(works)  # outside the lock: add() and discard() never wait for MPI
            works = None  # why: hold no finished Work while sleeping
            self.rounds += 1
            self._cpu = time.thread_time()
            with self._cond:
                self._pending = [w for w in self._pending if not w._progress_done()]
                if not self._pending:
                    self._cond.notify_all()  # a drain() may be waiting for this
                    continue
                if len(self._pending) < before or self.added != seen:
                    seen, event = self.added, time.monotonic()
            quiet = time.monotonic() - event > BACKOFF_AFTER
            pause = min(2 * pause, MAX_INTERVAL) if quiet else self.interval
            time.sleep(pause)

    @staticmethod
    def _test_all(works):
        # why a function: its loop variable (a Work) is gone before the thread sleeps
        for work in works:
            work._test(blocking=False)

    def drain(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for the pending Works to complete (the thread keeps testing
        them); True when none is left."""
        deadline = time.monotonic() + seconds
        if not self.threaded:  # the caller's thread tests them (at exit: the main thread)
            while self.pending() and time.monotonic() < deadline:
                with self._cond:
                    works = list(self._pending)
                self._test_all(works)
                with self._cond:
                    self._pending = [w for w in self._pending if not w._progress_done()]
                time.sleep(self.interval)
            return not self.pending()
        with self._cond:
            while self._pending and self._thread is not None and not self._stopping:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, 0.01))
            return not self._pending

    def stop(self, drain: float = 0.0, timeout: float = 5.0) -> None:
        """Stop and join the thread, after waiting up to ``drain`` seconds for pending Works
        (at exit: a collective nobody waited for must not still be running when MPI is
        finalized, after its buffers were freed). Works left pending are left to their
        ``wait()``."""
        if drain > 0:
            self.drain(drain)
        with self._cond:
            self._stopping = True
            self._pending = []
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)


_active: list = []  # the running ProgressThread, if any (at most one per process)


def start(interval: float = DEFAULT_INTERVAL, threaded: bool = True) -> ProgressThread:
    """The process's progress thread (made on first use; stopped at exit); ``threaded=False``
    only lists the pending Works, for the exit to complete."""
    if not _active:
        _active.append(ProgressThread(interval, threaded))
        _active[0].launch()
    return _active[0]


def stop(drain: float = EXIT_DRAIN_SECONDS) -> None:
    """Stop the progress thread, if one runs (destroy_process_group, interpreter exit), after
    up to ``drain`` seconds for the collectives still pending to complete."""
    while _active:
        _active.pop().stop(drain)


# why here: Python's atexit callbacks run before mpi4py's MPI_Finalize (a C-level Py_AtExit),
# so the thread is never inside an MPI call while MPI shuts down
atexit.register(stop)
