"""docs/decomp.md stays true: every ```python block runs, in order, in one namespace (the
decompositions, then the structured layers of its last section)."""
from tests._docs import run_python_blocks


def test_decomp_tutorial_code_blocks_run(capsys):
    ns = run_python_blocks("decomp.md", 20)
    out = capsys.readouterr().out
    assert "CPTensor(shape=(10, 11, 12), rank=3)" in out
    assert out.count("True") >= 4, out          # each layer's dense-equivalence check printed True
    assert "rank[1] = 7 exceeds 4" in out
    assert "(2, 3, 2, 2) True" in out            # the structure search found the planted ranks
    plain, stable = [float(line.rsplit(" ", 1)[1]) for line in out.splitlines()
                     if "sum of squared term norms" in line]
    assert stable < plain                        # the correction bounded the CP terms
    assert type(ns["model"][0]).__name__ == "Linear"
