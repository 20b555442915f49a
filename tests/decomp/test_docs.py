"""docs/decomp.md stays true: every ```python block runs, in order, in one namespace."""

from tests._docs import run_python_blocks


def test_decomp_tutorial_code_blocks_run(capsys):
    run_python_blocks("decomp.md", 12)
    assert "CPTensor(shape=(10, 11, 12), rank=3)" in capsys.readouterr().out
