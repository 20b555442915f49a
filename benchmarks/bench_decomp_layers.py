"""Compression ratio against accuracy for the structured layers of ``tensorix.decomp.layers``
on the bundled 8x8 digits (seeded 80/20 split, Adam, short training; float32 on the CPU).

1. An MLP 64 -> 256 -> 256 -> 10 whose 256 x 256 hidden layer is a TTLinear (modes
   (4, 8, 8) x (8, 8, 4)) at several ranks, trained from scratch; and the trained dense MLP's
   hidden layer replaced by the TT-SVD of its weight (``TTLinear.from_dense``), before and
   after one epoch of fine-tuning.
2. The demo's digits CNN (tensorix.demo.digits_cnn) trained dense, then its 16 -> 32 conv
   replaced by ``decompose_conv2d``'s choice (low-rank channel SVD, one-way separable, CP,
   Tucker-2; smallest kernel error at the budget) at several parameter budgets, before and
   after one epoch of fine-tuning.
3. Rank compensation on the trained MLP's hidden weight: a rank-r float32 factorization
   against bf16 / MXFP8 / MXFP4 factors at the rank that fits the same bytes; the weight's
   relative error and the MLP's accuracy with that layer in place (no fine-tuning).
4. Degenerate CP (``--cp-stability``): the CNN's conv as plain CP and with the
   error-preserving correction (``stabilize=True``) at high ranks, before and after
   fine-tuning at three learning rates.
5. Speed (``--speed``): forward + backward of a 4096 x 4096 layer on a batch of 256, dense
   ``nn.Linear`` against TTLinear, MonarchLinear and BTTLinear, and torch's dense Linear in
   the same run (best of ``--repeat``).

    python benchmarks/bench_decomp_layers.py            # the tables in docs/decomp.md
    python benchmarks/bench_decomp_layers.py --quick    # 1 epoch, two settings (a smoke run)
"""

from __future__ import annotations

import argparse
import copy
import time

import tensorix as tx
from tensorix import nn, optim
from tensorix.data import DataLoader, TensorDataset, load_digits, random_split
from tensorix.decomp.layers import (
    BTTLinear,
    CPConv2d,
    LowRankLinear,
    MonarchLinear,
    TTLinear,
    decompose_conv2d,
    rank_compensation,
)
from tensorix.demo import digits_cnn
from tensorix.nn import functional as F


def _data():
    images, labels = load_digits()
    train, test = random_split(TensorDataset(images, labels), [0.8, 0.2],
                               generator=tx.Generator().manual_seed(0))
    return train, test


def _train(model, train, epochs, lr=3e-3, seed=1):
    loader = DataLoader(train, batch_size=64, shuffle=True,
                        generator=tx.Generator().manual_seed(seed))
    opt = optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    model.train()
    for _ in range(epochs):
        for xb, yb in loader:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model


def accuracy(model, test):
    model.eval()
    correct = total = 0
    with tx.no_grad():
        for xb, yb in DataLoader(test, batch_size=512):
            correct += int((model(xb).argmax(1) == yb).sum())
            total += len(yb)
    model.train()
    return correct / total


def mlp(hidden=None):
    tx.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.ReLU(),
                         hidden if hidden is not None else nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def _weights(layer):
    return sum(p.numel() for n, p in layer.named_parameters() if not n.endswith("bias"))


TT_MODES = dict(in_modes=(4, 8, 8), out_modes=(8, 8, 4))


def tt_rows(train, test, epochs, ranks):
    rows = []
    dense = _train(mlp(), train, epochs)
    base = _weights(dense[3])
    rows.append(("MLP hidden 256x256", "dense Linear", "-", base, 1.0, accuracy(dense, test),
                 accuracy(_train(copy.deepcopy(dense), train, 1, lr=1e-3), test)))
    for r in ranks:
        tx.manual_seed(0)
        model = _train(mlp(TTLinear(256, 256, rank=r, **TT_MODES)), train, epochs)
        n = _weights(model[3])
        rows.append(("MLP hidden 256x256", "TTLinear from scratch", r, n, base / n,
                     accuracy(model, test), "-"))
    for r in ranks:
        model = copy.deepcopy(dense)
        model[3] = TTLinear.from_dense(dense[3], rank=r, **TT_MODES)
        before = accuracy(model, test)
        _train(model, train, 1, lr=1e-3)
        n = _weights(model[3])
        rows.append(("MLP hidden 256x256", "TTLinear.from_dense (TT-SVD)", r, n, base / n,
                     before, accuracy(model, test)))
    return rows, dense


def compensation_rows(dense, test, ranks):
    """(rank, format, rank used, bytes, relative weight error, accuracy) per format."""
    rows = []
    weight = dense[3].weight.detach()
    for r in ranks:
        for fmt, (rank, nbytes, err) in rank_compensation(weight, r).items():
            model = copy.deepcopy(dense)
            model[3] = LowRankLinear.from_dense(dense[3], rank, fmt=fmt)
            rows.append((r, fmt, rank, int(nbytes), err, accuracy(model, test)))
    return rows


def conv_rows(train, test, epochs, budgets):
    tx.manual_seed(0)
    dense = _train(digits_cnn(), train, epochs)
    base = dense[2].weight.numel()
    rows = [("CNN conv 16->32 3x3", "dense Conv2d", "-", base, 1.0, accuracy(dense, test),
             accuracy(_train(copy.deepcopy(dense), train, 1, lr=1e-3), test))]
    for budget in budgets:
        model = copy.deepcopy(dense)
        layer, report = decompose_conv2d(model[2], budget,
                                         methods=("svd", "separable", "cp", "tucker"))
        method = type(layer).__name__
        model[2] = layer
        before = accuracy(model, test)
        _train(model, train, 1, lr=1e-3)
        n = _weights(layer)
        errors = ", ".join(f"{m} {e:.2f}" for m, (_, _, e) in report.items())
        rows.append(("CNN conv 16->32 3x3", f"{method} (budget {budget}; kernel errors "
                     f"{errors})", layer.rank, n, base / n, before, accuracy(model, test)))
    return rows


def cp_stability_rows(train, test, epochs, ranks, lrs=(1e-3, 3e-3), seeds=(1,)):
    """The trained CNN's 16 -> 32 conv as plain CP and as CP with the error-preserving
    correction (``stabilize=True``) at high ranks: kernel error, the largest rank-1 term's norm
    and the terms' total energy ``sum ||term_r||^2 / ||K||^2`` (1 for orthogonal terms, large
    when terms cancel: degeneracy), accuracy before and after one fine-tuning epoch per lr
    (a list over the data-order ``seeds`` for each lr)."""
    from tensorix.decomp import cp_normalize

    tx.manual_seed(0)
    dense = _train(digits_cnn(), train, epochs)
    kernel = dense[2].weight.detach()
    rows = []
    for rank in ranks:
        for stabilize in (False, True):
            model = copy.deepcopy(dense)
            layer = CPConv2d.from_conv(model[2], rank, stabilize=stabilize)
            model[2] = layer
            with tx.no_grad():
                err = float((layer.to_dense() - kernel).norm() / kernel.norm())
                cores = [layer.pointwise_out[:, :, 0, 0], layer.pointwise_in[:, :, 0, 0].mT,
                         layer.vertical[:, 0, :, 0].mT, layer.horizontal[:, 0, 0, :].mT]
                terms = cp_normalize((None, cores)).weights.abs()
                energy = float((terms ** 2).sum() / kernel.norm() ** 2)
            before = accuracy(model, test)
            tuned = [[accuracy(_train(copy.deepcopy(model), train, 1, lr=lr, seed=seed), test)
                      for seed in seeds] for lr in lrs]
            rows.append((rank, "CP + EPC" if stabilize else "CP", err,
                         float(terms.max() / kernel.norm()), energy, before, tuned))
    return rows


def _best_ms(step, repeat):
    step()  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return 1e3 * min(times)


def speed_rows(n=4096, batch=256, repeat=3):
    """(layer, weights, ms forward + backward) for dense and structured n x n layers."""
    tx.manual_seed(0)
    x = tx.randn(batch, n, requires_grad=True)
    layers = [("tensorix nn.Linear", nn.Linear(n, n)),
              ("TTLinear rank 4, modes (16, 16, 16)", TTLinear(n, n, rank=4, d=3)),
              ("TTLinear rank 16, modes (16, 16, 16)", TTLinear(n, n, rank=16, d=3)),
              ("MonarchLinear (64 x 64 blocks)", MonarchLinear(n, n)),
              ("BTTLinear rank 4", BTTLinear(n, n, rank=4))]
    rows = []
    for name, layer in layers:
        def step(layer=layer):
            layer(x).sum().backward()
        rows.append((name, _weights(layer), _best_ms(step, repeat)))
    try:
        import torch
    except ImportError:
        return rows
    ref = torch.nn.Linear(n, n)
    xt = torch.randn(batch, n, requires_grad=True)
    rows.append(("torch nn.Linear", n * n, _best_ms(lambda: ref(xt).sum().backward(), repeat)))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one epoch, two settings each")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--speed", action="store_true", help="only the speed table")
    parser.add_argument("--cp-stability", action="store_true",
                        help="only the plain CP against CP + EPC table (docs/decomp.md)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if args.speed:
        print("| layer 4096 x 4096, batch 256 | weights | ms forward + backward |")
        print("|---|---|---|")
        for name, weights, ms in speed_rows(repeat=args.repeat):
            print(f"| {name} | {weights} | {ms:.1f} |", flush=True)
        return
    epochs = 1 if args.quick else args.epochs
    if args.cp_stability:
        lrs = (3e-3, 1e-2)
        print("| rank | fit | kernel error | largest term / ||K|| | sum ||term||^2 / ||K||^2 | "
              "acc | " + " | ".join(f"fine-tuned, lr {lr:g}: mean (min-max) of 4 orders"
                                   for lr in lrs) + " |\n|---|---|---|---|---|---|---|---|")
        ranks = (20,) if args.quick else (40, 80)
        for rank, fit, err, top, energy, acc, tuned in cp_stability_rows(
                *_data(), 1 if args.quick else 4, ranks, lrs=lrs,
                seeds=(1,) if args.quick else (1, 2, 3, 4)):
            print(f"| {rank} | {fit} | {err:.3f} | {top:.2f} | {energy:.1f} | {acc:.1%} | "
                  + " | ".join(f"{sum(a) / len(a):.1%} ({min(a):.1%}-{max(a):.1%})"
                               for a in tuned) + " |", flush=True)
        return
    ranks = (2, 8) if args.quick else (1, 2, 4, 8, 16)
    budgets = (0.5, 0.1) if args.quick else (0.5, 0.3, 0.15, 0.08)
    train, test = _data()
    start = time.perf_counter()
    print("| layer | structure | rank | weights | compression | acc | acc after 1 epoch "
          "fine-tune |")
    print("|---|---|---|---|---|---|---|")
    tt, dense = tt_rows(train, test, epochs, ranks)
    for rows in (tt, conv_rows(train, test, epochs, budgets)):
        for row in rows:
            layer, kind, rank, n, ratio, acc, tuned = row
            print(f"| {layer} | {kind} | {rank} | {n} | {ratio:.1f}x | {acc:.2%} | "
                  f"{tuned if isinstance(tuned, str) else f'{tuned:.2%}'} |", flush=True)
    print("\n| float32 rank | factor format | rank at equal bytes | bytes | weight rel. error "
          "| acc |")
    print("|---|---|---|---|---|---|")
    for r, fmt, rank, nbytes, err, acc in compensation_rows(dense, test,
                                                            (8,) if args.quick else (4, 16)):
        print(f"| {r} | {fmt} | {rank} | {nbytes} | {err:.4f} | {acc:.2%} |", flush=True)
    print(f"\n{epochs} epochs of training, {time.perf_counter() - start:.0f} s in all")


if __name__ == "__main__":
    main()
