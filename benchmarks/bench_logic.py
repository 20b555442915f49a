"""Time the tensor-logic Datalog engine against clingo and networkx, same process, same data.

Workloads (the Datalog programs are the same text for tensorix.logic and for clingo):

* transitive closure of a random directed graph (default 2,000 nodes, 10,000 edges):
  ``Path(x,y) <- Edge(x,y)``, ``Path(x,z) <- Path(x,y), Edge(y,z)``; networkx's
  ``transitive_closure`` on the same graph;
* same generation on a random tree (default 1,000 nodes, child -> parent edges):
  ``SG(x,y) <- Par(x,p), Par(y,p)``, ``SG(x,y) <- Par(x,xp), SG(xp,yp), Par(y,yp)``;
* the goal-directed query ``Path(0, y)?`` (magic sets) against the full closure;
* the transitive closure again with the edges written as facts in the program's text
  (``Edge(3, 17)`` lines) instead of loaded by ``Program.facts()``;
* loading facts: 1,250 to 10,000 symbol facts (``Edge(N3, N17)``) from the text against the
  same tuples through ``Program.facts()`` (parse + compile + one non-recursive rule): both
  forms must grow linearly.

Each system's result size is checked against the others. Times are the best of ``--repeat``
runs: tensorix.logic = compile + evaluate (facts loaded as an int array beforehand); clingo =
ground + solve (``clingo.Control``; reading the model's atoms back is not timed); networkx =
``transitive_closure`` alone. Then the einsum table of ``bench_einsum.py`` (tensorix.einsum
against numpy.einsum(optimize=True) and torch.einsum).

Run: ``python benchmarks/bench_logic.py`` (``--quick`` for small sizes, ``--repeat N``,
``--no-einsum``). clingo and networkx are optional (``pip install clingo networkx``).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

from tensorix import logic as tl

try:
    import clingo
except ImportError:  # the table then has no clingo column
    clingo = None
try:
    import networkx as nx
except ImportError:
    nx = None

TC = "Path(x, y) <- Edge(x, y)\nPath(x, z) <- Path(x, y), Edge(y, z)\n"
SG = ("SG(x, y) <- Par(x, p), Par(y, p)\n"
      "SG(x, y) <- Par(x, xp), SG(xp, yp), Par(y, yp)\n")
TC_ASP = "path(X,Y) :- edge(X,Y).\npath(X,Z) :- path(X,Y), edge(Y,Z).\n"
SG_ASP = "sg(X,Y) :- par(X,P), par(Y,P).\nsg(X,Y) :- par(X,XP), sg(XP,YP), par(Y,YP).\n"


def random_graph(n, m, seed=0):
    return np.random.default_rng(seed).integers(0, n, size=(m, 2))


def random_tree(n, seed=0):
    """Child -> parent edges of a random recursive tree (node k's parent is below k)."""
    rng = np.random.default_rng(seed)
    child = np.arange(1, n)
    return np.stack([child, (rng.random(n - 1) * child).astype(np.int64)], axis=1)


def best(fn, repeat):
    out, t = None, float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        t = min(t, time.perf_counter() - t0)
    return out, t


def tl_closure(edges, n, program=TC, rel="Edge", head="Path"):
    def run():
        P = tl.Program(f"domain Node = {n}\nrelation {rel}(Node, Node)\n" + program)
        P.facts(rel, edges)
        P.run()
        return P
    return run


def tl_closure_text(edges, n):
    """The closure program with its edges as inline facts (parsing is timed too)."""
    text = (f"domain Node = {n}\nrelation Edge(Node, Node)\n"
            + "".join(f"Edge({a}, {b})\n" for a, b in edges.tolist()) + TC)
    return lambda: tl.Program(text).run()


def fact_loading(counts, repeat, n_symbols=2000):
    """[(facts, text s, Program.facts() s)] for symbol facts read by one rule."""
    rows = []
    for m in counts:
        pairs = [(f"N{a}", f"N{b}") for a, b in random_graph(n_symbols, m).tolist()]
        rule = "R(x, y) <- Edge(x, y)\n"
        text = "".join(f"Edge({a}, {b})\n" for a, b in pairs) + rule

        def api(pairs=pairs, rule=rule):
            P = tl.Program(rule)
            P.facts("Edge", pairs)
            return P.run()

        P, t_text = best(lambda text=text: tl.Program(text).run(), repeat)
        Q, t_api = best(api, repeat)
        assert len(P.value("R")) == len(Q.value("R")), "text and API facts disagree"
        rows.append((m, t_text, t_api))
    return rows


def tl_query(edges, n, source):
    def run():
        P = tl.Program(f"domain Node = {n}\nrelation Edge(Node, Node)\n" + TC)
        P.facts("Edge", edges)
        return P.query(f"Path({source}, y)")
    return run


def clingo_run(rules, pred, facts, name):
    """A function that grounds and solves; returns the control (atoms counted afterwards)."""
    text = "".join(f"{pred}({a},{b}).\n" for a, b in facts) + rules

    def run():
        ctl = clingo.Control(["--warn=none"])
        ctl.add("base", [], text)
        ctl.ground([("base", [])])
        ctl.solve()
        return ctl
    return run


def clingo_count(ctl, name):
    return sum(1 for _ in ctl.symbolic_atoms.by_signature(name, 2))


def nx_closure(edges):
    g = nx.DiGraph()
    g.add_edges_from(map(tuple, edges.tolist()))
    return lambda: nx.transitive_closure(g, reflexive=False)


def _ratio(a, b):
    return "-" if a is None or b is None else f"{a / b:.2f}"


def _fmt(t):
    return "-" if t is None else f"{t:.3f}"


def bench(n_nodes, n_edges, n_tree, repeat):
    rows = []
    edges = random_graph(n_nodes, n_edges)
    P, t_tl = best(tl_closure(edges, n_nodes), repeat)
    size = len(P.value("Path"))
    iters = P.report.component("Path").iterations
    t_cl = t_nx = None
    if clingo is not None:
        ctl, t_cl = best(clingo_run(TC_ASP, "edge", edges, "path"), repeat)
        assert clingo_count(ctl, "path") == size, "clingo disagrees on the closure"
    if nx is not None:
        closure, t_nx = best(nx_closure(edges), repeat)
        assert closure.number_of_edges() == size, "networkx disagrees on the closure"
    rows.append((f"transitive closure, {n_nodes} nodes, {n_edges} edges ({iters} rounds)",
                 size, t_tl, t_cl, t_nx))
    tree = random_tree(n_tree)
    S, t_tl = best(tl_closure(tree, n_tree, SG, "Par", "SG"), repeat)
    size = len(S.value("SG"))
    depth = np.zeros(n_tree, np.int64)
    for c, p in tree:
        depth[c] = depth[p] + 1
    counts = np.bincount(depth[1:])
    assert size == int((counts ** 2).sum()), "same generation: wrong size"
    t_cl = None
    if clingo is not None:
        ctl, t_cl = best(clingo_run(SG_ASP, "par", tree, "sg"), repeat)
        assert clingo_count(ctl, "sg") == size, "clingo disagrees on same generation"
    rows.append((f"same generation, {n_tree}-node tree", size, t_tl, t_cl, None))
    ans, t_q = best(tl_query(edges, n_nodes, 0), repeat)
    rows.append(("goal-directed Path(0, y)? (magic sets)", len(ans["y"]), t_q, None, None))
    P, t_text = best(tl_closure_text(edges, n_nodes), repeat)
    assert len(P.value("Path")) == rows[0][1], "inline facts give another closure"
    rows.append((f"transitive closure, the {n_edges} edges inline in the text", rows[0][1],
                 t_text, rows[0][3], rows[0][4]))
    return rows


def table(rows):
    lines = ["| workload | tuples | tensorix.logic s | clingo s | networkx s | tl/clingo | "
             "tl/networkx |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name, size, t_tl, t_cl, t_nx in rows:
        lines.append(f"| {name} | {size:,} | {t_tl:.3f} | {_fmt(t_cl)} | {_fmt(t_nx)} | "
                     f"{_ratio(t_tl, t_cl)} | {_ratio(t_tl, t_nx)} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="small sizes")
    ap.add_argument("--no-einsum", action="store_true", help="skip the einsum table")
    args = ap.parse_args()
    sizes = (300, 1500, 200) if args.quick else (2000, 10000, 1000)
    vers = (f"clingo {clingo.__version__ if clingo else '-'}, "
            f"networkx {nx.__version__ if nx else '-'}, numpy {np.__version__}")
    print(f"{vers}; best of {args.repeat}\n")
    print(table(bench(*sizes, args.repeat)))
    counts = (250, 500, 1000) if args.quick else (1250, 2500, 5000, 10000)
    print("\nloading symbol facts: inline in the text vs Program.facts() (s)\n")
    print("| facts | text s | Program.facts() s | text/API |\n|---:|---:|---:|---:|")
    for m, t_text, t_api in fact_loading(counts, args.repeat):
        print(f"| {m:,} | {t_text:.3f} | {t_api:.3f} | {t_text / t_api:.1f} |")
    if not args.no_einsum:
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
        import bench_einsum

        print("\neinsum (bench_einsum.py), float32, ms per call:\n")
        cases = bench_einsum.QUICK if args.quick else bench_einsum.CASES
        print(bench_einsum.table(bench_einsum.run(cases, 3 if args.quick else 7)))


if __name__ == "__main__":
    main()
