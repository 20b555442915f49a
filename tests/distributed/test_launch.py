"""``tensorix run -n N script.py`` and the setup functions that need no second process."""

import json
import os
import subprocess
import sys

import pytest

import tensorix.distributed as dist

from ._launch import ROOT, SCRIPTS, mpiexec_path


def test_tensorix_run_starts_ranks_with_torchrun_environment(tmp_path):
    pytest.importorskip("mpi4py")
    if mpiexec_path() is None:
        pytest.skip("mpiexec not found")
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "tensorix", "run", "-n", "2",
                           str(SCRIPTS / "env.py"), str(tmp_path), "extra"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for r in range(2):
        got = json.loads((tmp_path / f"rank{r}.json").read_text())
        assert got["RANK"] == str(r) and got["WORLD_SIZE"] == "2"
        assert got["LOCAL_RANK"] == str(r) and got["LOCAL_WORLD_SIZE"] == "2"
        assert got["sum"] == [1.0, 1.0] and got["argv"] == [str(tmp_path), "extra"]


@pytest.mark.parametrize("argv", [["-n"], ["-n", "0", "x.py"], ["x.py"]])
def test_tensorix_run_rejects_bad_arguments(argv, capsys):
    from tensorix.__main__ import main

    assert main(["run", *argv]) == 2
    assert "expected '-n N script.py'" in capsys.readouterr().err


def test_uninitialized_and_bad_backend():
    assert dist.is_available() in (True, False) and not dist.is_initialized()
    with pytest.raises(ValueError, match="get_rank\\(\\): default process group has not"):
        dist.get_rank()
    with pytest.raises(ValueError, match="init_process_group\\(\\): unknown backend 'tcp'"):
        dist.init_process_group("tcp")


def test_import_does_not_start_mpi():
    """mpi4py initialises MPI when imported: only init_process_group may do that."""
    code = ("import sys, tensorix, tensorix.distributed, tensorix.nn.parallel, "
            "tensorix.distributed.nn; assert 'mpi4py' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120)


def test_single_process_without_mpiexec():
    """A plain ``python script.py`` is a world of one: collectives and DDP give the
    single-process result, and the group can be destroyed and made again."""
    pytest.importorskip("mpi4py")
    code = """
import numpy as np, tensorix as tx, tensorix.distributed as dist
from tensorix.nn.parallel import DistributedDataParallel
dist.init_process_group("mpi")
t = tx.arange(4.0)
dist.all_reduce(t, op=dist.ReduceOp.AVG)
assert (dist.get_rank(), dist.get_world_size()) == (0, 1) and t.tolist() == [0, 1, 2, 3]
tx.manual_seed(0)
model = tx.nn.Linear(3, 1)
ddp = DistributedDataParallel(model)
ddp(tx.ones(2, 3)).sum().backward()
assert model.weight.grad.tolist() == [[2.0, 2.0, 2.0]]
dist.destroy_process_group()
assert not dist.is_initialized()
dist.init_process_group("gloo")
assert dist.is_initialized()
"""
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
