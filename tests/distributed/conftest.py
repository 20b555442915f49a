"""The mpirun fixture (tests/distributed/_launch.py)."""

from ._launch import mpirun  # noqa: F401
