"""FSDP optimizer state dicts and state-dict checkpoints at another world size.

``optim_state.py OUT save DIR`` trains the FSDP model of sharded.py two steps (nested units),
reports FSDP.optim_state_dict (FULL) and the weights after a third step taken from the state
dicts reloaded at the same world size (FULL and SHARDED), and saves through
distributed.checkpoint: FULL and SHARDED {"model", "optim"} state dicts, the LOCAL model state
dict, and a HYBRID_SHARD model (its own format and a SHARDED state dict).
``optim_state.py OUT load DIR`` (another world size) loads each and trains the third step."""

import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import sharded  # noqa: E402
from _common import report  # noqa: E402

import tensorix as tx  # noqa: E402
import tensorix.distributed as dist  # noqa: E402
from tensorix.distributed import checkpoint as dcp  # noqa: E402
from tensorix.distributed import fsdp  # noqa: E402

FSDP, T, S = fsdp.FullyShardedDataParallel, fsdp.StateDictType, fsdp.ShardingStrategy


def make(seed, **kwargs):
    model = FSDP(sharded.build(seed, tx.float64),
                 auto_wrap_policy=fsdp.ModuleWrapPolicy({sharded.Block}), **kwargs)
    return model, sharded.adam(model.parameters())


def grouped(model):
    """use_orig_params: Adam with its own learning rate for the LayerNorm parameters."""
    named = list(model.named_parameters())
    return tx.optim.Adam([{"params": [p for n, p in named if "norm" not in n]},
                          {"params": [p for n, p in named if "norm" in n], "lr": 0.02}],
                         lr=0.05)


def make_orig(seed):
    model = FSDP(sharded.build(seed, tx.float64), use_orig_params=True,
                 auto_wrap_policy=fsdp.ModuleWrapPolicy({sharded.Block}))
    return model, grouped(model)


MATRIX = {"shampoo": lambda ps: tx.optim.Shampoo(ps, lr=0.05, momentum=0.9, weight_decay=0.01),
          "soap": lambda ps: tx.optim.SOAP(ps, lr=0.05, precondition_frequency=1)}


def make_matrix(seed, kind):
    """Shampoo or SOAP on the flat shards (1-D: their per-element forms)."""
    model = FSDP(sharded.build(seed, tx.float64),
                 auto_wrap_policy=fsdp.ModuleWrapPolicy({sharded.Block}))
    return model, MATRIX[kind](model.parameters())


def weights(model):
    return {k: v.numpy() for k, v in model.state_dict().items()}


def plain(osd):
    return {name: {k: v.numpy() if hasattr(v, "numpy") else v for k, v in st.items()}
            for name, st in osd["state"].items()}


def third_step(model, opt, rank, world):
    sharded.train(model, opt, rank, world, steps=range(2, 3))
    return weights(model)


def save(folder, rank, world, out):
    model, opt = make(0)
    sharded.train(model, opt, rank, world, steps=range(2))
    full = {"model": model.state_dict(), "optim": FSDP.optim_state_dict(model, opt)}
    out["full"] = plain(full["optim"])
    out["groups"] = full["optim"]["param_groups"]
    with FSDP.state_dict_type(model, T.SHARDED_STATE_DICT):
        pieces = {"model": model.state_dict(), "optim": FSDP.optim_state_dict(model, opt)}
    with FSDP.state_dict_type(model, T.LOCAL_STATE_DICT):
        local = {"model": model.state_dict()}
    with FSDP.state_dict_type(model, T.FULL_STATE_DICT, None,
                              fsdp.FullOptimStateDictConfig(rank0_only=True)):
        out["rank0_only"] = len(FSDP.optim_state_dict(model, opt))
    for kind, sd in (("full", full), ("sharded", pieces)):
        fresh, fresh_opt = make(1)  # the same world size: no checkpoint in between
        with FSDP.state_dict_type(fresh, getattr(T, f"{kind.upper()}_STATE_DICT")):
            fresh.load_state_dict(sd["model"])
            FSDP.optim_state_dict_to_load(fresh, fresh_opt, sd["optim"], load_directly=True)
        out[f"same_{kind}"] = third_step(fresh, fresh_opt, rank, world)
        dcp.save(sd, os.path.join(folder, kind))
    dcp.save(local, os.path.join(folder, "local"))
    out["errors"] = errors(model, opt, pieces)
    # HYBRID_SHARD: shards within pairs (4 ranks) or single ranks (2), replicas across
    os.environ["LOCAL_WORLD_SIZE"] = str(2 if world == 4 else 1)
    model, opt = make(0, sharding_strategy=S.HYBRID_SHARD)
    sharded.train(model, opt, rank, world, steps=range(2))
    dcp.save(model, os.path.join(folder, "hybrid_model"), optimizer=opt)
    with FSDP.state_dict_type(model, T.SHARDED_STATE_DICT):
        dcp.save({"model": model.state_dict(), "optim": FSDP.optim_state_dict(model, opt)},
                 os.path.join(folder, "hybrid"))
    out["hybrid_saved"] = third_step(model, opt, rank, world)
    # use_orig_params: the original parameters, per-parameter groups
    model, opt = make_orig(0)
    out["orig_names"] = [n for n, _ in model.named_parameters()]
    out["orig_shapes"] = [list(p.shape) for p in model.parameters()]
    sharded.train(model, opt, rank, world, steps=range(2))
    out["orig_full"] = plain(FSDP.optim_state_dict(model, opt))
    with FSDP.state_dict_type(model, T.SHARDED_STATE_DICT):
        dcp.save({"model": model.state_dict(), "optim": FSDP.optim_state_dict(model, opt)},
                 os.path.join(folder, "orig"))
    out["orig_saved"] = third_step(model, opt, rank, world)
    save_matrix(folder, rank, world, out)


def save_matrix(folder, rank, world, out):
    """Shampoo and SOAP (NumPy state) through FULL and SHARDED optimizer state dicts; the
    named-optimizer form (is_named_optimizer); a non-per-element state refused."""
    for kind in MATRIX:
        model, opt = make_matrix(0, kind)
        sharded.train(model, opt, rank, world, steps=range(2))
        full = FSDP.optim_state_dict(model, opt)
        out[f"{kind}_full"] = plain(full)
        with FSDP.state_dict_type(model, T.SHARDED_STATE_DICT):
            dcp.save({"model": model.state_dict(), "optim": FSDP.optim_state_dict(model, opt)},
                     os.path.join(folder, kind))
        # torch's NamedOptimizer keys its own state dict by the model's parameter names
        named = FSDP.optim_state_dict_to_load(model, opt, full, is_named_optimizer=True)
        names = [n for n, _ in model.named_parameters()]
        out[f"{kind}_named_keys"] = [sorted(named["state"]), named["param_groups"][0]["params"],
                                     names]
        again = FSDP.optim_state_dict(model, opt, optim_state_dict=named)
        out[f"{kind}_named_same"] = plain(again).keys() == out[f"{kind}_full"].keys() and all(
            np.array_equal(plain(again)[n][k], v)
            for n, st in out[f"{kind}_full"].items() for k, v in st.items())
        out[f"{kind}_saved"] = third_step(model, opt, rank, world)
    # a state that is not one value per element of the shard (a matrix) cannot be re-keyed
    sd = opt.state_dict()
    sd["state"][0]["exp_avg"] = np.zeros((3, 3))
    try:
        FSDP.optim_state_dict(model, opt, optim_state_dict=sd)
    except ValueError as e:
        out["errors_matrix"] = str(e)


def errors(model, opt, pieces):
    """Bad input: each error names the op and what was expected."""
    found = {}
    calls = {"local": lambda: FSDP.optim_state_dict(model, opt),
             "not_osd": lambda: FSDP.optim_state_dict_to_load(model, opt, {"a": 1}),
             "other_world": lambda: FSDP.optim_state_dict_to_load(
                 model, opt, shifted(pieces["optim"]))}
    for key, call in calls.items():
        try:
            if key == "local":
                with FSDP.state_dict_type(model, T.LOCAL_STATE_DICT):
                    call()
            else:
                call()
        except (TypeError, ValueError, NotImplementedError) as e:
            found[key] = f"{type(e).__name__}: {e}"
    return found


def shifted(osd):
    """The SHARDED optimizer state dict as another world size would cut it."""
    state = {}
    for name, st in osd["state"].items():
        state[name] = {k: fsdp.ShardedTensor(v.local_tensor()[:0], v.offset + 1, v.shape)
                       if isinstance(v, fsdp.ShardedTensor) else v for k, v in st.items()}
    return {"state": state, "param_groups": osd["param_groups"]}


def load(folder, rank, world, out):
    for kind in ("full", "sharded"):
        model, opt = make(1)
        with FSDP.state_dict_type(model, getattr(T, f"{kind.upper()}_STATE_DICT")):
            sd = {"model": model.state_dict(), "optim": FSDP.optim_state_dict(model, opt)}
            dcp.load(sd, os.path.join(folder, kind))
            model.load_state_dict(sd["model"])
            opt.load_state_dict(FSDP.optim_state_dict_to_load(model, opt, sd["optim"]))
        out[kind] = third_step(model, opt, rank, world)
    model, _ = make(1)
    with FSDP.state_dict_type(model, T.LOCAL_STATE_DICT):
        sd = {"model": model.state_dict()}
        dcp.load(sd, os.path.join(folder, "local"))
        model.load_state_dict(sd["model"])
    out["local"] = weights(model)  # the two-step weights
    # HYBRID_SHARD's checkpoints into a HYBRID_SHARD model of another world size
    os.environ["LOCAL_WORLD_SIZE"] = str(2 if world == 4 else 1)
    model, opt = make(1, sharding_strategy=S.HYBRID_SHARD)
    dcp.load(model, os.path.join(folder, "hybrid_model"), optimizer=opt)
    out["hybrid_model"] = third_step(model, opt, rank, world)
    model, opt = make(1, sharding_strategy=S.HYBRID_SHARD)
    with FSDP.state_dict_type(model, T.SHARDED_STATE_DICT):
        sd = {"model": model.state_dict(), "optim": FSDP.optim_state_dict(model, opt)}
        dcp.load(sd, os.path.join(folder, "hybrid"))
        model.load_state_dict(sd["model"])
        FSDP.optim_state_dict_to_load(model, opt, sd["optim"], load_directly=True)
    out["hybrid"] = third_step(model, opt, rank, world)
    model, opt = make_orig(1)
    with FSDP.state_dict_type(model, T.SHARDED_STATE_DICT):
        sd = {"model": model.state_dict(), "optim": FSDP.optim_state_dict(model, opt)}
        dcp.load(sd, os.path.join(folder, "orig"))
        model.load_state_dict(sd["model"])
        FSDP.optim_state_dict_to_load(model, opt, sd["optim"], load_directly=True)
    out["orig"] = third_step(model, opt, rank, world)
    for kind in MATRIX:
        model, opt = make_matrix(1, kind)
        with FSDP.state_dict_type(model, T.SHARDED_STATE_DICT):
            sd = {"model": model.state_dict(), "optim": FSDP.optim_state_dict(model, opt)}
            dcp.load(sd, os.path.join(folder, kind))
            model.load_state_dict(sd["model"])
            FSDP.optim_state_dict_to_load(model, opt, sd["optim"], load_directly=True)
        out[f"{kind}_state_types"] = sorted({type(v).__name__ for st in opt.state.values()
                                             for v in st.values()})
        out[kind] = third_step(model, opt, rank, world)


def main():
    mode, folder = sys.argv[2], sys.argv[3]
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    out = {}
    (save if mode == "save" else load)(folder, rank, world, out)
    report(rank, out)


if __name__ == "__main__":
    main()
