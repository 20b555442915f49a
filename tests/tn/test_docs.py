"""docs/tn.md stays true: every ```python block runs, in order, in one namespace."""

from tests._docs import run_python_blocks


def test_tn_tutorial_code_blocks_run(capsys):
    namespace = run_python_blocks("tn.md", 9)
    out = capsys.readouterr().out
    assert "bond index 'j' has dimension 3" in out
    assert abs(namespace["res"].energy - namespace["exact"]) < 1e-9
