"""docs/compile.md stays true: every ```python block runs, in order, in one namespace."""

from tests._docs import run_python_blocks


def test_compile_tutorial_code_blocks_run(capsys):
    ns = run_python_blocks("compile.md", 17)
    out = capsys.readouterr().out
    assert "# guards: n <= 4" in out and "guard n <= 4 failed for x.shape[0] = 6" in out
    assert "# specialized: n = 3 (x.shape[0])" in out
    assert "item()/bool()" in out  # the graph break is reported
    assert "6*batch" in out  # a symbolic shape argument
    assert ns["fast"]._compiled.stats["compiles"] == 1
    assert ns["f"].stats["compiles"] == 2
    assert "effect: AdamW.step() replayed eagerly" in out and "Graph Break Count: 1" in out
    assert "Graph Break Count: 0\nEffects: 3 (AdamW.zero_grad(), backward(), AdamW.step())" in out
    assert ns["cb"].stats["recompiles"] <= 1 and not ns["step"].stats["breaks"]
    assert ns["dyn"].stats["compiles"] == 1 and "dynamic:" in out
    assert "passes over each row" in out and ns["plan"].phased  # the row kernel section
    assert ns["clipped"].explain().graph_count == 1 and not ns["clipped"].stats["breaks"]


def test_aot_c_section_builds_and_matches_eager(capsys):
    import pytest

    from tensorix._compile.cgen import find_c_compiler

    if find_c_compiler() is None:
        pytest.skip("no C compiler (cc/gcc/clang)")
    ns = run_python_blocks("compile.md", 2, section="Ahead-of-time C: `aot_c`")
    assert ns["err"] < 1e-5
    assert "max abs error" in capsys.readouterr().out
