"""One framework's benchmark process (started by ``run.py``; not meant to be run by hand).

Usage: ``python benchmarks/_worker.py {torch|tensorix} THREADS``. The driver sends one JSON
command per line on stdin and reads one JSON answer per line; the answers go to the process's
original stdout, while ``sys.stdout`` is pointed at stderr so that nothing a library prints can
corrupt the protocol. Commands:

* ``{"op": "info"}``: versions, thread count, and the BLAS that threadpoolctl sees;
* ``{"op": "setup", "case": NAME, "load": PATH|null, "save": PATH|null}``: build the workload
  (training cases load their initial weights from ``load``, or save torch's to ``save``), run
  it twice to warm up and answer its first two losses and one call's time;
* ``{"op": "time", "case": NAME, "n": N}``: run N calls, answer the wall-clock seconds they
  took and the process's CPU seconds;
* ``{"op": "drop", "case": NAME}`` frees a workload; ``{"op": "quit"}`` ends the process.
"""

from __future__ import annotations

import gc
import json
import os
import pathlib
import sys
import time

import numpy as np

_HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
sys.path.insert(1, str(_HERE.parent))  # tensorix from this checkout


def _framework(name, threads):
    if name == "torch":
        import torch

        torch.set_num_threads(threads)
        return torch
    import tensorix
    import tensorix.nn.functional  # noqa: F401 - the workloads use m.nn.functional, m.optim
    import tensorix.optim  # noqa: F401

    tensorix.set_num_threads(threads)
    return tensorix


def _blas():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return [{"note": "threadpoolctl not installed"}]
    keep = ("internal_api", "architecture", "num_threads", "version", "prefix")
    return [{k: d.get(k) for k in keep} for d in threadpool_info()]


def _info(m):
    out = {"framework": m.__name__, "version": m.__version__, "numpy": np.__version__,
           "python": sys.version.split()[0], "blas": _blas(),
           "env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                 "MKL_NUM_THREADS", "OPENBLAS_CORETYPE",
                                                 "OPENBLAS_L2_SIZE")}}
    out["threads"] = m.get_num_threads()
    if m.__name__ == "torch":
        # torch's own BLAS (MKL here) is linked in statically, invisible to threadpoolctl
        conf = m.__config__.show()
        libs = [ln.strip(" -") for ln in conf.splitlines()
                if "Math Kernel Library" in ln or "MKL-DNN" in ln or "OpenBLAS" in ln]
        out["own_blas"] = "; ".join(libs)
    return out


def _setup(m, workloads, cmd):
    import workloads as wl

    load = None
    if cmd.get("load"):
        with np.load(cmd["load"]) as f:
            load = {k: f[k] for k in f.files}
    work, init = wl.build(m, cmd["case"], load)
    if cmd.get("save") and init is not None:
        np.savez(cmd["save"], **init)
    workloads[cmd["case"]] = work
    work.step()
    gc.collect()
    t0 = time.perf_counter()
    work.step()
    return {"losses": work.losses, "per_call": work.per_call,
            "t1": time.perf_counter() - t0}


def _time(work, n):
    step = work.step
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(n):
        step()
    return {"seconds": time.perf_counter() - t0, "cpu": time.process_time() - c0}


def main():
    name, threads = sys.argv[1], int(sys.argv[2])
    proto = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr
    m = _framework(name, threads)
    workloads = {}
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd["op"]
        try:
            if op == "quit":
                break
            if op == "info":
                ans = _info(m)
            elif op == "setup":
                ans = _setup(m, workloads, cmd)
            elif op == "time":
                ans = _time(workloads[cmd["case"]], cmd["n"])
            elif op == "drop":
                workloads.pop(cmd["case"], None)
                gc.collect()
                ans = {}
            else:
                ans = {"error": f"unknown command {op!r}"}
        except Exception as e:  # reported to the driver, which shows it and goes on
            import traceback

            traceback.print_exc()
            ans = {"error": f"{type(e).__name__}: {e}"}
        proto.write(json.dumps(ans) + "\n")


if __name__ == "__main__":
    main()
