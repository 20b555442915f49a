"""Smoke test of examples/numerics_gpt_formats.py (run as a script, never imported: the full
run takes about 15 minutes and its plot needs matplotlib): a tiny model, 2 steps, every format."""

import json
import pathlib
import subprocess
import sys

import numpy as np

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "examples" / "numerics_gpt_formats.py"


def test_gpt_formats_example_smoke(tmp_path):
    cmd = [sys.executable, str(SCRIPT), "--tiny", "--steps", "2", "--batch", "4",
           "--eval-batches", "1", "--seeds", "2", "--no-plot", "--out", str(tmp_path)]
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300)
    data = json.loads((tmp_path / "numerics_gpt_formats.json").read_text())["results"]
    assert list(data) == ["fp32", "bf16 autocast", "MXFP8 E4M3 rceil", "MXFP8 E4M3 floor",
                          "NVFP4"]
    for r in data.values():
        assert len(r["runs"]) == 2
        for run in r["runs"]:
            assert len(run["losses"]) == 2 and np.isfinite(run["losses"] + [run["val"]]).all()
            assert 3.0 < run["losses"][0] < 5.5  # about log(73) = 4.29 at initialisation
    # seeds differ (initial weights and batches)
    assert data["fp32"]["runs"][0]["losses"] != data["fp32"]["runs"][1]["losses"]
    # the formats round differently: the low-precision losses are not the fp32 ones
    assert data["NVFP4"]["runs"][0]["losses"][0] != data["fp32"]["runs"][0]["losses"][0]
    table = (tmp_path / "numerics_gpt_formats.md").read_text().splitlines()
    assert len(table) == 7 and table[2].startswith("| fp32 |")
    assert " +- " in table[3]  # bf16: mean +- sd over the two seeds
