"""Command line: ``tensorix demo [--quick]``, ``tensorix run -n N script.py``, ``tensorix
--version`` (also ``python -m tensorix ...``)."""

from __future__ import annotations

import sys


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: tensorix demo [--quick] | tensorix run -n N script.py | "
              "tensorix --version\n\n"
              "  demo       train three small models on the bundled data (see 'tensorix demo -h')\n"
              "  run        start N ranks of a script under mpiexec, like torchrun\n"
              "  --version  print the installed version")
        return 0
    if argv[0] in ("--version", "-V"):
        import tensorix

        print(f"tensorix {tensorix.__version__}")
        return 0
    if argv[0] == "demo":
        from .demo import main as demo_main

        return demo_main(argv[1:])
    if argv[0] == "run":  # tensorix run -n N script.py: mpiexec, as torchrun
        from .distributed.run import main as run_main

        return run_main(argv[1:])
    print(f"tensorix: unknown command {argv[0]!r}; try 'tensorix demo'", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
