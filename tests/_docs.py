"""Running a tutorial's code: every ```python block of a docs/*.md page, in order, in one
namespace (shared by the docs tests, so a page stays true)."""

from __future__ import annotations

import pathlib
import re

import tensorix as tx

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"


def run_python_blocks(name: str, min_blocks: int) -> dict:
    """Execute the ```python blocks of ``docs/<name>`` (seeded with 0) and return the
    namespace; fails if the page has fewer than ``min_blocks`` blocks."""
    path = DOCS / name
    blocks = re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)
    assert len(blocks) >= min_blocks, f"{name} lost its code blocks"
    namespace: dict = {}
    tx.manual_seed(0)
    for i, block in enumerate(blocks):
        exec(compile(block, f"{name} block {i}", "exec"), namespace)  # noqa: S102 - ours
    return namespace
