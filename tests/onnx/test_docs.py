"""docs/onnx.md stays true: every ```python block runs, in order, in one namespace."""

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from .._docs import DOCS, python_blocks, run_blocks  # noqa: E402

DOC = DOCS / "onnx.md"


def test_onnx_tutorial_code_blocks_run(tmp_path, monkeypatch):
    assert len(python_blocks(DOC)) >= 6, "the tutorial lost its code blocks"
    monkeypatch.chdir(tmp_path)  # the tutorial writes its .onnx files to the working dir
    namespace = run_blocks(DOC)
    assert namespace["gpt_error"] < 1e-5
