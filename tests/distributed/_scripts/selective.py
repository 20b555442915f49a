"""Selective activation recomputation in tensor-parallel attention: the demo GPT's attention
split over the ranks, with and without recomputing its core, against the plain attention;
with dropout, recomputation against none (the RNG replayed); the bytes kept from forward to
backward, measured with tensorix.memory."""

import copy
import sys
from pathlib import Path

import numpy as np

import tensorix as tx

B, T, D, HEADS = 2, 128, 64, 4


def plain_attention():
    from tensorix.demo import CausalSelfAttention

    tx.manual_seed(0)
    return CausalSelfAttention(D, HEADS).to(tx.float64)


def inputs():
    rng = np.random.default_rng(0)
    return tx.tensor(rng.standard_normal((B, T, D))), tx.tensor(rng.standard_normal((B, T, D)))


def run(attn, x, w):
    x = x.detach().requires_grad_()
    y = attn(x)
    (y * w).sum().backward()
    return y.detach().numpy(), x.grad.numpy()


def main():
    sys.path.insert(0, str(Path(__file__).parent))
    from _common import report

    import tensorix.distributed as dist
    from tensorix.distributed.tensor_parallel import ParallelSelfAttention

    dist.init_process_group("mpi")
    x, w = inputs()
    out = {}
    for rc in (False, True):
        attn = ParallelSelfAttention.from_module(copy.deepcopy(plain_attention()),
                                                 recompute_core=rc)
        y, gx = run(attn, x, w)
        out[f"y_{rc}"], out[f"gx_{rc}"] = y, gx
        out[f"proj_bias_grad_{rc}"] = attn.proj.bias.grad.numpy().copy()
        # the bytes held from the end of forward to backward (everything backward needs)
        xr = x.detach().requires_grad_()
        with tx.memory.track():
            before = tx.memory.memory_allocated()
            y = attn(xr)
            out[f"kept_{rc}"] = tx.memory.memory_allocated() - before
            tx.memory.reset_peak_memory_stats()
            (y * w).sum().backward()
            out[f"peak_backward_{rc}"] = tx.memory.max_memory_allocated() - before
        for rng_case in ("dropout",):
            tx.manual_seed(5)
            drop = ParallelSelfAttention.from_module(copy.deepcopy(plain_attention()),
                                                     recompute_core=rc, dropout_p=0.2)
            tx.manual_seed(7 + dist.get_rank())
            out[f"{rng_case}_{rc}"] = run(drop, x, w)
    report(dist.get_rank(), out)


if __name__ == "__main__":
    main()
