"""Every Python block of docs/logic.md runs, in order, in one namespace (the tutorial's
examples carry their own assertions)."""

import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "logic.md"


def _blocks():
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_tutorial_has_the_promised_sections():
    text = DOC.read_text()
    for title in ("A Datalog program", "A multilayer perceptron", "Attention",
                  "A kernel machine", "Belief propagation", "Reasoning in embedding space"):
        assert title in text
    assert len(_blocks()) >= 10


def test_docs_examples_run(capsys):
    ns = {}
    for k, code in enumerate(_blocks()):
        try:
            exec(compile(code, f"{DOC.name} block {k}", "exec"), ns)
        except Exception as e:  # name the block that failed
            pytest.fail(f"docs/logic.md python block {k} failed: {type(e).__name__}: {e}\n"
                        f"{code}")
