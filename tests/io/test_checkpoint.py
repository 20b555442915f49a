"""Training checkpoints: train, save mid-epoch, resume in a fresh process, and get the
bit-identical losses of an uninterrupted run."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tensorix as tx
from tensorix.io import CheckpointError, load_checkpoint, save_checkpoint

from . import resume_train as rt

SAVE_AT = 12  # mid-epoch: 7 batches per epoch


def _uninterrupted():
    model, opt, sched, loader, _ = rt.build(seed=0)
    return rt.train(model, opt, sched, loader, 0, rt.TOTAL)


def _train_and_save(path, save_at=SAVE_AT):
    model, opt, sched, loader, gen = rt.build(seed=0)

    def on_step(step):
        if step == save_at:
            save_checkpoint(path, model=model, optimizer=opt, scheduler=sched, loader=loader,
                            step=step, extra={"note": "mid-epoch", "best": 1.5},
                            generators={"loader": gen})

    return rt.train(model, opt, sched, loader, 0, rt.TOTAL, on_step)


def test_resume_in_fresh_process_is_bit_identical(tmp_path):
    straight = _uninterrupted()
    ckpt = tmp_path / "run.safetensors"
    saving_run = _train_and_save(ckpt)
    assert saving_run == straight  # saving does not disturb the run (no RNG draws)

    out = tmp_path / "resumed.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))] +
        [p for p in [os.environ.get("PYTHONPATH")] if p]))
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "resume_train.py")
    proc = subprocess.run([sys.executable, script, "resume", str(ckpt), str(rt.TOTAL),
                           str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    with open(out) as f:
        result = json.load(f)
    resumed = [float.fromhex(v) for v in result["losses"]]
    assert result["extra"] == {"note": "mid-epoch", "best": 1.5}
    assert len(resumed) == rt.TOTAL - SAVE_AT - 1
    assert resumed == straight[SAVE_AT + 1:]  # bit-identical, not just close
    assert straight[-1] < straight[0]  # and it trained


def test_resume_needs_every_piece(tmp_path):
    """Without the RNG states or the loader position the continuation differs: the test
    above really depends on what the checkpoint captures."""
    ckpt = tmp_path / "run.safetensors"
    straight = _train_and_save(ckpt)
    expected = straight[SAVE_AT + 1:]

    model, opt, sched, loader, gen = rt.build(seed=999)
    load_checkpoint(ckpt, model=model, optimizer=opt, scheduler=sched, loader=loader,
                    generators={"loader": gen}, restore_rng=False)
    assert rt.train(model, opt, sched, loader, SAVE_AT + 1, rt.TOTAL) != expected

    model, opt, sched, loader, gen = rt.build(seed=999)
    load_checkpoint(ckpt, model=model, optimizer=opt, scheduler=sched,
                    generators={"loader": gen})  # loader position not restored
    assert rt.train(model, opt, sched, loader, SAVE_AT + 1, rt.TOTAL) != expected

    model, opt, sched, loader, gen = rt.build(seed=999)  # everything: identical in-process
    info = load_checkpoint(ckpt, model=model, optimizer=opt, scheduler=sched, loader=loader,
                           generators={"loader": gen})
    assert info == {"step": SAVE_AT, "extra": {"note": "mid-epoch", "best": 1.5}}
    assert rt.train(model, opt, sched, loader, SAVE_AT + 1, rt.TOTAL) == expected


def test_checkpoint_contents_and_restored_state(tmp_path):
    model, opt, sched, loader, gen = rt.build(seed=0)
    rt.train(model, opt, sched, loader, 0, 5)
    save_checkpoint(tmp_path / "c.safetensors", model=model, optimizer=opt, scheduler=sched,
                    step=4, extra={"w": tx.ones(2)})
    raw = tx.load(tmp_path / "c.safetensors")
    assert raw["format"] == "tensorix.checkpoint/1" and raw["loader"] is None
    assert set(raw["model"]) == {"w1", "b1", "w2", "b2"}
    assert raw["rng"]["default"].dtype == tx.uint8

    model2, opt2, sched2, _, _ = rt.build(seed=5)
    info = load_checkpoint(tmp_path / "c.safetensors", model=model2, optimizer=opt2,
                           scheduler=sched2)
    assert info["step"] == 4 and info["extra"]["w"].tolist() == [1.0, 1.0]
    for (n, p), (_, q) in zip(model.named_parameters(), model2.named_parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=n)
    assert sched2.get_last_lr() == sched.get_last_lr() and sched2.last_epoch == 5
    assert opt2.param_groups[0]["betas"] == opt.param_groups[0]["betas"]
    assert opt2.state[model2.w1]["step"] == 5
    np.testing.assert_array_equal(opt2.state[model2.w1]["exp_avg"].numpy(),
                                  opt.state[model.w1]["exp_avg"].numpy())
    np.testing.assert_array_equal(tx.get_rng_state().numpy(), raw["rng"]["default"].numpy())


def test_several_optimizers_by_name(tmp_path):
    a, b = tx.ones(2, requires_grad=True), tx.ones(3, requires_grad=True)
    opts = {"gen": tx.optim.Adam([a], lr=0.1), "disc": tx.optim.SGD([b], lr=0.1, momentum=0.9)}
    a.grad, b.grad = tx.ones(2), tx.ones(3)
    for o in opts.values():
        o.step()
    save_checkpoint(tmp_path / "c.safetensors", optimizer=opts, step=1)
    fresh = {"gen": tx.optim.Adam([a], lr=0.5), "disc": tx.optim.SGD([b], lr=0.5,
                                                                     momentum=0.9)}
    load_checkpoint(tmp_path / "c.safetensors", optimizer=fresh)
    assert fresh["gen"].param_groups[0]["lr"] == 0.1
    np.testing.assert_array_equal(fresh["disc"].state[b]["momentum_buffer"].numpy(), 1.0)
    with pytest.raises(CheckpointError, match=r"has no optimizer state named \['other'\]"):
        load_checkpoint(tmp_path / "c.safetensors", optimizer={"other": fresh["gen"]})


def test_load_checkpoint_errors(tmp_path):
    tx.save({"w": tx.ones(2)}, tmp_path / "weights.safetensors")
    with pytest.raises(CheckpointError, match="is not a tensorix training checkpoint"):
        load_checkpoint(tmp_path / "weights.safetensors")
    save_checkpoint(tmp_path / "c.safetensors", step=3)
    p = tx.ones(2, requires_grad=True)
    with pytest.raises(CheckpointError, match="holds no optimizer state to restore into"):
        load_checkpoint(tmp_path / "c.safetensors", optimizer=tx.optim.SGD([p], lr=0.1))
    with pytest.raises(CheckpointError, match="has no state for generator 'loader'"):
        load_checkpoint(tmp_path / "c.safetensors", generators={"loader": tx.Generator()})
    model = rt.MLP()
    save_checkpoint(tmp_path / "m.safetensors", model=model)
    del model.b2
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "b2"'):
        load_checkpoint(tmp_path / "m.safetensors", model=model)
    load_checkpoint(tmp_path / "m.safetensors", model=model, strict=False)
    raw = (tmp_path / "m.safetensors").read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(raw[:len(raw) // 2])
    with pytest.raises(CheckpointError, match="cut.safetensors is truncated"):
        load_checkpoint(tmp_path / "cut.safetensors", model=model)
