"""docs/decomp.md stays true: every ```python block runs, in order, in one namespace."""

import tensorix as tx

from .._docs import run_python_blocks


def test_decomp_tutorial_code_blocks_run(capsys):
    tx.manual_seed(0)
    run_python_blocks("decomp.md", 6)
    assert "CPTensor(shape=(10, 11, 12), rank=3)" in capsys.readouterr().out
