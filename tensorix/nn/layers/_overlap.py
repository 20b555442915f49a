"""A recurrent layer's large GEMMs overlapped with its time loop, on the pool's second thread.

Why: the time loop of a layer (per step one (N, H) x (H, G) GEMM and the gate pass) is a chain
that one thread runs, while the layer's other GEMMs, each over all steps, are not part of the
chain: the input projection ``x W_ih^T`` (forward), and the weight and input gradients
(backward). Run after or before the loop they leave the loop's time on one core; cut into
chunks of a few steps they run beside it on a second thread: the forward loop starts once the
first chunk's projection is there, and the backward GEMMs of a chunk start once the loop has
produced that chunk's gate gradients. What the loop thread has left at its end it shares.

The chunks and the order their results are summed in are fixed by the shapes, never by which
thread ran what, so the results do not depend on the thread count or the machine's load (the
pool runs both tasks on the calling thread, one after the other, while the machine is busy:
``_threads.parallel``).
"""

from __future__ import annotations

import itertools
import threading

from ... import _threads

__all__ = ["spans", "Pipe", "Tasks", "run_pair", "MIN_PART"]


def spans(t_len, n, rows=256):
    """Chunks of the time loop in its processing order, as (lo, hi) ranges of steps: about
    eight, each at least ``rows`` rows (``n`` per step) so each chunk's GEMM stays efficient
    (the backward's weight gradients, whose chunks add up, take 512: 5-10% less CPU than
    256 in a measurement at width 256)."""
    size = max(-(-t_len // 8), -(-rows // max(1, n)), 1)
    return [(lo, min(t_len, lo + size)) for lo in range(0, t_len, size)]


class Pipe:
    """One event per chunk: set by the producer once the chunk is done (or when it failed, so
    that no consumer waits for ever; the consumer then stops, and the producer's error is
    the one raised)."""

    def __init__(self, n):
        self.events = [threading.Event() for _ in range(n)]
        self.failed = False

    def done(self, i):
        self.events[i].set()

    def wait(self, i) -> bool:
        """Wait for chunk ``i``; False when the producer failed."""
        self.events[i].wait()
        return not self.failed

    def produce(self, work):
        """Run ``work()`` (which calls :meth:`done` per chunk); whatever happens, release
        every waiting consumer."""
        try:
            work()
        except BaseException:
            self.failed = True
            raise
        finally:
            for e in self.events:
                e.set()


class Tasks:
    """Jobs ``(chunk, fn)`` that both threads claim in order, each waiting for its chunk."""

    def __init__(self, pipe, jobs):
        self.pipe, self.jobs, self.claim = pipe, jobs, itertools.count()

    def drain(self):
        while (j := next(self.claim)) < len(self.jobs):
            chunk, fn = self.jobs[j]
            if not self.pipe.wait(chunk):
                return
            fn()


# Multiply-adds per part below which a split does not pay: _threads' GEMM split's own
# threshold; while the machine is busy the pool takes a part only of work BUSY_FACTOR times
# that per thread, as it does for one large GEMM (a layer's overlapped GEMMs are ~2^29-2^31 at
# width 256).
MIN_PART = _threads._GEMM_MIN_PART


def run_pair(producer, consumer, work):
    """``producer()`` and ``consumer()`` at once on this thread and a pool thread; on one
    thread (one configured, inside a pool worker, or ``work`` multiply-adds too few for a
    busy machine: ``_threads.parallel``'s rules) the producer first. The first of the two
    that a thread claims is always the producer, so a consumer never waits for a producer
    that no thread has started."""
    work = max(int(work), 1)

    def part(lo, hi):  # two parts: the producer's and the consumer's; one part: both
        if lo == 0:
            producer()
        if hi == work:
            consumer()

    _threads.parallel(work, part, MIN_PART, pieces=1)
