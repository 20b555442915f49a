"""The examples run, and a tiny version of benchmarks/bench_logic.py agrees with networkx
(the benchmark itself is not part of the test run)."""

import importlib.util
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_examples_run(capsys):
    _load(ROOT / "examples" / "logic_datalog.py").main()
    assert "Ancestor(Ann, x)?" in capsys.readouterr().out
    assert _load(ROOT / "examples" / "logic_learning.py").main(steps=120) > 0.9
    assert _load(ROOT / "examples" / "logic_embedding.py").main(dim=512)


def test_benchmark_smoke():
    bench = _load(ROOT / "benchmarks" / "bench_logic.py")
    edges = bench.random_graph(60, 150)
    P = bench.tl_closure(edges, 60)()
    nx = pytest.importorskip("networkx")
    g = nx.DiGraph()
    g.add_edges_from(map(tuple, edges.tolist()))
    assert len(P.value("Path")) == nx.transitive_closure(g, reflexive=False).number_of_edges()
    tree = bench.random_tree(50)
    S = bench.tl_closure(tree, 50, bench.SG, "Par", "SG")()
    depth = np.zeros(50, np.int64)
    for c, p in tree:
        depth[c] = depth[p] + 1
    assert len(S.value("SG")) == int((np.bincount(depth[1:]) ** 2).sum())
    ans = bench.tl_query(edges, 60, 0)()
    assert set(ans["y"]) == {b for a, b in P.value("Path").tuples() if a == 0}
    assert set(bench.tl_closure_text(edges, 60)().value("Path").tuples()) == set(
        P.value("Path").tuples())
    assert [m for m, _, _ in bench.fact_loading([20, 40], 1)] == [20, 40]
