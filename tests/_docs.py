"""Running a tutorial's code: every ```python block of a docs/*.md page (or of one section of
it), in order, in one namespace. Shared by the docs tests, so that every page stays true."""

from __future__ import annotations

import pathlib
import re

import tensorix as tx

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"


def python_blocks(name: str, section: str | None = None) -> list:
    """The ```python blocks of ``docs/<name>``; with ``section``, only those under that heading
    (up to the next heading of the same or a higher level), so that two authors' sections of
    one page can each have their own test."""
    path = DOCS / name
    text = path.read_text()
    if section is not None:
        m = re.search(rf"^(#+) {re.escape(section)}\s*$", text, flags=re.M)
        if m is None:
            raise AssertionError(f"{path.name}: no heading {section!r}")
        rest = text[m.end():]
        end = re.search(rf"^#{{1,{len(m.group(1))}}} ", rest, flags=re.M)
        text = rest[:end.start()] if end else rest
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def run_python_blocks(name: str, min_blocks: int, section: str | None = None) -> dict:
    """Execute the blocks of ``docs/<name>`` (or of its ``section``), seeded with 0, and return
    the namespace; fails if there are fewer than ``min_blocks`` blocks (the page lost its
    code). A failure names the block."""
    blocks = python_blocks(name, section)
    assert len(blocks) >= min_blocks, f"{name} lost its code blocks ({len(blocks)} found)"
    namespace: dict = {}
    tx.manual_seed(0)
    for i, block in enumerate(blocks):
        exec(compile(block, f"{name} block {i}", "exec"), namespace)  # noqa: S102 - ours
    return namespace
