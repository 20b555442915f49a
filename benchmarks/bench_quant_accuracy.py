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
    p.add_argument("--val-windows", type=int, default=256)
    p.add_argument("--calib-windows", type=int, default=32)
    p.add_argument("--train-only", action="store_true")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    cfg = _config(args)
    model, vocab, train_text, val_text, seconds = load_or_train(cfg, args.cache_dir)
    if seconds is not None:
        print(f"trained {cfg} in {seconds:.0f} s")
    xv, yv = windows(val_text, vocab, cfg["context"], args.val_windows)
    print(f"fp32 validation perplexity: {perplexity(model, xv, yv):.4f}")
    if args.train_only:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
