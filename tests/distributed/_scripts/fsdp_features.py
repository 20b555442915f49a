"""FSDP's prefetch (forward, BACKWARD_PRE/POST), HYBRID_SHARD (given groups and the
LOCAL_WORLD_SIZE default), CPU offload on the "cuda" stand-in and the state-dict types, on the
float64 model of sharded.py (also with its blocks in CheckpointWrappers). Each rank reports
the final full weights of every variant and its counters."""

import gc
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import sharded  # noqa: E402
from _common import report  # noqa: E402

import tensorix as tx  # noqa: E402
import tensorix.distributed as dist  # noqa: E402
from tensorix import nn  # noqa: E402
from tensorix.distributed import fsdp  # noqa: E402
from tensorix.utils.remat import CheckpointWrapper  # noqa: E402

FSDP, S = fsdp.FullyShardedDataParallel, fsdp.ShardingStrategy


def train(model, opt, rank, world, device="cpu"):
    per = sharded.GLOBAL_BATCH // world
    for step in range(sharded.STEPS):
        x, y = sharded.batch(step)
        x, y = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
        opt.zero_grad()
        logits = model(x.to(device))
        loss = nn.functional.cross_entropy(logits.reshape(-1, sharded.VOCAB),
                                           y.to(device).reshape(-1))
        loss.backward()
        opt.step()
    return logits.device


def weights(model):
    return {k: v.to("cpu").numpy() for k, v in model.state_dict().items()}


def units(model):
    return [m for m in model.modules() if isinstance(m, FSDP)]


def run(rank, world, device="cpu", checkpointed=False, **kwargs):
    model = sharded.build(0, tx.float64).to(device)
    if checkpointed:  # each block recomputed in backward, its names as the plain model's
        for i, block in enumerate(model.blocks):
            model.blocks._modules[str(i)] = CheckpointWrapper(block)
    model = FSDP(model, auto_wrap_policy=fsdp.ModuleWrapPolicy({sharded.Block}), **kwargs)
    out_device = train(model, sharded.adam(model.parameters()), rank, world, device)
    return model, {"weights": weights(model), "device": str(out_device),
                   "hits": sum(u._handle.prefetch_hits for u in units(model)),
                   "gathers": sum(u._handle.gathers for u in units(model)),
                   "shard_devices": sorted({str(p.device) for p in model.parameters()})}


def main():
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    B = fsdp.BackwardPrefetch
    out = {}
    for name, kwargs in {
            "none": dict(backward_prefetch=None),
            "forward": dict(forward_prefetch=True, backward_prefetch=None),
            "pre": dict(backward_prefetch=B.BACKWARD_PRE),
            "post": dict(backward_prefetch=B.BACKWARD_POST),
            "zero2_forward": dict(sharding_strategy=S.SHARD_GRAD_OP, forward_prefetch=True)
    }.items():
        out[name] = run(rank, world, **kwargs)[1]
    # HYBRID_SHARD: shard over pairs (4 ranks) or single ranks (2), replicate across
    node = 2 if world == 4 else 1
    shard = [dist.new_group(list(range(k, k + node))) for k in range(0, world, node)]
    repl = [dist.new_group(list(range(j, world, node))) for j in range(node)]
    pair = (shard[rank // node], repl[rank % node])
    model, out["hybrid"] = run(rank, world, sharding_strategy=S.HYBRID_SHARD,
                               process_group=pair, forward_prefetch=True)
    out["hybrid_held"] = sum(p.numel() for p in model.parameters())
    # rank0_only under HYBRID_SHARD: global rank 0 alone gets the dicts (not the first rank
    # of every shard group)
    T = fsdp.StateDictType
    with FSDP.state_dict_type(model, T.FULL_STATE_DICT, fsdp.FullStateDictConfig(
            rank0_only=True), fsdp.FullOptimStateDictConfig(rank0_only=True)):
        out["hybrid_rank0_only"] = [
            len(model.state_dict()),
            len(FSDP.optim_state_dict(model, sharded.adam(model.parameters())))]
    out["hybrid_zero2"] = run(rank, world, sharding_strategy=S._HYBRID_SHARD_ZERO2,
                              process_group=pair)[1]
    os.environ["LOCAL_WORLD_SIZE"] = str(node)  # the default groups: one "node" per pair
    out["hybrid_default"] = run(rank, world, sharding_strategy=S.HYBRID_SHARD)[1]
    # FSDP units inside CheckpointWrappers: the names strip both wrappers (Module.state_key)
    model, out["checkpointed"] = run(rank, world, checkpointed=True)
    out["checkpointed_names"] = [[n for n, _ in model.named_parameters()],
                                 list(model.state_dict())]
    # CPU offload on the "cuda" stand-in: shards and the Adam step on the host
    with tx.backend.fake_cuda():
        for offload in (False, True):
            model, res = run(rank, world, "cuda", cpu_offload=fsdp.CPUOffload(offload))
            gc.collect()  # what stays on the device between steps: shards, grads, Adam
            res["device_bytes"] = tx.cuda.memory_allocated()
            res["shard_bytes"] = sum(p.numel() * 8 for p in model.parameters())
            out[f"cuda_offload_{offload}"] = res
            del model
            gc.collect()
    # state-dict types on the trained FULL_SHARD model
    model = run(rank, world)[0]
    with FSDP.state_dict_type(model, T.SHARDED_STATE_DICT):
        pieces = model.state_dict()
    with FSDP.state_dict_type(model, T.LOCAL_STATE_DICT):
        local = model.state_dict()
    with FSDP.state_dict_type(model, T.FULL_STATE_DICT,
                              fsdp.FullStateDictConfig(offload_to_cpu=True, rank0_only=True)):
        out["rank0_only_keys"] = len(model.state_dict())
    out["sharded"] = {k: [v.offset, v.local_tensor().numpy(), list(v.shape)]
                      for k, v in pieces.items() if isinstance(v, fsdp.ShardedTensor)}
    out["local_keys"] = sorted(local)
    for kind, sd in ((T.SHARDED_STATE_DICT, pieces), (T.LOCAL_STATE_DICT, local)):
        fresh = FSDP(sharded.build(1, tx.float64),
                     auto_wrap_policy=fsdp.ModuleWrapPolicy({sharded.Block}))
        with FSDP.state_dict_type(fresh, kind):
            fresh.load_state_dict(sd)
        out[f"reloaded_{kind.name}"] = weights(fresh)
    # bad input: clear errors naming the class and the argument
    errors = {}
    for key, call in (
            ("prefetch", lambda: FSDP(sharded.build(0, tx.float64), backward_prefetch="pre")),
            ("pair", lambda: FSDP(sharded.build(0, tx.float64), process_group=pair)),
            ("offload", lambda: FSDP(sharded.build(0, tx.float64), cpu_offload=True)),
            ("sd_type", lambda: FSDP.set_state_dict_type(model, "full"))):
        try:
            call()
        except (TypeError, ValueError) as e:
            errors[key] = f"{type(e).__name__}: {e}"
    with FSDP.state_dict_type(model, T.SHARDED_STATE_DICT):
        try:
            model.load_state_dict({k: v.local_tensor() for k, v in pieces.items()
                                   if isinstance(v, fsdp.ShardedTensor)})
        except TypeError as e:
            errors["sharded_value"] = f"TypeError: {e}"
    out["errors"] = errors
    report(rank, out)


if __name__ == "__main__":
    main()
