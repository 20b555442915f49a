"""docs/decomp.md's section on the structured layers stays true: its ```python blocks run, in
order, in one namespace."""

from tests._docs import run_python_blocks


def test_structured_layers_tutorial_code_blocks_run(capsys):
    ns = run_python_blocks("decomp.md", 7, section="Structured layers for nn: "
                                                  "`tensorix.decomp.layers`")
    out = capsys.readouterr().out
    assert out.count("True") >= 4, out          # each dense-equivalence check printed True
    assert "rank[1] = 7 exceeds 4" in out
    assert type(ns["model"][0]).__name__ == "Linear"
