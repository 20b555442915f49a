"""docs/quant.md, section "Core": every ```python block runs, in order, in one namespace."""

import re

import tensorix as tx

from .._doc_blocks import DOCS, python_blocks, run_blocks

SECTION = "Core: quantizers, observers, flows, layers and integer kernels"


def test_quant_tutorial_code_blocks_run(capsys):
    blocks = python_blocks(DOCS / "quant.md", SECTION)
    assert len(blocks) >= 9, "the quant tutorial lost its code blocks"
    tx.manual_seed(0)
    ns = run_blocks(blocks, "quant.md (core)")
    out = capsys.readouterr().out
    assert "group_size 128 does not divide the last dimension 100" in out
    assert "calibration saw no data for layer '0'" in out
    assert "(GRU) has no quantized form" in out
    assert f"{4096 * 128 * 128} {4096 * 128 * 128}" in out
    saved = re.search(r"^(True|False) (\d+\.\d)$", out, flags=re.M)  # the file block
    assert saved.group(1) == "True" and 5 < float(saved.group(2)) < 8
    assert float(ns["loss"]) < 0.2
