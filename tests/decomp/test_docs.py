"""docs/decomp.md stays true: every ```python block runs, in order, in one namespace."""

import pathlib
import re

import tensorix as tx

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "decomp.md"


def test_decomp_tutorial_code_blocks_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 6, "the tutorial lost its code blocks"
    namespace = {}
    tx.manual_seed(0)
    for i, block in enumerate(blocks):
        code = compile(block, f"{DOC.name} block {i}", "exec")
        exec(code, namespace)  # noqa: S102 - the tutorial is ours
    assert "CPTensor(shape=(10, 11, 12), rank=3)" in capsys.readouterr().out
