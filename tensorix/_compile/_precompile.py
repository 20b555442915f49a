"""The child process of the background numba compile (tune.py): compiles generated kernels for
the given argument types, which writes numba's disk cache; the parent then loads each kernel
from that cache on its own calling thread.

Why a process: numba's compiler enters and leaves ``warnings.catch_warnings()``, which saves
and restores the process-wide filter list; on a thread of the parent it would wipe the filters
the parent's other threads set meanwhile. Run by path (``runpy``), not as
``-m tensorix._compile._precompile``, so that the child imports numba and NumPy only, not
tensorix (seconds).

Usage (what tune.py runs; one process compiles a batch of kernels, numba imported once)::

    python -c RUNNER _precompile.py   # stdin: one JSON [KERNEL_FILE, MODULE_NAME, TYPES] a line

``TYPES`` is :func:`tensorix._compile.kernels.argument_types` of the call's arguments.
"""

import importlib.util
import json
import sys


def _types(numba, np, spec):
    # numba.typeof of each argument, rebuilt: an int as itself, an array from its description
    return tuple(numba.typeof(a) if isinstance(a, int) else
                 numba.types.Array(numba.from_dtype(np.dtype(a[0])), a[1], a[2],
                                   readonly=a[3])
                 for a in spec)


def import_kernel(path, name):
    """The ``kernel`` of the generated module at ``path``, imported as ``name`` (imports
    numba). numba's disk cache names its entries by the file and the function: the parent
    (kernels.load_numba) and this child load it the same way, so they share them."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.kernel


def main():
    """Compile each request read from stdin, one JSON line ``[path, name, types]`` each, and
    answer each with one line: ``null`` when done, the error's text when it failed."""
    answers, sys.stdout = sys.stdout, sys.stderr  # stdout carries the answers only
    import numba
    import numpy as np

    for line in sys.stdin:
        path, name, spec = json.loads(line)
        try:
            import_kernel(path, name).compile(_types(numba, np, spec))
            answer = None
        except Exception as e:  # noqa: BLE001 - reported to the parent, which keeps NumPy
            answer = f"{type(e).__name__}: {e}"[-2000:]
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
