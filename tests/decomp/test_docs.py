"""docs/decomp.md stays true: every ```python block runs, in order, in one namespace."""

import tensorix as tx

from .._doc_blocks import DOCS, python_blocks, run_blocks

DOC = DOCS / "decomp.md"


def test_decomp_tutorial_code_blocks_run(capsys):
    blocks = python_blocks(DOC)
    assert len(blocks) >= 6, "the tutorial lost its code blocks"
    tx.manual_seed(0)
    run_blocks(blocks, DOC.name)
    assert "CPTensor(shape=(10, 11, 12), rank=3)" in capsys.readouterr().out
