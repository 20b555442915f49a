"""Repository budgets kept by tooling: ruff clean, no source file over the line cap, optional
dependencies imported lazily."""

import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
MAX_LINES = 800


def test_no_python_file_over_the_line_cap():
    long = [f"{p.relative_to(ROOT)}: {n}" for p in ROOT.glob("**/*.py")
            if ".venv" not in p.parts and (n := len(p.read_text().splitlines())) > MAX_LINES]
    assert not long, f"files over {MAX_LINES} lines (split them by family): {long}"


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff not installed")
def test_ruff_clean():
    r = subprocess.run(["ruff", "check", "--quiet", str(ROOT)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_optional_dependencies_are_not_imported_by_the_core():
    """design.md: cupy, numba, mpi4py, onnx and torch are extras, imported on first use only,
    so ``import tensorix`` stays small and fast (a fresh interpreter; pytest imports torch)."""
    code = ("import sys, tensorix, tensorix.numerics, tensorix.nn, tensorix.optim, tensorix.data, "
            "tensorix.io, tensorix.logic, tensorix.quant; "
            "print(sorted({'cupy', 'numba', 'llvmlite', 'mpi4py', 'onnx', 'torch'} & "
            "set(sys.modules)))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


# Upward imports still in place, each with the reason; the list only shrinks (docs/architecture.md).
KNOWN_UPWARD: set = set()  # none left: an upward import is a test failure


def test_imports_point_down_and_do_not_cycle():
    """docs/architecture.md: a module imports from its own layer and those below it, never from
    one above (at module level or inside a function), and no modules import each other at
    module level."""
    from tests import _layers

    found = _layers.imports()
    up = {(i.source, i.target): i for i in _layers.upward(found)}
    new = [f"{i.source}:{i.line} -> {i.target}" for k, i in up.items() if k not in KNOWN_UPWARD]
    assert not new, f"imports pointing up a layer (see docs/architecture.md): {new}"
    gone = KNOWN_UPWARD - set(up)
    assert not gone, f"fixed, remove them from KNOWN_UPWARD: {sorted(gone)}"
    assert _layers.cycles(found) == [], "module-level import cycles"
    assert _layers.package_cycles(found) == [], "module-level import cycles between packages"
    unlayered = [m for m in _layers.modules() if _layers.layer_of(m) is None]
    assert not unlayered, f"modules in no layer (add them to tests/_layers.LAYERS): {unlayered}"


def test_the_layering_check_sees_upward_imports_and_cycles():
    """The checker itself: an upward import and a two-module cycle are reported."""
    from tests._layers import Import, cycles, upward

    up = Import("tensorix.backend", "tensorix.testing.oracle", 3, True)
    down = Import("tensorix.nn.module", "tensorix.ops.reduce", 5, False)
    assert upward([up, down]) == [up]
    loop = [Import("tensorix.ops.a", "tensorix.ops.b", 1, False),
            Import("tensorix.ops.b", "tensorix.ops.a", 1, False)]
    assert cycles(loop) == [["tensorix.ops.a", "tensorix.ops.b"]]
    assert cycles(loop[:1]) == []


def test_the_tensor_stub_is_current():
    """tensorix/tensor.pyi lists every Tensor method that ops/__init__ installs (a fresh
    interpreter: what ``import tensorix`` gives); regenerate with
    ``python -m tensorix.testing.gen_stubs``."""
    r = subprocess.run([sys.executable, "-m", "tensorix.testing.gen_stubs", "--check"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


def test_the_tensor_stub_names_every_installed_method(monkeypatch):
    """The stub is rendered from the installed class: a method added to Tensor shows up with
    its signature and first doc line (so a stale file differs from it)."""
    import tensorix as tx
    from tensorix.testing import gen_stubs

    def frobnicate(self, k: int, *, scale=2.0) -> tx.Tensor:
        """Scale by ``k``. More text that the stub leaves out."""

    monkeypatch.setattr(tx.Tensor, "frobnicate", frobnicate, raising=False)
    text = gen_stubs.render()
    assert ('    def frobnicate(self, k, *, scale=...) -> Tensor:\n'
            '        """Scale by ``k``."""') in text
    for name in ("matmul", "sum", "__add__", "xp", "backward", "grad"):
        assert f"def {name}(" in text or f"    {name}: Any" in text, name
