"""The import graph of the package, read with ``ast``, and the layers of docs/architecture.md.

Used by tests/test_hygiene.py (imports point down, no cycles) and as a report:
``python -m tests._layers`` prints the upward imports, the module-level cycles and the count of
imports placed inside functions (those of optional dependencies counted apart).
"""

from __future__ import annotations

import ast
import dataclasses
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tensorix"

# docs/architecture.md, bottom to top. A module belongs to the longest prefix listed here; a
# module may import from its own layer and the layers below it, never from one above.
LAYERS = (
    ("backend", ("tensorix.backend", "tensorix.fakecupy", "tensorix.dtypes", "tensorix.formats",
                 "tensorix._codec", "tensorix._alloc", "tensorix._threads", "tensorix.kernels")),
    ("tensor", ("tensorix.tensor", "tensorix.autograd", "tensorix._repr")),
    ("ops", ("tensorix.ops", "tensorix.linalg", "tensorix.special", "tensorix.fft")),
    ("nn", ("tensorix.nn", "tensorix.optim", "tensorix.data", "tensorix.io")),
    # nn.parallel (DistributedDataParallel) sits on distributed; tensorix.nn loads it on first
    # use, as torch.nn.parallel. _settings holds torch's top-level switches (TF32 is cuda's).
    ("libraries", ("tensorix.nn.parallel", "tensorix._settings", "tensorix.numerics",
                   "tensorix.logic", "tensorix.decomp", "tensorix.quant", "tensorix.tn",
                   "tensorix.onnx", "tensorix._compile", "tensorix.memory",
                   "tensorix.compile", "tensorix.fx", "tensorix.distributed",
                   "tensorix.distributions", "tensorix.amp", "tensorix.cuda", "tensorix.backends",
                   "tensorix.accelerator", "tensorix.func", "tensorix.utils",
                   "tensorix.testing")),
    ("entry", ("tensorix.demo", "tensorix.__main__")),
)
# ``import tensorix`` itself is the ops-level facade (tensor, dtypes, ops); subpackages above it
# load lazily through its __getattr__.
FACADE = "tensorix"
FACADE_LAYER = 2

# Optional dependencies (design.md): imported inside functions on purpose, so that
# ``import tensorix`` never needs them.
OPTIONAL = {"torch", "numba", "llvmlite", "cupy", "mpi4py", "onnx", "onnxruntime", "opt_einsum",
            "threadpoolctl", "tqdm", "safetensors", "scipy"}


@dataclasses.dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module (the longest name that is a module of the package)
    line: int
    in_function: bool


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, pathlib.Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int | None:
    """The layer index of a package module (None for modules outside the package)."""
    if module == FACADE:
        return FACADE_LAYER
    best, index = "", None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > len(best):
                best, index = p, i
    return index


def _targets(module, is_package, node, known):
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:  # relative: resolve against the importing module's package
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - node.level + 1]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module
    # ``from pkg import sub`` imports the submodule; ``from mod import name`` imports mod
    return [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in known else prefix for a in node.names]


def imports() -> list[Import]:
    """Every import statement's targets in the package, at module level and inside functions
    (one entry per imported module per statement)."""
    known = modules()
    out = []
    for module, path in known.items():
        is_package = path.name == "__init__.py"

        def visit(node, in_function, module=module, is_package=is_package):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for t in dict.fromkeys(_targets(module, is_package, child, known)):
                        out.append(Import(module, t, child.lineno, in_function))
                nested = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                visit(child, in_function or nested)

        visit(ast.parse(path.read_text()), False)
    return out


def upward(found=None) -> list[Import]:
    """Imports (anywhere in a module) from a layer into a layer above it."""
    bad = []
    for imp in found if found is not None else imports():
        src, dst = layer_of(imp.source), layer_of(imp.target)
        if src is not None and dst is not None and dst > src:
            bad.append(imp)
    return bad


def _reachable(graph, start):
    seen, todo = set(), [start]
    while todo:  # an explicit stack: no recursion limit
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def cycles(found=None) -> list[list[str]]:
    """Groups of modules that import each other at module level (directly or through others). A
    package's ``__init__`` importing its own submodules is not a cycle (that is how a package
    lists its surface); a submodule importing its parent's __init__ back is."""
    graph: dict[str, set[str]] = {}
    for imp in found if found is not None else imports():
        if imp.in_function or not imp.target.startswith(FACADE):
            continue
        if (imp.target + ".").startswith(imp.source + "."):
            continue  # a package importing its own submodules
        graph.setdefault(imp.source, set()).add(imp.target)
    reach = {node: _reachable(graph, node) for node in graph}
    groups = {frozenset(v for v in reach[u] if u in reach.get(v, ())) for u in graph}
    return sorted(sorted(g) for g in groups if len(g) > 1)


def package_cycles(found=None) -> list[list[str]]:
    """:func:`cycles` with each module replaced by its package (``tensorix.ops.reduce`` is
    ``tensorix.ops``): two packages must not import each other at module level either."""
    known = modules()

    def package(name):
        path = known.get(name)
        return name if path is None or path.name == "__init__.py" else name.rsplit(".", 1)[0]

    found = found if found is not None else imports()
    return cycles([dataclasses.replace(i, source=package(i.source), target=package(i.target))
                   for i in found if package(i.source) != package(i.target)])


def inside_function_counts(found=None) -> dict[str, int]:
    """Import statements placed inside functions: of the package itself (to dodge a cycle or for
    lazy loading of a layer above), of optional dependencies (legitimate), and of the rest."""
    seen = {}
    for imp in found if found is not None else imports():
        if imp.in_function:
            root = imp.target.split(".")[0]
            kind = ("tensorix" if root == FACADE else "optional" if root in OPTIONAL
                    else "other")
            seen[(imp.source, imp.line)] = kind
    counts = {"tensorix": 0, "optional": 0, "other": 0}
    for kind in seen.values():
        counts[kind] += 1
    return counts


def main():
    found = imports()
    for imp in upward(found):
        print(f"upward: {imp.source}:{imp.line} -> {imp.target}"
              f"{' (in a function)' if imp.in_function else ''}")
    for group in cycles(found) + package_cycles(found):
        print("cycle:", " ".join(group))
    print("import statements inside functions:", inside_function_counts(found))


if __name__ == "__main__":
    sys.exit(main())
