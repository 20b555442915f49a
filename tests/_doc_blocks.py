"""Run a tutorial's ```python blocks, in order, in one namespace: the docs stay true.

``python_blocks(path, section)`` takes the blocks of a whole Markdown file, or only those under
the heading ``section`` (up to the next heading of the same or a higher level), so that two
authors' sections of one page can each have their own test.
"""

from __future__ import annotations

import pathlib
import re

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"


def python_blocks(path, section: str | None = None) -> list:
    text = pathlib.Path(path).read_text()
    if section is not None:
        m = re.search(rf"^(#+) {re.escape(section)}\s*$", text, flags=re.M)
        if m is None:
            raise AssertionError(f"{pathlib.Path(path).name}: no heading {section!r}")
        level = len(m.group(1))
        rest = text[m.end():]
        end = re.search(rf"^#{{1,{level}}} ", rest, flags=re.M)
        text = rest[:end.start()] if end else rest
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def run_blocks(blocks, label: str, namespace: dict | None = None) -> dict:
    """Execute ``blocks`` in order in ``namespace`` (a fresh one by default); a failure names
    the block."""
    namespace = {} if namespace is None else namespace
    for i, block in enumerate(blocks):
        exec(compile(block, f"{label} block {i}", "exec"), namespace)  # noqa: S102 - ours
    return namespace
