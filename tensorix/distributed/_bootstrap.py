"""Start one rank for ``tensorix run``: torchrun's environment variables from Open MPI's (or
MPICH's), then the script as ``__main__``."""

import os
import runpy
import sys

_FROM = {"RANK": ("OMPI_COMM_WORLD_RANK", "PMI_RANK"),
         "WORLD_SIZE": ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"),
         "LOCAL_RANK": ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"),
         "LOCAL_WORLD_SIZE": ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS")}

if __name__ == "__main__":
    for name, sources in _FROM.items():
        value = next((os.environ[s] for s in sources if s in os.environ), None)
        if value is not None:
            os.environ.setdefault(name, value)
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
    runpy.run_path(sys.argv[0], run_name="__main__")
