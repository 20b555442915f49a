"""FSDP optimizer state dicts (FULL and SHARDED) and state-dict checkpoints (FULL, SHARDED,
LOCAL, HYBRID_SHARD) saved on N ranks and loaded on M: the Adam state equals one process's,
and training on after the load equals three single-process steps (float64, 1e-12: the ranks
sum the gradient in another order than one process). Shampoo and SOAP (NumPy state) on the
flat shards equal one process running them on the flattened parameters."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorix as tx

sys.path.insert(0, str(Path(__file__).parent / "_scripts"))
import sharded as script  # noqa: E402

TOL = dict(rtol=1e-12, atol=1e-12)


def reference(grouped=False):
    """One process: the Adam state by parameter name after two steps, the weights after
    two and after three (``grouped``: the LayerNorm parameters at their own rate, as
    optim_state.py's use_orig_params run)."""
    ref = script.build(0, tx.float64)
    if grouped:
        sys.path.insert(0, str(Path(__file__).parent / "_scripts"))
        from optim_state import grouped as make_groups
        opt = make_groups(ref)
    else:
        opt = script.adam(ref.parameters())
    script.train(ref, opt, steps=range(2))
    names = {id(p): n for n, p in ref.named_parameters()}
    state = {names[id(p)]: {k: v.numpy().copy() if hasattr(v, "numpy") else v
                            for k, v in st.items()}
             for p, st in opt.state.items()}
    two = {k: v.numpy().copy() for k, v in ref.state_dict().items()}
    script.train(ref, opt, steps=range(2, 3))
    return state, two, {k: v.numpy() for k, v in ref.state_dict().items()}


class FlatViews:
    """One process: ``make_opt`` on a 1-D view of every parameter, its gradient copied in
    before each step: what an optimizer sees on FSDP's flat shards (Shampoo and SOAP then
    take their per-element forms)."""

    def __init__(self, model, make_opt):
        self.params = list(model.parameters())
        self.views = [tx.nn.Parameter(p.detach().reshape(-1)) for p in self.params]
        assert all(np.shares_memory(v._data, p._data) for v, p in zip(self.views, self.params))
        self.opt = make_opt(self.views)

    def zero_grad(self):
        for p in self.params:
            p.grad = None

    def step(self):
        for v, p in zip(self.views, self.params):
            v.grad = p.grad.detach().reshape(-1)
        self.opt.step()


def matrix_reference(kind):
    """Shampoo/SOAP state by name after two steps (reshaped as the parameter), and the
    weights after three, from one process on the flattened parameters."""
    from optim_state import MATRIX

    ref = script.build(0, tx.float64)
    names = {id(p): n for n, p in ref.named_parameters()}
    flat = FlatViews(ref, MATRIX[kind])
    script.train(ref, flat, steps=range(2))
    state = {names[id(p)]: {k: np.asarray(v).reshape(p.shape).copy()
                            if isinstance(v, np.ndarray) else v
                            for k, v in flat.opt.state[view].items()}
             for p, view in zip(flat.params, flat.views)}
    script.train(ref, flat, steps=range(2, 3))
    return state, {k: v.numpy() for k, v in ref.state_dict().items()}


def same(got, want, what):
    assert list(got) == list(want), what
    for k, v in want.items():
        np.testing.assert_allclose(got[k], v, err_msg=f"{what} {k}", **TOL)


@pytest.mark.parametrize("save_n, load_n", [(2, 4), (4, 2)])
def test_optim_state_dicts_and_checkpoints_at_another_world_size(mpirun, tmp_path, save_n,
                                                                 load_n):
    state, two, three = reference()
    orig_state, _, orig_three = reference(grouped=True)
    folder = tmp_path / "ckpt"
    _, saved = mpirun("optim_state.py", save_n, "save", folder)
    for r in saved:
        # FULL: every rank holds the whole state of every parameter, under its name
        for full, want in ((r["full"], state), (r["orig_full"], orig_state)):
            assert sorted(full) == sorted(want)
            for name, st in want.items():
                assert full[name]["step"] == st["step"] == 2
                for k in ("exp_avg", "exp_avg_sq"):
                    np.testing.assert_allclose(full[name][k], st[k], err_msg=f"{name} {k}",
                                               **TOL)
        # use_orig_params: the original names; each parameter is its part of the shard
        assert r["orig_names"] == [n for n, _ in script.build(0, tx.float64).named_parameters()]
        same(r["orig_saved"], orig_three, "use_orig_params")
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
    matrix = {kind: matrix_reference(kind) for kind in ("shampoo", "soap")}
    for r in saved:
        for kind, (state, three_steps) in matrix.items():
            # Shampoo (diagonal, with momentum) and SOAP (Adam) state per element, by name
            full = r[f"{kind}_full"]
            assert sorted(full) == sorted(state), kind
            for name, st in state.items():
                assert sorted(full[name]) == sorted(st), (kind, name)
                for k, v in st.items():
                    np.testing.assert_allclose(full[name][k], v, err_msg=f"{kind} {name} {k}",
                                               **TOL)
            same(r[f"{kind}_saved"], three_steps, kind)
            # is_named_optimizer: keyed by the FSDP model's parameter names, and read back
            state_keys, group_params, names = r[f"{kind}_named_keys"]
            assert state_keys == sorted(names) and group_params == names
            assert r[f"{kind}_named_same"]
        assert "'exp_avg' has shape (3, 3), not one value per element" in r["errors_matrix"]
    _consolidates_and_dedupes(folder, tmp_path, two)
    _, loaded = mpirun("optim_state.py", load_n, "load", folder)
    for r in loaded:
        for kind in ("full", "sharded", "hybrid_model", "hybrid"):
            same(r[kind], three, f"{save_n} -> {load_n} ranks: {kind}")
        same(r["local"], two, f"{save_n} -> {load_n} ranks: LOCAL")
        same(r["orig"], orig_three, f"{save_n} -> {load_n} ranks: use_orig_params")
        for kind, (_, three_steps) in matrix.items():
            same(r[kind], three_steps, f"{save_n} -> {load_n} ranks: {kind}")
            # loaded back as the optimizer keeps it: NumPy arrays (and the int step)
            assert r[f"{kind}_state_types"] == ["int", "ndarray"], kind
    # the parts of each original parameter over the ranks make it whole
    ref = script.build(0, tx.float64)
    sizes = {n: p.numel() for n, p in ref.named_parameters()}
    for k, name in enumerate(saved[0]["orig_names"]):
        assert sum(np.prod(r["orig_shapes"][k]) for r in saved) == sizes[name]


def _consolidates_and_dedupes(folder, tmp_path, two):
    """A FULL state-dict checkpoint (every rank holds every tensor) writes each value once
    and consolidates to the plain module's weights under "model."; loading a checkpoint of
    the other kind, or a name it lacks, fails clearly."""
    from tensorix.distributed import checkpoint as dcp

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
