"""docs/quant.md, section "Methods for LLM weights": every ```python block runs, in order."""

from tests._docs import run_python_blocks

SECTION = "Methods for LLM weights: GPTQ, AWQ, SmoothQuant, rotation W4A4"


def test_quant_methods_tutorial_blocks_run(capsys):
    run_python_blocks("quant.md", 9, SECTION)
    out = capsys.readouterr().out
    assert "alpha 0.45" in out and "QuantizedLinear tensorix.uint8" in out
