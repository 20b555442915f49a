"""docs/compile.md stays true: every ```python block runs, in order, in one namespace."""

from tests._docs import run_python_blocks


def test_compile_tutorial_code_blocks_run(capsys):
    ns = run_python_blocks("compile.md", 7)
    out = capsys.readouterr().out
    assert "item()/bool()" in out  # the graph break is reported
    assert "6*batch" in out  # a symbolic shape argument
    assert ns["fast"]._compiled.stats["compiles"] == 1
    assert ns["f"].stats["compiles"] == 2
