"""Run a tutorial's ```python blocks, in order, in one namespace (shared by the docs tests)."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_python_blocks(doc, min_blocks):
    """Execute every ```python block of ``docs/<doc>`` and return the namespace; fails when the
    tutorial has fewer than ``min_blocks`` blocks (it lost its code)."""
    path = ROOT / "docs" / doc
    blocks = re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)
    assert len(blocks) >= min_blocks, f"{doc} lost its code blocks ({len(blocks)} found)"
    namespace = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{path.name} block {i}", "exec"), namespace)  # noqa: S102 - ours
    return namespace
