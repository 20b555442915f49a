"""Citations that resolve: the rules (``R8``) and spec sections (``spec 2.2``) that code,
tests and docs cite are in the repository, in docs/specs/."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
NUMERICS = ROOT / "docs" / "specs" / "numerics.md"
LOGIC = ROOT / "docs" / "specs" / "tensor-logic.md"

# "R1".."R99" where it names a rule: not a matrix of a QR factorisation (linalg_decomp's "Q R1")
RULE = re.compile(r"(?<![\w.])R(\d{1,2})(?![\w(]|\.\d)")
NOT_A_RULE = re.compile(r"Q R\d|R\d = |gR\d|Y gR")
SECTION = re.compile(r"\bspec(?: section)? (\d+(?:\.\d+)?)\b")
LOGIC_SECTION = re.compile(r"tensor-logic\.md section (\d+(?:\.\d+)?)")


def _sources():
    for folder in ("tensorix", "tests", "docs", "examples", "benchmarks", "scripts"):
        for p in sorted((ROOT / folder).rglob("*")):
            if p.suffix in (".py", ".md", ".sh") and "specs" not in p.parts and \
                    p != pathlib.Path(__file__).resolve():  # this file's examples of orphans
                yield p
    yield ROOT / "README.md"


def _headings(path):
    """Section numbers of a spec: '## 2. ...' gives '2', '### 2.2 ...' gives '2.2'."""
    return set(re.findall(r"^#{2,4} (\d+(?:\.\d+)?[a-z]?)\.? ", path.read_text(), re.M))


def _citations():
    for p in _sources():
        for n, line in enumerate(p.read_text().splitlines(), 1):
            where = f"{p.relative_to(ROOT)}:{n}"
            if not NOT_A_RULE.search(line):
                for rule in RULE.findall(line):
                    yield where, "rule", f"R{rule}"
            for sec in SECTION.findall(line):
                yield where, "numerics", sec
            for sec in LOGIC_SECTION.findall(line):
                yield where, "logic", sec


def test_cited_rules_and_sections_are_in_docs_specs():
    rules = set(re.findall(r"^(R\d+)\. ", NUMERICS.read_text(), re.M))
    sections = {"numerics": _headings(NUMERICS), "logic": _headings(LOGIC)}
    found = list(_citations())
    assert len(found) > 20  # the scan sees the citations (49 at the time of writing)
    bad = [f"{where}: {what}" for where, kind, what in found
           if (what not in rules if kind == "rule" else what not in sections[kind])]
    assert not bad, f"citations of rules or sections that docs/specs/ does not have: {bad}"


def test_the_scan_finds_an_orphan():
    assert RULE.findall("keeps the codes (numerics spec R8); see R12.") == ["8", "12"]
    assert SECTION.findall("by the rule of spec 2.2 and spec section 5") == ["2.2", "5"]
    assert "9.9" not in _headings(NUMERICS)
