"""Compiler fuzzing at a fixed seed: random programs over the registry's ops, compiled
against eager on values and gradients (the scaled-up run is benchmarks/bench_compile.py)."""

import numpy as np

from tensorix._compile.fuzz import check_program, fuzz, op_pool, random_program


def test_the_pool_comes_from_the_registry():
    pool = op_pool()
    names = {n for n, _ in pool["unary"]} | {n for n, _ in pool["binary"]}
    assert {"gelu", "tanh", "sigmoid", "erf", "relu"} <= names
    assert {"add", "mul", "maximum"} <= names


def test_fixed_seed_random_programs_compile_to_eager_values_and_gradients():
    report = fuzz(seed=2026, programs=25, n_ops=8, options={"kernels": "numpy"})
    assert report["failures"] == [], report["failures"]


def test_the_checker_catches_a_wrong_compiler(monkeypatch):
    """The oracle is not vacuous: a compiler whose kernels perturb results is caught."""
    from tensorix._compile import kernels

    real = kernels._build_numpy

    def wrong(plan, xp, chunk):
        run = real(plan, xp, chunk)
        return lambda arrays: [a * (1 + 1e-3) for a in run(arrays)]

    monkeypatch.setattr(kernels, "_build_numpy", wrong)
    rng = np.random.default_rng(0)
    caught = 0
    for _ in range(5):
        program, _ = random_program(rng, 8)
        caught += check_program(program, rng, {"kernels": "numpy"}) is not None
    assert caught >= 1
