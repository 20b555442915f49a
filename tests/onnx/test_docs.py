"""docs/onnx.md stays true: every ```python block runs, in order, in one namespace."""

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from tests._docs import DOCS, run_python_blocks  # noqa: E402

DOC = DOCS / "onnx.md"


def test_onnx_tutorial_code_blocks_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the tutorial writes its .onnx files to the working dir
    namespace = run_python_blocks("onnx.md", min_blocks=6)
    assert namespace["gpt_error"] < 1e-5
