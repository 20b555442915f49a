"""Every Python block of docs/logic.md runs, in order, in one namespace (the tutorial's
examples carry their own assertions); where an ``output`` block follows a Python block, what
the block prints must match it (``...`` matches anything, as in doctest)."""

import contextlib
import doctest
import io
import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "logic.md"


def _blocks():
    """[(code, expected output or None)] in the order of the page."""
    found = re.findall(r"```python\n(.*?)```(?:\s*```output\n(.*?)```)?", DOC.read_text(),
                       flags=re.S)
    return [(code, want or None) for code, want in found]


def test_the_tutorial_has_the_promised_sections():
    text = DOC.read_text()
    for title in ("A Datalog program", "A multilayer perceptron", "Attention",
                  "A kernel machine", "Belief propagation", "Reasoning in embedding space"):
        assert title in text
    assert len(_blocks()) >= 10
    assert sum(want is not None for _, want in _blocks()) >= 3


def test_docs_examples_run():
    ns, checker = {}, doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    for k, (code, want) in enumerate(_blocks()):
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"{DOC.name} block {k}", "exec"), ns)
        except Exception as e:  # name the block that failed
            pytest.fail(f"docs/logic.md python block {k} failed: {type(e).__name__}: {e}\n"
                        f"{code}")
        if want is not None and not checker.check_output(want, out.getvalue(), flags):
            pytest.fail(f"docs/logic.md python block {k} printed\n{out.getvalue()}\n"
                        f"but the page shows\n{want}")
