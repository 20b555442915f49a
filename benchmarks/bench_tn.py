"""tensorix.tn measured: DMRG against exact diagonalisation and quimb, TRG/HOTRG against
Onsager, circuit amplitudes against a state vector, and whole-network contraction time against
quimb and cotengra on random regular graphs. float64 on the CPU; prints markdown tables.

    python benchmarks/bench_tn.py            # the tables in docs/tn.md
    python benchmarks/bench_tn.py --quick    # small sizes (a smoke run)
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from tests.tn._oracles import (  # noqa: E402 - the tests' reference simulator
    StateVector,
    entangled_input,
    qft,
    random_brickwork,
    record,
)


def _timed(fn, repeat=1):
    best, out = math.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def dmrg_rows(quick):
    import tensorix as tx
    from tensorix import tn

    print("| chain | method | energy | error vs exact | seconds |\n|---|---|---|---|---|")
    try:
        import quimb as qu
        import quimb.tensor as qtn
    except ImportError:
        qu = qtn = None
    for L in ([8] if quick else [12, 16]):
        if qu is not None:
            exact = float(qu.groundenergy(qu.ham_heis(L, sparse=True, cyclic=False)))
        else:
            exact = float(np.linalg.eigvalsh(tn.heisenberg_mpo(L, dtype=tx.float64)
                                             .to_dense().numpy())[0])
        res, sec = _timed(lambda: tn.dmrg2(tn.heisenberg_mpo(L, dtype=tx.float64),
                                           bond_dims=[16, 32, 64]))
        print(f"| Heisenberg L={L} | exact diagonalisation | {exact:.12f} | 0 | |")
        print(f"| Heisenberg L={L} | tensorix dmrg2 | {res.energy:.12f} | "
              f"{abs(res.energy - exact):.1e} | {sec:.2f} |")
    if qtn is None or quick:  # quimb's DMRG compiles numba kernels for a minute: full runs only
        return
    warm = qtn.DMRG2(qtn.MPO_ham_heis(6), bond_dims=[8])  # quimb's numba kernels compile once
    warm.solve(tol=1e-6, verbosity=0)
    for L in ([10] if quick else [20, 24]):
        res, sec = _timed(lambda: tn.dmrg2(tn.heisenberg_mpo(L, dtype=tx.float64),
                                           bond_dims=[16, 32, 64], cutoff=1e-10, tol=1e-9))

        def run_quimb():
            d = qtn.DMRG2(qtn.MPO_ham_heis(L), bond_dims=[16, 32, 64], cutoffs=1e-10)
            d.solve(tol=1e-9, verbosity=0)
            return float(np.real(d.energy))

        theirs, qsec = _timed(run_quimb)
        print(f"| Heisenberg L={L} | quimb DMRG2 | {theirs:.12f} | | {qsec:.2f} |")
        print(f"| Heisenberg L={L} | tensorix dmrg2 | {res.energy:.12f} | "
              f"{res.energy - theirs:+.1e} vs quimb | {sec:.2f} ({sec / qsec:.1f}x) |")


def trg_rows(quick):
    import tensorix as tx
    from tensorix import tn

    beta = tn.ISING_BETA_C
    exact = tn.onsager_free_energy(beta)
    print("\n| method | chi | f per site at T_c | error vs Onsager | seconds |\n"
          "|---|---|---|---|---|")
    cases = [("trg", 8), ("hotrg", 8)] if quick else [("trg", 16), ("trg", 32), ("hotrg", 12),
                                                       ("hotrg", 16)]
    for name, chi in cases:
        fn = getattr(tn, name)
        value, sec = _timed(lambda: fn(tn.ising_tensor(beta, dtype=tx.float64), chi=chi,
                                       steps=30))
        f = -float(value) / beta
        print(f"| {name} | {chi} | {f:.12f} | {abs(f - exact):.1e} | {sec:.2f} |")


def _ghz(c, sim, n, rng):
    record(c, sim, "H", 0)
    for q in range(n - 1):
        record(c, sim, "CNOT", q, q + 1)


def _qft(c, sim, n, rng):
    entangled_input(c, sim, rng)
    qft(c, sim)


def _random_circuit(c, sim, n, rng):
    random_brickwork(c, sim, rng, 8)


def circuit_rows(quick, rng):
    from tensorix import tn

    n = 10 if quick else 20
    print("\n| circuit | qubits | gates | max amplitude error vs state vector | seconds per "
          "amplitude |\n|---|---|---|---|---|")
    for label, build in (("GHZ", _ghz), ("QFT of an entangled state", _qft),
                         ("random brickwork, depth 8", _random_circuit)):
        c, sim = tn.Circuit(n), StateVector(n)
        build(c, sim, n, rng)
        picks = [tuple(rng.integers(0, 2, n)) for _ in range(2)]
        picks.append(tuple(np.unravel_index(np.abs(sim.psi).argmax(), sim.psi.shape)))
        errs, sec = [], 0.0
        for b in picks:
            amp, s = _timed(lambda: complex(c.amplitude(b)))
            errs.append(abs(amp - sim.psi[b]))
            sec += s
        print(f"| {label} | {n} | {len(c.gates)} | {max(errs):.1e} | {sec / len(picks):.2f} |")


def random_regular_network(rng, n, degree, bond):
    """Edges of a random ``degree``-regular multigraph-free graph on ``n`` nodes (pairing
    model, retried until simple) and one random tensor per node."""
    while True:
        stubs = rng.permutation(np.repeat(np.arange(n), degree))
        pairs = stubs.reshape(-1, 2)
        if all(a != b for a, b in pairs) and len({tuple(sorted(p)) for p in pairs}) == len(pairs):
            break
    inds = [[] for _ in range(n)]
    for k, (a, b) in enumerate(pairs):
        inds[a].append(f"e{k}")
        inds[b].append(f"e{k}")
    arrays = [rng.standard_normal((bond,) * degree) / math.sqrt(bond) for _ in range(n)]
    return inds, arrays


def contraction_rows(quick, rng):
    import tensorix as tx
    from tensorix import tn

    print("\n| network | contraction | value rel. diff | seconds (best of 3, path given) |\n"
          "|---|---|---|---|")
    sizes = [(16, 3, 2)] if quick else [(40, 3, 2), (60, 3, 2), (30, 3, 4)]
    for n, degree, bond in sizes:
        inds, arrays = random_regular_network(rng, n, degree, bond)
        label = f"{n} nodes, {degree}-regular, bond {bond}"
        net = tn.TensorNetwork([tn.Node(tx.tensor(a), i) for a, i in zip(arrays, inds)])
        path = net.contraction_path(optimize="greedy")
        ref, sec = _timed(lambda: float(net.contract(optimize=path).data), repeat=3)
        print(f"| {label} | tensorix, opt_einsum greedy path | 0 | {sec:.4f} |")
        rows = []
        try:
            import cotengra as ctg

            v, s = _timed(lambda: float(ctg.array_contract(arrays, inds, (), optimize=path)),
                          repeat=3)
            rows.append(("cotengra array_contract, same path", v, s))
        except ImportError:
            pass
        try:
            import quimb.tensor as qtn

            q = qtn.TensorNetwork([qtn.Tensor(a, i) for a, i in zip(arrays, inds)])
            v, s = _timed(lambda: float(q.contract(all, optimize=path)), repeat=3)
            rows.append(("quimb contract, same path", v, s))
        except ImportError:
            pass
        for name, v, s in rows:
            print(f"| {label} | {name} | {abs(v - ref) / abs(ref):.1e} | {s:.3f} "
                  f"({s / sec:.2f}x tensorix's) |")


def classifier_rows(quick):
    import tensorix as tx
    from tensorix import nn, optim, tn
    from tensorix.data import load_digits

    images, labels = load_digits()
    x = images.reshape(len(labels), -1)
    gen = tx.Generator().manual_seed(0)
    perm = tx.randperm(len(labels), generator=gen)
    train, test = perm[:1437], perm[1437:]
    epochs, bond = (1, 6) if quick else (20, 10)
    models = [("MPS classifier, 64 sites", bond,
               lambda: tn.MPSClassifier(64, 10, bond_dim=bond, generator=gen)),
              ("tree TN classifier, 64 sites (Z-order)", bond,
               lambda: tn.TTNClassifier(64, 10, bond_dim=bond, image_shape=(8, 8),
                                        generator=gen))]
    print("\n| model | bond | epochs | held-out accuracy (360 digits) | train seconds | "
          "parameters |\n|---|---|---|---|---|---|")
    for name, dim, make in models:
        model = make()
        opt = optim.Adam(model.parameters(), lr=0.01)
        sched = optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
        t0 = time.perf_counter()
        for _ in range(epochs):
            order = tx.randperm(len(train), generator=gen)
            for k in range(0, len(train), 32):
                idx = train[order[k:k + 32]]
                loss = nn.functional.cross_entropy(model(x[idx]), labels[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
            sched.step()
        sec = time.perf_counter() - t0
        with tx.no_grad():
            acc = float((model(x[test]).argmax(1) == labels[test]).float().mean())
        size = sum(p.numel() for p in model.parameters())
        print(f"| {name} | {dim} | {epochs} | {acc:.1%} | {sec:.0f} | {size} |")


def search_rows(quick, rng):
    """Structure search on a planted tensor ring (plus 1e-4 relative noise): greedy rank
    growth, TnALE from it and from all-2 ranks, against TT-SVD rounded to the same error."""
    import tensorix as tx
    from tensorix import decomp, tn

    shape, ranks = ((5,) * 4, [2, 3, 2, 2]) if quick else ((6,) * 5, [3, 2, 4, 2, 3])
    n = len(shape)
    cores = [rng.standard_normal((ranks[k], shape[k], ranks[(k + 1) % n])) for k in range(n)]
    full = decomp.TRTensor([tx.tensor(c) for c in cores]).to_tensor().numpy()
    full = full + 1e-4 * np.linalg.norm(full) / math.sqrt(full.size) * rng.standard_normal(
        full.shape)
    X = tx.tensor(full)
    print(f"\n| search on a planted ring {ranks} of {shape} (+1e-4 noise) | ranks | parameters | "
          "compression | rel. error | fits | seconds |\n|---|---|---|---|---|---|---|")
    greedy, sec = _timed(lambda: tn.greedy_rank_search(X, tol=1e-3, random_state=0))
    rows = [("greedy_rank_search (tol 1e-3)", greedy, sec)]
    res, sec = _timed(lambda: tn.tnale(X, start=greedy, lam=10.0, random_state=0))
    rows.append(("tnale from the greedy result (lam 10)", res, sec + rows[0][2]))
    res, sec = _timed(lambda: tn.tnale(X, lam=10.0, random_state=0))
    rows.append(("tnale from all ranks 2 (lam 10)", res, sec))
    for name, r, sec in rows:
        print(f"| {name} | {r.ranks} | {r.size} | {r.compression:.1f}x | {r.error:.1e} | "
              f"{len(r.history)} | {sec:.2f} |")
    (tt, sec) = _timed(lambda: decomp.tt_round(decomp.tensor_train(X, rank=max(X.shape) ** 2),
                                               tol=greedy.error))
    size = sum(f.numel() for f in tt.factors)
    err = float((tt.to_tensor() - X).norm() / X.norm())
    print(f"| TT-SVD + rounding to the greedy error | {tt.rank} | {size} | "
          f"{full.size / size:.1f}x | {err:.1e} | 1 | {sec:.2f} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", choices=["dmrg", "trg", "circuit", "contract", "classifier",
                                           "search"])
    args = parser.parse_args(argv)
    from tensorix._threads import set_num_threads

    set_num_threads(1)
    rng = np.random.default_rng(0)
    sections = {"dmrg": lambda: dmrg_rows(args.quick), "trg": lambda: trg_rows(args.quick),
                "circuit": lambda: circuit_rows(args.quick, rng),
                "contract": lambda: contraction_rows(args.quick, rng),
                "classifier": lambda: classifier_rows(args.quick),
                "search": lambda: search_rows(args.quick, rng)}
    for name, run in sections.items():
        if args.only in (None, name):
            run()


if __name__ == "__main__":
    main()
