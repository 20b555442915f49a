"""docs/quant.md, section "Integer inference": every ```python block runs, in order."""

import re

from tests._docs import run_python_blocks

SECTION = "Integer inference: integer GEMMs, integer-only ops, LUT GEMM, serving presets"


def test_quant_integer_tutorial_blocks_run(capsys):
    run_python_blocks("quant.md", 6, SECTION)
    out = capsys.readouterr().out
    assert "QuantizedLinear tensorix.uint8" in out and "LUT GEMM exact: True" in out
    err = float(re.search(r"W4A4 g128 integer vs simulated: (\S+)", out).group(1))
    assert err < 1e-3
    for name in ("comet-w4a4kv4", "odyssey-w4a8", "flexq-w6a6", "flexq-w6a8"):
        assert f"{name}: mean |logit error|" in out
