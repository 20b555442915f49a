"""Run small scripts under ``mpiexec -n N`` and collect what each rank reports.

Each script (tests/distributed/_scripts/) writes ``rank<r>.json`` into the folder given as its
first argument; ``mpirun`` returns the finished process and the per-rank results. Every launch
has a timeout, so a hang fails the test instead of stalling CI.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "_scripts"
ROOT = Path(__file__).resolve().parents[2]


def mpiexec_path():
    found = shutil.which("mpiexec")
    local = Path(sys.executable).parent / "mpiexec"
    return found or (str(local) if local.exists() else None)


def run_script(script, n, out, *args, timeout=120, check=True):
    """Launch ``script`` on ``n`` ranks; return (CompletedProcess, [rank results or None]).
    Skips where mpi4py or mpiexec is missing."""
    pytest.importorskip("mpi4py")
    exe = mpiexec_path()
    if exe is None:
        pytest.skip("mpiexec not found")
    env = dict(os.environ, PYTHONPATH=str(ROOT),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    cmd = [exe, "--oversubscribe", "-n", str(n), sys.executable,
           str(SCRIPTS / script), str(out), *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=ROOT)
    if check and proc.returncode != 0:
        raise AssertionError(f"{script} on {n} ranks failed ({proc.returncode}):\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    results = [json.loads((out / f"rank{r}.json").read_text()) if
               (out / f"rank{r}.json").exists() else None for r in range(n)]
    return proc, results


@pytest.fixture
def mpirun(tmp_path):
    def run(script, n, *args, **kwargs):
        out = tmp_path / f"{Path(script).stem}-{n}"
        out.mkdir()
        return run_script(script, n, out, *args, **kwargs)
    return run
