"""Run examples/train_gpt_parallel.py with its per-rank report written to the test's folder."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))

import train_gpt_parallel  # noqa: E402

if __name__ == "__main__":
    sys.exit(train_gpt_parallel.main(["--report", sys.argv[1], *sys.argv[2:]]))
