"""FSDP optimizer state dicts (FULL and SHARDED) and state-dict checkpoints (FULL, SHARDED,
LOCAL, HYBRID_SHARD) saved on N ranks and loaded on M: the Adam state equals one process's,
and training on after the load equals three single-process steps (float64, 1e-12: the ranks
sum the gradient in another order than one process)."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorix as tx

sys.path.insert(0, str(Path(__file__).parent / "_scripts"))
import sharded as script  # noqa: E402

TOL = dict(rtol=1e-12, atol=1e-12)


def reference():
    """One process: the Adam state by parameter name after two steps, the weights after
    two and after three."""
    ref = script.build(0, tx.float64)
    opt = script.adam(ref.parameters())
    script.train(ref, opt, steps=range(2))
    names = {id(p): n for n, p in ref.named_parameters()}
    state = {names[id(p)]: {k: v.numpy().copy() if hasattr(v, "numpy") else v
                            for k, v in st.items()}
             for p, st in opt.state.items()}
    two = {k: v.numpy().copy() for k, v in ref.state_dict().items()}
    script.train(ref, opt, steps=range(2, 3))
    return state, two, {k: v.numpy() for k, v in ref.state_dict().items()}


def same(got, want, what):
    assert list(got) == list(want), what
    for k, v in want.items():
        np.testing.assert_allclose(got[k], v, err_msg=f"{what} {k}", **TOL)


@pytest.mark.parametrize("save_n, load_n", [(2, 4), (4, 2)])
def test_optim_state_dicts_and_checkpoints_at_another_world_size(mpirun, tmp_path, save_n,
                                                                 load_n):
    state, two, three = reference()
    folder = tmp_path / "ckpt"
    _, saved = mpirun("optim_state.py", save_n, "save", folder)
    for r in saved:
        # FULL: every rank holds the whole state of every parameter, under its name
        assert list(r["full"]) == list(state)
        for name, st in state.items():
            assert r["full"][name]["step"] == st["step"] == 2
            for k in ("exp_avg", "exp_avg_sq"):
                np.testing.assert_allclose(r["full"][name][k], st[k], err_msg=f"{name} {k}",
                                           **TOL)
        assert r["groups"][0]["params"] == list(state) and r["groups"][0]["lr"] == 0.05
        # reloaded at the same world size (no checkpoint), trained on
        same(r["same_full"], three, "same world size FULL")
        same(r["same_sharded"], three, "same world size SHARDED")
        same(r["hybrid_saved"], three, "HYBRID_SHARD")
        e = r["errors"]
        assert e["local"].startswith("NotImplementedError: FullyShardedDataParallel."
                                     "optim_state_dict(): LOCAL_STATE_DICT")
        assert e["not_osd"].startswith("TypeError: FullyShardedDataParallel."
                                       "optim_state_dict_to_load(): expected")
        assert e["other_world"].startswith("ValueError") and "checkpoint.load" in \
            e["other_world"]
    assert [r["rank0_only"] for r in saved] == [2] + [0] * (save_n - 1)
    _, loaded = mpirun("optim_state.py", load_n, "load", folder)
    for r in loaded:
        for kind in ("full", "sharded", "hybrid_model", "hybrid"):
            same(r[kind], three, f"{save_n} -> {load_n} ranks: {kind}")
        same(r["local"], two, f"{save_n} -> {load_n} ranks: LOCAL")


def test_state_dict_checkpoint_consolidates_and_dedupes(mpirun, tmp_path):
    """A FULL state-dict checkpoint (every rank holds every tensor) writes each value once
    and consolidates to the plain module's weights under "model."."""
    from tensorix.distributed import checkpoint as dcp

    folder = tmp_path / "ckpt"
    mpirun("optim_state.py", 2, "save", folder)
    _, two, _ = reference()
    entries = json.loads((folder / "full" / "index.json").read_text())["tensors"]
    assert all(len(e["pieces"]) == 1 for e in entries.values())
    dcp.consolidate(folder / "full", tmp_path / "all.safetensors")
    arrays = tx.io.read_safetensors(tmp_path / "all.safetensors")[0]
    for k, v in two.items():
        np.testing.assert_allclose(arrays[f"model.{k}"], v, err_msg=k, **TOL)
    with pytest.raises(tx.io.CheckpointError, match="saved from a model"):
        dcp.load({"x": tx.zeros(2)}, folder / "hybrid_model")
    with pytest.raises(tx.io.CheckpointError, match="'x' of shape"):
        dcp.load({"x": tx.zeros(2)}, folder / "full")
