"""Optimizer-state offload (tensorix.optim.offload): bytes held between steps and step time.

An MLP of 8 Linear(1024, 1024) layers (8.4 M float32 parameters, 67 MiB of Adam state), AdamW:

- on the "cuda" stand-in: device bytes between steps (the pool's count) plain and with the
  state offloaded to host memory;
- on the CPU: host bytes between steps (tensorix.memory, tracemalloc) plain and with the
  state in memory-mapped files;
- optimizer step time for each, with the staging overlapped (one background thread) and not.

Run: ``python benchmarks/bench_offload.py`` (the table goes into docs/distributed.md).
"""

from __future__ import annotations

import gc
import tempfile
import time

import tensorix as tx
from tensorix import nn
from tensorix.optim.offload import OffloadOptimizer

LAYERS, WIDTH, STEPS = 8, 1024, 4


def model(device):
    tx.manual_seed(0)
    return nn.Sequential(*[nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS)]).to(device)


def run(device, offload, overlap, folder):
    m = model(device)
    opt = tx.optim.AdamW(m.parameters(), lr=1e-3)
    if offload:
        opt = OffloadOptimizer(opt, to="cpu" if device == "cuda" else "disk",
                               path=folder, overlap=overlap)
    x = tx.randn(16, WIDTH, device=device)
    times = []
    for _ in range(STEPS):
        opt.zero_grad()
        m(x).square().mean().backward()
        start = time.perf_counter()
        opt.step()
        times.append(time.perf_counter() - start)
    gc.collect()
    if device == "cuda":
        held = tx.cuda.memory_allocated()
    else:
        held = tx.memory.memory_allocated()
    del m, opt
    gc.collect()
    return held, min(times[1:])


def main():
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        with tx.backend.fake_cuda():
            for offload, overlap in ((False, False), (True, False), (True, True)):
                rows.append(("cuda stand-in", "host" if offload else "-", overlap,
                             *run("cuda", offload, overlap, folder)))
        for offload, overlap in ((False, False), (True, False), (True, True)):
            with tx.memory.track():
                rows.append(("cpu", "disk (mmap)" if offload else "-", overlap,
                             *run("cpu", offload, overlap, folder)))
    print("| device | state offloaded to | overlapped | bytes held between steps (MiB) | "
          "optimizer step (ms) |")
    print("|---|---|---|---|---|")
    for dev, where, overlap, held, t in rows:
        print(f"| {dev} | {where} | {'yes' if overlap and where != '-' else '-'} | "
              f"{held / 2**20:.1f} | {1e3 * t:.1f} |")


if __name__ == "__main__":
    main()
