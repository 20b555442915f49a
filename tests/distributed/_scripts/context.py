"""Ring and Ulysses attention on each rank's part of a sequence: outputs and gradients of
q, k, v (for a fixed random weighting of the output) on this rank's tokens."""

import sys
from pathlib import Path

import numpy as np

import tensorix as tx

B, H, T, D = 2, 4, 16, 8


def inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((B, H, T, D)) for _ in range(4)]  # q, k, v, output weight


def main():
    sys.path.insert(0, str(Path(__file__).parent))
    from _common import report

    import tensorix.distributed as dist
    from tensorix.distributed import context_parallel as cp

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    q, k, v, w = inputs()
    out = {}
    contiguous = np.arange(rank * T // world, (rank + 1) * T // world)
    if sys.argv[2:] == ["double"]:  # recompute's backward is once differentiable
        local = [tx.tensor(a[:, :, contiguous], requires_grad=True) for a in (q, k, v)]
        o = cp.ring_attention(*local, contiguous, recompute=True)
        gq = tx.autograd.grad((o * o).sum(), local[0], create_graph=True)[0]
        try:
            gq.sum().backward()
            out["double"] = "no error"
        except RuntimeError as e:
            out["double"] = str(e)
        report(rank, out)
        return
    for name, causal in (("ring", False), ("ring_causal", True), ("ulysses", False),
                         ("ulysses_causal", True), ("ring_recompute", False),
                         ("ring_causal_recompute", True)):
        pos = cp.load_balanced_positions(T, rank, world) if name.startswith("ring_causal") \
            else contiguous
        local = [tx.tensor(a[:, :, pos], requires_grad=True) for a in (q, k, v)]
        with tx.memory.track():  # the bytes held from the end of forward to backward
            before = tx.memory.memory_allocated()
            if name.startswith("ring"):
                o = cp.ring_attention(*local, pos, causal=causal,
                                      recompute=name.endswith("recompute"))
            else:
                o = cp.ulysses_attention(*local, causal=causal)
            kept = tx.memory.memory_allocated() - before
        (o * tx.tensor(w[:, :, pos])).sum().backward()
        out[name] = {"pos": pos, "out": o.detach().numpy(), "kept": kept,
                     "grads": [t.grad.numpy() for t in local]}
    report(rank, out)


if __name__ == "__main__":
    main()
