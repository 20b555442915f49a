"""docs/quant.md, section "Methods for LLM weights": every ```python block runs, in order."""

import tensorix as tx

from .._doc_blocks import DOCS, python_blocks, run_blocks

SECTION = "Methods for LLM weights: GPTQ, AWQ, SmoothQuant, rotation W4A4"


def test_quant_methods_tutorial_blocks_run(capsys):
    blocks = python_blocks(DOCS / "quant.md", SECTION)
    assert len(blocks) >= 9, "the methods tutorial lost its code blocks"
    tx.manual_seed(0)
    run_blocks(blocks, "quant.md (methods)")
    out = capsys.readouterr().out
    assert "alpha 0.45" in out and "QuantizedLinear tensorix.uint8" in out
