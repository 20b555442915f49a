"""The child process of the background numba compile (tune.py): compiles one generated kernel
for the given argument types, which writes numba's disk cache; the parent then loads the
kernel from that cache on its own calling thread.

Why a process: numba's compiler enters and leaves ``warnings.catch_warnings()``, which saves
and restores the process-wide filter list; on a thread of the parent it would wipe the filters
the parent's other threads set meanwhile. Run by path (``runpy``), not as
``-m tensorix._compile._precompile``, so that the child imports numba and NumPy only, not
tensorix (seconds).

Usage (what tune.py runs)::

    python -c RUNNER _precompile.py KERNEL_FILE MODULE_NAME TYPES_JSON

``TYPES_JSON`` is :func:`tensorix._compile.kernels.argument_types` of the call's arguments.
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


def main(argv):
    path, name, spec = argv[0], argv[1], json.loads(argv[2])
    import numba
    import numpy as np

    import_kernel(path, name).compile(_types(numba, np, spec))


if __name__ == "__main__":
    main(sys.argv[1:])
