"""Run a tutorial page: every ```python block of a docs/*.md file, in order, in one namespace
(the blocks carry their own assertions). Shared by the docs tests of each subpackage."""

from __future__ import annotations

import pathlib
import re

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"


def python_blocks(path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", pathlib.Path(path).read_text(), flags=re.S)


def run_blocks(path, namespace=None) -> dict:
    """Execute the page's Python blocks in order; returns the namespace they built."""
    namespace = {} if namespace is None else namespace
    for i, block in enumerate(python_blocks(path)):
        code = compile(block, f"{pathlib.Path(path).name} block {i}", "exec")
        exec(code, namespace)  # noqa: S102 - the tutorials are ours
    return namespace
