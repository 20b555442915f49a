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
