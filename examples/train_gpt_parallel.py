"""Train the demo's character GPT with data and tensor parallelism (and optionally sequence
parallelism) over MPI, and check the loss curve against one process.

    tensorix run -n 4 examples/train_gpt_parallel.py --dp 2 --tp 2 --check
    tensorix run -n 2 examples/train_gpt_parallel.py --tp 2 --sp

The ranks form a dp x tp grid: rank = dp_index * tp + tp_index. Each tensor-parallel group
holds one model split Megatron-style (vocabulary-parallel embedding and head with a
vocabulary-parallel cross entropy, attention heads and MLP split column/row); each
data-parallel group averages gradients with DDP. Every rank builds the same seeded model and
takes its part, so with ``--check`` rank 0 also trains the plain model on the whole batch and
prints both curves: they agree to float64 rounding.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

import tensorix as tx
import tensorix.distributed as dist
from tensorix import nn
from tensorix.data import CharVocab, load_text
from tensorix.demo import CharGPT
from tensorix.distributed import tensor_parallel as tp
from tensorix.nn import functional as F
from tensorix.nn.parallel import DistributedDataParallel


def parallelize_gpt(model, group, sequence_parallel=False):
    """Split ``model`` (a CharGPT) over the tensor-parallel ``group`` in place."""
    size = dist.get_world_size(group)
    sp = dict(sequence_parallel=sequence_parallel)
    tp.parallelize_module(model, group, {"tok_emb": tp.ColwiseParallel(),
                                         "head": tp.ColwiseParallel()})
    for block in model.blocks:
        block.attn.n_heads //= size
        tp.parallelize_module(block, group, {"attn.qkv": tp.ColwiseParallel(chunks=3, **sp),
                                             "attn.proj": tp.RowwiseParallel(**sp),
                                             "mlp.0": tp.ColwiseParallel(**sp),
                                             "mlp.2": tp.RowwiseParallel(**sp)})
        if sequence_parallel:
            block.ln1 = tp.SequenceParallelLayerNorm(block.ln1, group)
            block.ln2 = tp.SequenceParallelLayerNorm(block.ln2, group)
    model.tp_group, model.sequence_parallel = group, sequence_parallel
    return model


class ParallelLM(nn.Module):
    """``forward(ids, targets) -> loss`` of a parallelized CharGPT (what DDP wraps)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids, targets):
        return parallel_loss(self.model, ids, targets)


def parallel_loss(model, ids, targets):
    """The forward of a parallelized CharGPT and its mean cross entropy."""
    x = model.tok_emb(ids) + model.pos_emb(tx.arange(ids.shape[1]))
    if model.sequence_parallel:
        # split the sequence after the (replicated) embeddings; gather it again before the
        # replicated final norm, whose input gradient every rank then holds whole
        x = tp.scatter_to_sequence(x, 1, model.tp_group)
        x = tp.gather_from_region(model.blocks(x), model.tp_group, dim=1)
    else:
        x = model.blocks(x)
    logits = model.head(model.ln_f(x))
    return tp.vocab_parallel_cross_entropy(logits, targets, model.tp_group).mean()


def plain_loss(model, ids, targets):
    logits = model(ids)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def build(vocab, args):
    tx.manual_seed(0)
    # the vocabulary padded to a multiple of tp: every rank holds an equal slice
    size = -(-vocab // args.tp) * args.tp
    return CharGPT(size, args.context, d_model=args.d_model, n_heads=4,
                   n_layers=args.layers).to(tx.float64 if args.float64 else tx.float32)


def batches(text, vocab, args):
    data = np.array(vocab.encode(text[:200_000]))
    rng = np.random.default_rng(1)
    for _ in range(args.steps):
        starts = rng.integers(0, len(data) - args.context - 1, args.batch)
        x = np.stack([data[s:s + args.context] for s in starts])
        y = np.stack([data[s + 1:s + args.context + 1] for s in starts])
        yield tx.tensor(x), tx.tensor(y)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dp", type=int, default=1)
    ap.add_argument("--tp", type=int, default=None, help="default: world size / dp")
    ap.add_argument("--sp", action="store_true", help="sequence parallelism too")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=8, help="global batch")
    ap.add_argument("--context", type=int, default=32)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--float64", action="store_true")
    ap.add_argument("--check", action="store_true", help="rank 0 also trains one process")
    ap.add_argument("--report", default=None, help=argparse.SUPPRESS)  # tests: JSON per rank
    args = ap.parse_args(argv)

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    args.tp = args.tp or world // args.dp
    if args.dp * args.tp != world:
        raise SystemExit(f"--dp {args.dp} x --tp {args.tp} must equal the world size {world}")
    if args.batch % args.dp:
        raise SystemExit(f"--batch {args.batch} must split over --dp {args.dp}")
    # every rank creates every group, in the same order (as torch requires)
    tp_groups = [dist.new_group([d * args.tp + t for t in range(args.tp)])
                 for d in range(args.dp)]
    dp_groups = [dist.new_group([d * args.tp + t for d in range(args.dp)])
                 for t in range(args.tp)]
    d_index, t_index = divmod(rank, args.tp)
    tp_group, dp_group = tp_groups[d_index], dp_groups[t_index]

    text = load_text()
    vocab = CharVocab(text)
    model = parallelize_gpt(build(len(vocab), args), tp_group, args.sp)
    lm = ParallelLM(model)
    lm = DistributedDataParallel(lm, process_group=dp_group) if args.dp > 1 else lm
    opt = tx.optim.AdamW(lm.parameters(), lr=3e-3)
    ref = build(len(vocab), args) if args.check and rank == 0 else None
    ref_opt = tx.optim.AdamW(ref.parameters(), lr=3e-3) if ref is not None else None
    per = args.batch // args.dp
    curve, ref_curve = [], []
    for step, (x, y) in enumerate(batches(text, vocab, args)):
        xs, ys = x[d_index * per:(d_index + 1) * per], y[d_index * per:(d_index + 1) * per]
        opt.zero_grad()
        loss = lm(xs, ys)
        loss.backward()
        opt.step()
        mean = tx.tensor([loss.item()], dtype=tx.float64)
        dist.all_reduce(mean, dist.ReduceOp.AVG)  # the loss over the whole batch
        curve.append(mean.item())
        if ref is not None:
            ref_opt.zero_grad()
            r = plain_loss(ref, x, y)
            r.backward()
            ref_opt.step()
            ref_curve.append(r.item())
        if rank == 0 and (step % 5 == 0 or step == args.steps - 1):
            extra = f"   one process {ref_curve[-1]:.6f}" if ref is not None else ""
            print(f"step {step:3d}  loss {curve[-1]:.6f}{extra}", flush=True)
    if ref is not None:
        diff = max(abs(a - b) for a, b in zip(curve, ref_curve))
        print(f"dp={args.dp} tp={args.tp} sp={args.sp}: largest difference from one process "
              f"{diff:.2e}")
    if args.report:
        with open(os.path.join(args.report, f"rank{rank}.json"), "w") as fh:
            json.dump({"curve": curve, "ref": ref_curve}, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
