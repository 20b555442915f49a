"""Validation perplexity of a character GPT under each tensorix.quant method, against fp32.

Trains a GPT (tensorix.demo's ``CharGPT``; 4 layers, d_model 256, context 64 by default) on
the first 90% of the bundled Shakespeare text ONCE and caches the weights under
``--cache-dir`` (default ``benchmarks/.cache``, gitignored); later runs load them. Then it
quantizes a fresh copy of the model with each method, from 32 calibration windows of the
training text, and prints a Markdown table of the perplexity on fixed, non-overlapping
windows of the held-out 10%.

    python benchmarks/bench_quant_accuracy.py                 # train once (cached), table
    python benchmarks/bench_quant_accuracy.py --train-only    # just make the cache
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys
import time

import numpy as np

import tensorix as tx
from tensorix import nn, optim
from tensorix.data import CharDataset, CharVocab, DataLoader, load_text
from tensorix.demo import CharGPT, _lm_loss
from tensorix.nn import functional as F

HERE = pathlib.Path(__file__).resolve().parent


def _config(args) -> dict:
    return {"layers": args.layers, "d_model": args.d_model, "heads": args.heads,
            "context": args.context, "steps": args.steps, "batch": args.batch,
            "lr": args.lr, "seed": 0}


def _cache_path(cache_dir: pathlib.Path, cfg: dict) -> pathlib.Path:
    tag = "gpt_L{layers}_d{d_model}_h{heads}_c{context}_s{steps}_b{batch}".format(**cfg)
    return cache_dir / f"{tag}.safetensors"


def _corpus(context: int):
    text = load_text()
    vocab = CharVocab(text)
    cut = int(0.9 * len(text))
    return vocab, text[:cut], text[cut:]


def _model(cfg: dict, vocab_size: int) -> CharGPT:
    return CharGPT(vocab_size, cfg["context"], d_model=cfg["d_model"], n_heads=cfg["heads"],
                   n_layers=cfg["layers"])


def train(cfg: dict, vocab, train_text: str) -> CharGPT:
    """AdamW with warmup and a cosine schedule, gradient clipping at 1 (the demo's recipe)."""
    tx.manual_seed(cfg["seed"])
    data = CharDataset(train_text, cfg["context"], vocab)
    loader = DataLoader(data, batch_size=cfg["batch"], shuffle=True,
                        generator=tx.Generator().manual_seed(1))
    model = _model(cfg, len(vocab))
    steps = cfg["steps"]
    opt = optim.AdamW(model.parameters(), lr=cfg["lr"], betas=(0.9, 0.99), weight_decay=0.1)
    warmup = max(1, steps // 20)
    sched = optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (
        1.0 + math.cos(math.pi * min(s, steps) / steps)))
    batches, start = iter(loader), time.perf_counter()
    for step in range(steps):
        xb, yb = next(batches)
        loss = _lm_loss(model, xb, yb)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 50 == 0 or step == steps - 1:
            print(f"  step {step:5d}  loss {loss.item():.4f}  "
                  f"{time.perf_counter() - start:7.1f} s", file=sys.stderr, flush=True)
    return model


def load_or_train(cfg: dict, cache_dir: pathlib.Path):
    """The trained model (from the cache when there), the vocabulary and the two texts."""
    vocab, train_text, val_text = _corpus(cfg["context"])
    path = _cache_path(cache_dir, cfg)
    if path.exists():
        model = _model(cfg, len(vocab))
        model.load_state_dict(tx.load(path))
        return model, vocab, train_text, val_text, None
    start = time.perf_counter()
    model = train(cfg, vocab, train_text)
    seconds = time.perf_counter() - start
    cache_dir.mkdir(parents=True, exist_ok=True)
    tx.save(model.state_dict(), path)
    path.with_suffix(".json").write_text(json.dumps({**cfg, "train_seconds": seconds}))
    return model, vocab, train_text, val_text, seconds


def windows(text: str, vocab, context: int, count: int, rng=None):
    """``count`` windows (ids, next ids) of ``context`` characters: non-overlapping from the
    start of ``text`` when ``rng`` is None, else at random offsets drawn from ``rng``."""
    ids = np.asarray(vocab.encode(text), dtype=np.int64)
    if rng is None:
        starts = np.arange(count) * context
    else:
        starts = rng.integers(0, len(ids) - context - 1, size=count)
    x = np.stack([ids[s:s + context] for s in starts])
    y = np.stack([ids[s + 1:s + context + 1] for s in starts])
    return tx.tensor(x), tx.tensor(y)


@tx.no_grad()
def perplexity(model, x, y, batch: int = 64) -> float:
    """exp(mean cross-entropy) over every predicted character of (x, y)."""
    model.eval()
    total, count = 0.0, 0
    for i in range(0, x.shape[0], batch):
        logits = model(x[i:i + batch])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               y[i:i + batch].reshape(-1), reduction="sum")
        total += loss.item()
        count += y[i:i + batch].numel()
    return math.exp(total / count)


def awq_groups(model) -> dict:
    """AutoAWQ's folding pairs for the demo GPT: each block's ln1 -> qkv and ln2 -> mlp.0
    (proj and mlp.2 follow attention and GELU, which take no scale: they stay RTN)."""
    return {f"blocks.{i}.{ln}": [f"blocks.{i}.{lin}"]
            for i in range(len(model.blocks)) for ln, lin in (("ln1", "attn.qkv"),
                                                              ("ln2", "mlp.0"))}


def methods(calibration, skip, head_dim=64):
    """(row name, what it does, function quantizing a model in place) for the table."""
    from tensorix import quant
    from tensorix.quant import QScheme
    from tensorix.quant import methods as qm

    int4 = qm.weight_scheme(4, 128)  # = Int4WeightOnlyConfig(128)'s scheme: RTN's twin

    def keep(module, fqn):  # quantize_'s filter: the Linear layers not skipped
        return type(module) is nn.Linear and not any(fqn == s or fqn.startswith(s + ".")
                                                     for s in skip)
    fp8 = "fp8_e4m3"
    return [
        ("int8 RTN (weight-only, per channel)", "W8A16",
         lambda m: quant.quantize_(m, quant.Int8WeightOnlyConfig(), keep)),
        ("int4 RTN g128", "W4A16",
         lambda m: quant.quantize_(m, quant.Int4WeightOnlyConfig(group_size=128), keep)),
        ("int4 GPTQ g128", "W4A16",
         lambda m: qm.gptq_(m, calibration, int4, skip=skip)),
        ("int4 GPTQ g128 act-order", "W4A16",
         lambda m: qm.gptq_(m, calibration, int4, skip=skip, act_order=True)),
        ("int4 AWQ g128", "W4A16",
         lambda m: qm.awq_(m, calibration, int4, skip=skip)),
        ("int4 AWQ g128 + auto-clip", "W4A16",
         lambda m: qm.awq_(m, calibration, int4, skip=skip, clip=True)),
        ("int4 AWQ g128 folded, packed int4 (rest RTN)", "W4A16",
         lambda m: (qm.awq_fold_(m, calibration, awq_groups(m), int4),
                    quant.quantize_(m, quant.Int4WeightOnlyConfig(group_size=128), keep))),
        ("W8A8 int8 (per-channel W, static per-tensor A)", "W8A8",
         lambda m: qm.smoothquant_(m, calibration, alpha=0.0, skip=skip)),
        ("W8A8 SmoothQuant alpha=0.5", "W8A8",
         lambda m: qm.smoothquant_(m, calibration, alpha=0.5, skip=skip)),
        ("W4A4 g128, no rotation", "W4A4",
         lambda m: qm.w4a4_(m, rotate=False, skip=skip)),
        ("W4A4 g128, Hadamard rotation", "W4A4",
         lambda m: qm.w4a4_(m, rotate=True, skip=skip)),
        ("COMET W4A4 g128 + KV4", "W4A4KV4",
         lambda m: qm.quantize_preset_(m, "comet-w4a4kv4", skip=skip, head_dim=head_dim)),
        ("OdysseyLLM W4A8 (per-channel W4)", "W4A8",
         lambda m: qm.quantize_preset_(m, "odyssey-w4a8", skip=skip)),
        ("FlexQ W6A6 g128", "W6A6",
         lambda m: qm.quantize_preset_(m, "flexq-w6a6", skip=skip)),
        ("FlexQ W6A8 g128", "W6A8",
         lambda m: qm.quantize_preset_(m, "flexq-w6a8", skip=skip)),
        ("COMET W4A4 g128 + KV4, GPTQ weights", "W4A4KV4",
         lambda m: qm.quantize_preset_(m, "comet-w4a4kv4", skip=skip, head_dim=head_dim,
                                       calibration=calibration)),
        ("OdysseyLLM W4A8, GPTQ weights", "W4A8",
         lambda m: qm.quantize_preset_(m, "odyssey-w4a8", skip=skip, calibration=calibration)),
        ("FlexQ W6A6 g128, GPTQ weights", "W6A6",
         lambda m: qm.quantize_preset_(m, "flexq-w6a6", skip=skip, calibration=calibration)),
        ("FlexQ W6A8 g128, GPTQ weights", "W6A8",
         lambda m: qm.quantize_preset_(m, "flexq-w6a8", skip=skip, calibration=calibration)),
        ("fp8 e4m3 (per-channel W, dynamic per-token A)", "W8A8",
         lambda m: qm.quantize_linears_(m, QScheme(dtype=fp8, granularity="per_channel"),
                                        qm.token_scheme(dtype=fp8), skip=skip)),
        ("fp8 e4m3 (per-tensor W, static per-tensor A)", "W8A8",
         lambda m: qm.quantize_linears_(m, QScheme(dtype=fp8), QScheme(dtype=fp8),
                                        calibration=calibration, skip=skip)),
        ("fp6 e3m2 weight-only (per channel)", "W6A16", lambda m: qm.quantize_linears_(
            m, QScheme(dtype="fp6_e3m2", granularity="per_channel"), None, skip=skip)),
        ("MXFP8 (W and A)", "W8A8", lambda m: qm.quantize_linears_(
            m, QScheme(dtype="mxfp8"), QScheme(dtype="mxfp8"), skip=skip)),
        ("MXFP6 (W and A)", "W6A6", lambda m: qm.quantize_linears_(
            m, QScheme(dtype="mxfp6"), QScheme(dtype="mxfp6"), skip=skip)),
        ("MXFP4 (W and A)", "W4A4", lambda m: qm.quantize_linears_(
            m, QScheme(dtype="mxfp4"), QScheme(dtype="mxfp4"), skip=skip)),
        ("MXFP4 weight-only", "W4A16", lambda m: qm.quantize_linears_(
            m, QScheme(dtype="mxfp4"), None, skip=skip)),
    ]


def table(model, calibration, xv, yv, skip, only=None, head_dim=64) -> list:
    """Rows (method, bits, perplexity, change against fp32, seconds to quantize)."""
    import copy

    base = perplexity(model, xv, yv)
    rows = [("fp32", "W32A32", base, 0.0, 0.0)]
    print(f"  fp32: {base:.4f}", file=sys.stderr, flush=True)
    for name, bits, fn in methods(calibration, skip, head_dim):
        if only and not any(o.lower() in name.lower() for o in only):
            continue
        q = copy.deepcopy(model)
        start = time.perf_counter()
        fn(q)
        seconds = time.perf_counter() - start
        ppl = perplexity(q, xv, yv)
        rows.append((name, bits, ppl, ppl / base - 1.0, seconds))
        print(f"  {name}: {ppl:.4f} ({seconds:.1f} s)", file=sys.stderr, flush=True)
    return rows


def format_table(rows) -> str:
    lines = ["| method | bits | val. perplexity | vs fp32 | quantize time |",
             "|---|---|---:|---:|---:|"]
    for name, bits, ppl, rel, seconds in rows:
        lines.append(f"| {name} | {bits} | {ppl:.4f} | {rel:+.2%} | {seconds:.1f} s |")
    return "\n".join(lines)


def orderings(rows) -> list:
    """The papers' claims, checked on this run's rows: (claim, holds)."""
    ppl = {name: p for name, _, p, _, _ in rows}
    rtn4 = ppl["int4 RTN g128"]
    return [
        ("int8 per-channel within 0.5% of fp32",
         ppl["int8 RTN (weight-only, per channel)"] <= 1.005 * ppl["fp32"]),
        ("GPTQ int4 g128 beats RTN int4 g128", ppl["int4 GPTQ g128"] < rtn4),
        ("AWQ int4 g128 beats RTN int4 g128", ppl["int4 AWQ g128"] < rtn4),
        ("SmoothQuant W8A8 beats plain W8A8",
         ppl["W8A8 SmoothQuant alpha=0.5"] < ppl["W8A8 int8 (per-channel W, static per-tensor A)"]),
        ("rotation W4A4 beats W4A4 without rotation",
         ppl["W4A4 g128, Hadamard rotation"] < ppl["W4A4 g128, no rotation"]),
        ("more bits, lower perplexity: FlexQ W6A8 < OdysseyLLM W4A8 < COMET W4A4KV4",
         ppl["FlexQ W6A8 g128"] < ppl["OdysseyLLM W4A8 (per-channel W4)"] <
         ppl["COMET W4A4 g128 + KV4"]),
        ("W6A8 beats W6A6", ppl["FlexQ W6A8 g128"] < ppl["FlexQ W6A6 g128"]),
    ] + [(f"GPTQ weights beat RTN in {name}", ppl[f"{name}, GPTQ weights"] < ppl[rtn])
         for name, rtn in (("COMET W4A4 g128 + KV4", "COMET W4A4 g128 + KV4"),
                           ("OdysseyLLM W4A8", "OdysseyLLM W4A8 (per-channel W4)"),
                           ("FlexQ W6A6 g128", "FlexQ W6A6 g128"),
                           ("FlexQ W6A8 g128", "FlexQ W6A8 g128"))]


def _parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--cache-dir", type=pathlib.Path, default=HERE / ".cache")
    p.add_argument("--val-windows", type=int, default=128)
    p.add_argument("--calib-windows", type=int, default=32)
    p.add_argument("--train-only", action="store_true")
    p.add_argument("--quantize-head", action="store_true",
                   help="quantize the output head too (default: kept in float, as the "
                        "papers do)")
    p.add_argument("--only", nargs="*", help="run only methods whose name contains one of "
                                             "these words")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    cfg = _config(args)
    model, vocab, train_text, val_text, seconds = load_or_train(cfg, args.cache_dir)
    if seconds is not None:
        print(f"trained {cfg} in {seconds:.0f} s")
    xv, yv = windows(val_text, vocab, cfg["context"], args.val_windows)
    if args.train_only:
        print(f"fp32 validation perplexity: {perplexity(model, xv, yv):.4f}")
        return 0
    calibration = list(windows(train_text, vocab, cfg["context"], args.calib_windows,
                               np.random.default_rng(0))[0].split(8))
    skip = () if args.quantize_head else ("head",)
    rows = table(model, calibration, xv, yv, skip, args.only, args.d_model // args.heads)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"\nGPT: {cfg['layers']} layers, d_model {cfg['d_model']}, {cfg['heads']} heads, "
          f"context {cfg['context']}, {n_params:,} parameters, {cfg['steps']} steps; "
          f"perplexity over {xv.numel():,} held-out characters; calibration "
          f"{args.calib_windows} x {cfg['context']} training characters; "
          f"head {'quantized' if args.quantize_head else 'in float'}\n")
    print(format_table(rows))
    if not args.only:
        print()
        for claim, holds in orderings(rows):
            print(f"- {claim}: {'holds' if holds else 'DOES NOT HOLD'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
