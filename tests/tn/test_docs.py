"""docs/tn.md stays true: every ```python block runs, in order, in one namespace."""

import tensorix as tx

from .._doc_blocks import DOCS, python_blocks, run_blocks


def test_tn_tutorial_code_blocks_run(capsys):
    blocks = python_blocks(DOCS / "tn.md")
    assert len(blocks) >= 9, "the tutorial lost its code blocks"
    tx.manual_seed(0)
    namespace = run_blocks(blocks, "tn.md")
    out = capsys.readouterr().out
    assert "bond index 'j' has dimension 3" in out
    assert abs(namespace["res"].energy - namespace["exact"]) < 1e-9
