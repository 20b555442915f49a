"""Data-parallel memory and traffic per rank: DDP (ZeRO-0), ZeRO-1, ZeRO-2 and ZeRO-3; DDP's
overlap of communication with backward; tensor-parallel bytes per rank against theory.

Run ``python benchmarks/bench_sharded.py [-n 4]``: it launches itself under mpiexec. Each rank
trains the demo's CharGPT (d=256, 4 layers) for a few Adam steps under each scheme and reports

- the bytes it keeps between steps: parameters, gradients and optimizer state;
- the peak bytes during a step (tensorix.memory: array data plus Python objects);
- the payload it hands to each collective per step (tensorix.distributed.traffic), turned into
  ring-algorithm bytes sent per rank, next to the theory in units of the parameter bytes P:
  all-reduce 2(N-1)/N P, all-gather and reduce-scatter (N-1)/N P each;
- the time per step.

DDP's overlap (the same model): backward alone (no DDP), backward under DDP (buckets
all-reduced non-blocking as backward produces them, the last hook waiting for them), and
backward under ``no_sync`` followed by the same all-reduces one after the other; the overlap is
the share of communication time that DDP hides.

Tensor parallel (the demo GPT split Megatron-style over all N ranks, with and without sequence
parallelism): the payloads of one forward + backward, as ring bytes sent per rank, against
the theory for L layers, activations A = b s d bytes, vocabulary-parallel cross entropy
(3 all-reduces of b s values): all-reduce ``(4L + 2) A + 3 b s``; with sequence parallelism
all-gathers ``(4L + 2) A / N``, reduce-scatters ``4L A / N`` per rank, and all-reduces
``2A + 3 b s + 6 L d`` (the replicated norm and row-bias gradients).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

STEPS, BATCH, CONTEXT = 3, 8, 64


def _ring_bytes(traffic, world):
    """Bytes this rank sends per the ring algorithms, from the payload given to each call."""
    f = (world - 1) / world
    sent = 0.0
    for what, (_, nbytes) in traffic.items():
        if what == "all_reduce":
            sent += 2 * f * nbytes
        elif what in ("all_gather_into_tensor", "reduce_scatter_tensor"):
            sent += (world - 1) * nbytes  # the payload counted is this rank's part
        elif what == "broadcast":
            sent += f * nbytes
    return sent


def _held(params, opt):
    """Bytes of parameters, gradients and optimizer state this rank keeps."""
    p = sum(t._data.nbytes for t in params)
    g = sum(t.grad._data.nbytes for t in params if t.grad is not None)
    s = sum(v._data.nbytes for st in opt.state.values() for v in st.values()
            if hasattr(v, "_data") and v.dim() > 0)
    return p, g, s


def worker(out):
    import tensorix as tx
    import tensorix.distributed as dist
    from tensorix.demo import Block, CharGPT
    from tensorix.distributed.fsdp import FullyShardedDataParallel as FSDP
    from tensorix.distributed.fsdp import ModuleWrapPolicy, ShardingStrategy
    from tensorix.distributed.optim import ZeroRedundancyOptimizer
    from tensorix.nn import functional as F
    from tensorix.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(rank)
    x = tx.tensor(rng.integers(0, 65, (BATCH, CONTEXT)))
    y = tx.tensor(rng.integers(0, 65, (BATCH, CONTEXT)))
    rows = {}
    for scheme in ("DDP (ZeRO-0)", "ZeRO-1", "ZeRO-2", "ZeRO-3"):
        tx.manual_seed(0)
        net = CharGPT(65, CONTEXT, d_model=256, n_heads=4, n_layers=4)
        total = sum(p.numel() * 4 for p in net.parameters())
        if scheme.startswith("DDP") or scheme == "ZeRO-1":
            model = DDP(net)
            params = list(model.parameters())
            opt = tx.optim.Adam(params, lr=1e-3) if scheme.startswith("DDP") else \
                ZeroRedundancyOptimizer(params, tx.optim.Adam, lr=1e-3)
        else:
            strategy = ShardingStrategy.SHARD_GRAD_OP if scheme == "ZeRO-2" else \
                ShardingStrategy.FULL_SHARD
            model = FSDP(net, sharding_strategy=strategy,
                         auto_wrap_policy=ModuleWrapPolicy({Block}))
            params = list(model.parameters())
            opt = tx.optim.Adam(params, lr=1e-3)
        times = []
        for step in range(STEPS):
            if step == STEPS - 1:
                dist.traffic(reset=True)
            dist.barrier()
            t0 = time.perf_counter()
            with tx.memory.track() as mem:
                opt.zero_grad()
                loss = F.cross_entropy(model(x).reshape(-1, 65), y.reshape(-1))
                loss.backward()
                opt.step()
            times.append(time.perf_counter() - t0)
        traffic = dist.traffic(reset=True)
        traffic.pop("barrier", None)
        rows[scheme] = dict(P=total, held=_held(params, opt), peak=mem.peak,
                            sent=_ring_bytes(traffic, world), step_ms=1e3 * min(times),
                            calls={k: v[0] for k, v in traffic.items()})
    rows["overlap"] = ddp_overlap(tx, dist, CharGPT, DDP, F, x, y)
    rows["tp"] = tp_bytes(tx, dist, world)
    with open(os.path.join(out, f"rank{rank}.json"), "w") as fh:
        json.dump(rows, fh)


def ddp_overlap(tx, dist, CharGPT, DDP, F, x, y, repeat=3):
    """Backward times (ms): alone, under DDP (overlapped), and with the same bucketed
    all-reduces after it; the all-reduces alone."""
    tx.manual_seed(0)
    net = CharGPT(65, CONTEXT, d_model=256, n_heads=4, n_layers=4)
    model = DDP(net, bucket_cap_mb=4)  # several buckets, so that some can overlap

    def loss():
        return F.cross_entropy(model(x).reshape(-1, 65), y.reshape(-1))

    buckets = [list(b.params) for b in model._buckets]  # DDP's own buckets, in its order
    times = {"alone": [], "ddp": [], "after": [], "comm": []}
    for _ in range(repeat):
        for kind in ("alone", "ddp", "after"):
            model.zero_grad()
            out = loss() if kind != "alone" else \
                F.cross_entropy(net(x).reshape(-1, 65), y.reshape(-1))
            dist.barrier()
            t0 = time.perf_counter()
            if kind == "after":
                with model.no_sync():
                    out = loss()
                t0 = time.perf_counter()
                out.backward()
                t1 = time.perf_counter()
                for b in buckets:
                    flat = tx.cat([p.grad.reshape(-1) for p in b if p.grad is not None])
                    dist.all_reduce(flat)
                times["comm"].append(time.perf_counter() - t1)
            else:
                out.backward()
            times[kind].append(time.perf_counter() - t0)
    return {k: 1e3 * min(v) for k, v in times.items()}


def tp_bytes(tx, dist, world, batch=4, layers=2, d=64):
    """Ring bytes sent per rank in one forward + backward of the tensor-parallel demo GPT,
    measured and in theory, without and with sequence parallelism."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "examples"))
    from train_gpt_parallel import parallel_loss, parallelize_gpt

    from tensorix.demo import CharGPT

    vocab, e = 64, 4
    a = batch * CONTEXT * d * e
    f = (world - 1) / world
    out = {}
    for sp in (False, True):
        tx.manual_seed(0)
        m = parallelize_gpt(CharGPT(vocab, CONTEXT, d_model=d, n_heads=4, n_layers=layers),
                            None, sp)
        rng = np.random.default_rng(0)
        ids = tx.tensor(rng.integers(0, vocab, (batch, CONTEXT)))
        tgt = tx.tensor(rng.integers(0, vocab, (batch, CONTEXT)))
        dist.traffic(reset=True)
        parallel_loss(m, ids, tgt).backward()
        traffic = dist.traffic(reset=True)
        traffic.pop("barrier", None)
        small = 3 * batch * CONTEXT * e
        if sp:
            theory = (world - 1) * ((4 * layers + 2) * a / world + 4 * layers * a / world) + \
                2 * f * (2 * a + small + 6 * layers * d * e)
        else:
            theory = 2 * f * ((4 * layers + 2) * a + small)
        out["sp" if sp else "tp"] = dict(sent=_ring_bytes(traffic, world), theory=theory,
                                        calls={k: v[0] for k, v in traffic.items()})
    return out


THEORY = {"DDP (ZeRO-0)": "2(N-1)/N", "ZeRO-1": "2(N-1)/N + (N-1)/N",
          "ZeRO-2": "(N-1)/N + (N-1)/N", "ZeRO-3": "2(N-1)/N + (N-1)/N"}
FACTOR = {"DDP (ZeRO-0)": 2, "ZeRO-1": 3, "ZeRO-2": 2, "ZeRO-3": 3}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=4)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker)
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
        subprocess.run(["mpiexec", "--oversubscribe", "-n", str(args.n), sys.executable,
                        __file__, "--worker", out], check=True, env=env)
        ranks = []
        for r in range(args.n):
            with open(os.path.join(out, f"rank{r}.json")) as fh:
                ranks.append(json.load(fh))
    n = args.n
    print(f"CharGPT d=256, 4 layers, {n} ranks, batch {BATCH}x{CONTEXT} per rank, Adam; "
          "rank 0's numbers (MiB), sent = ring bytes per step")
    print("| scheme | params | grads | optim state | held total | peak in step | sent | "
          "theory sent (xP) | ms/step |")
    print("|---|---|---|---|---|---|---|---|---|")
    overlap, tp = ranks[0].pop("overlap"), ranks[0].pop("tp")
    for scheme, row in ranks[0].items():
        p, g, s = (b / 2**20 for b in row["held"])
        theory = FACTOR[scheme] * (n - 1) / n * row["P"] / 2**20
        print(f"| {scheme} | {p:.2f} | {g:.2f} | {s:.2f} | {p + g + s:.2f} | "
              f"{row['peak'] / 2**20:.2f} | {row['sent'] / 2**20:.2f} | {THEORY[scheme]} = "
              f"{theory:.2f} | {row['step_ms']:.0f} |")
    hidden = (overlap["after"] - overlap["ddp"]) / overlap["comm"] if overlap["comm"] else 0
    print(f"\nDDP overlap, {n} ranks (rank 0, ms, best of 3): backward alone "
          f"{overlap['alone']:.0f}; under DDP {overlap['ddp']:.0f}; backward then all-reduces "
          f"{overlap['after']:.0f} (all-reduces alone {overlap['comm']:.0f}); hidden: "
          f"{100 * hidden:.0f}% of the communication")
    print(f"\nTensor parallel over {n} ranks (demo GPT d=64, 2 layers, batch 4x{CONTEXT}, "
          "float32), ring bytes sent per rank per forward+backward:")
    print("| layout | collectives (calls) | measured KiB | theory KiB |")
    print("|---|---|---|---|")
    for key, name in (("tp", "TP"), ("sp", "TP + SP")):
        row = tp[key]
        calls = ", ".join(f"{k} {v}" for k, v in sorted(row["calls"].items()))
        print(f"| {name} | {calls} | {row['sent'] / 1024:.1f} | {row['theory'] / 1024:.1f} |")


if __name__ == "__main__":
    main()
