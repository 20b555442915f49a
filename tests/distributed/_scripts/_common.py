"""Shared by the rank scripts: write this rank's results as JSON."""

import json
import sys
from pathlib import Path

import numpy as np


def _plain(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def report(rank, results):
    Path(sys.argv[1], f"rank{rank}.json").write_text(json.dumps(_plain(results)))
