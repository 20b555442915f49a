"""The main demo: ``tensorix demo`` / ``python -m tensorix.demo`` (``--quick`` for a short run).

Trains three small models end to end with ``tensorix.nn``, ``tensorix.optim`` and
``tensorix.data``, each with a tqdm progress bar showing the loss and the throughput:

1. a CNN on the bundled 8x8 digits, reporting held-out accuracy (target: at least 97%);
2. a character-level GPT (2 layers, d_model 128, causal self-attention) on the bundled
   Shakespeare text, reporting validation loss and printing a sampled continuation;
3. a tiny transformer encoder on the sequence-reversal sanity task, reporting exact-match
   accuracy on fresh sequences.

It ends with a summary table (task, steps, time, final loss, metric). Every run is seeded, so
the numbers repeat from run to run on the same machine.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass

from tqdm import tqdm

import tensorix as tx
from tensorix import nn, optim
from tensorix.data import (
    CharDataset,
    CharVocab,
    DataLoader,
    TensorDataset,
    load_digits,
    load_text,
    random_split,
)
from tensorix.nn import functional as F

__all__ = ["main", "run", "Result", "Plan", "train_digits", "train_char_gpt", "train_reversal",
           "CharGPT", "Reverser", "digits_cnn", "format_summary"]

DIGITS_TARGET = 0.97


@dataclass(frozen=True)
class Plan:
    """How long each task trains: the full demo, or the quick one used by the tests."""

    digits_epochs: int = 12
    gpt_steps: int = 500
    gpt_batch: int = 32
    gpt_sample_chars: int = 300
    reversal_steps: int = 300
    quick: bool = False


QUICK = Plan(digits_epochs=1, gpt_steps=12, gpt_batch=16, gpt_sample_chars=80,
             reversal_steps=40, quick=True)


@dataclass
class Result:
    """One row of the summary table; ``value`` is the headline metric as a number."""

    task: str
    steps: int
    seconds: float
    loss: float
    metric: str
    value: float


class _Progress:
    """A tqdm bar over training steps whose postfix shows the latest loss and the throughput
    in the task's own unit (samples/s or tokens/s) averaged since the start."""

    def __init__(self, desc: str, steps: int, unit: str):
        self.unit, self.items, self.start = unit, 0, time.perf_counter()
        self.bar = tqdm(total=steps, desc=desc, unit="step", mininterval=0.25, leave=True,
                        dynamic_ncols=True, file=sys.stderr)

    def step(self, loss: float, items: int):
        self.items += items
        rate = self.items / max(time.perf_counter() - self.start, 1e-9)
        self.bar.set_postfix({"loss": f"{loss:.4f}", f"{self.unit}/s": f"{rate:,.0f}"},
                             refresh=False)
        self.bar.update()

    def close(self):
        self.bar.close()


def _seeded(seed: int) -> tx.Generator:
    return tx.Generator().manual_seed(seed)


# -- 1. digits CNN ---------------------------------------------------------------------------


def digits_cnn() -> nn.Module:
    """Two 3x3 convolutions and a max pool, then a linear classifier: (N, 1, 8, 8) -> (N, 10)."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2),                                    # (N, 32, 4, 4)
        nn.Flatten(), nn.Dropout(0.1), nn.Linear(32 * 4 * 4, 10),
    )


def _accuracy(model: nn.Module, dataset) -> float:
    model.eval()
    correct = total = 0
    with tx.no_grad():
        for images, labels in DataLoader(dataset, batch_size=512):
            correct += int((model(images).argmax(1) == labels).sum().item())
            total += len(labels)
    model.train()
    return correct / total


def train_digits(plan: Plan) -> Result:
    """Train :func:`digits_cnn` on a seeded 80/20 split of the bundled digits with Adam and
    a one-cycle schedule; report the held-out accuracy."""
    start = time.perf_counter()  # the time reported includes loading and evaluation
    tx.manual_seed(0)
    images, labels = load_digits()
    train_set, test_set = random_split(TensorDataset(images, labels), [0.8, 0.2],
                                       generator=_seeded(0))
    loader = DataLoader(train_set, batch_size=64, shuffle=True, generator=_seeded(1))
    model = digits_cnn()
    steps = plan.digits_epochs * len(loader)
    opt = optim.Adam(model.parameters(), lr=3e-3)
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=steps)
    bar = _Progress("1/3 digits CNN", steps, "samples")
    for _ in range(plan.digits_epochs):
        for xb, yb in loader:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            bar.step(loss.item(), len(yb))
    bar.close()
    acc = _accuracy(model, test_set)
    seconds = time.perf_counter() - start
    print(f"digits CNN: held-out accuracy {acc:.2%} on {len(test_set)} images "
          f"({len(train_set)} for training), {seconds:.1f} s")
    return Result("digits CNN", steps, seconds, loss.item(),
                  f"held-out acc {acc:.2%}", acc)


# -- 2. character-level GPT ------------------------------------------------------------------


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where position t attends to positions <= t."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        # shapes from qkv's output, not x: under tensor parallelism a rank holds n_heads/N
        # heads and, with sequence parallelism, x is 1/N of the sequence
        qkv = self.qkv(x)
        b, t = qkv.shape[:2]
        # (B, T, 3HD) -> three (B, H, T, D) tensors
        q, k, v = qkv.reshape(b, t, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4) \
            .unbind(0)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, self.n_heads * self.head_dim))


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(ln(x)), then x + mlp(ln(x)) with a 4x MLP."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU("tanh"),
                                 nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class CharGPT(nn.Module):
    """A GPT over characters: token + position embeddings, ``n_layers`` blocks, a final
    LayerNorm and a linear head. ``forward(ids (B, T)) -> logits (B, T, vocab_size)``."""

    def __init__(self, vocab_size: int, context: int, d_model: int = 128, n_heads: int = 4,
                 n_layers: int = 2):
        super().__init__()
        self.context = context
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(context, d_model)
        self.blocks = nn.Sequential(*[Block(d_model, n_heads) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)
        for name, p in self.named_parameters():
            # GPT-2's initialisation: small embeddings and weights, zero biases
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.ndim == 2:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, ids):
        x = self.tok_emb(ids) + self.pos_emb(tx.arange(ids.shape[1]))
        return self.head(self.ln_f(self.blocks(x)))

    @tx.no_grad()
    def generate(self, ids, new_tokens: int, temperature: float = 1.0, generator=None):
        """Append ``new_tokens`` sampled tokens to ``ids`` (B, T), feeding back at most
        ``context`` of them; returns (B, T + new_tokens)."""
        for _ in range(new_tokens):
            logits = self(ids[:, -self.context:])[:, -1] / temperature
            nxt = tx.multinomial(F.softmax(logits, -1), 1, generator=generator)
            ids = tx.cat([ids, nxt], 1)
        return ids


def _lm_loss(model, xb, yb):
    logits = model(xb)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), yb.reshape(-1))


def _eval_loss(model, dataset, batches: int, batch_size: int) -> float:
    model.eval()
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, generator=_seeded(2))
    total = 0.0
    with tx.no_grad():
        for i, (xb, yb) in enumerate(loader):
            if i == batches:
                break
            total += _lm_loss(model, xb, yb).item()
    model.train()
    return total / batches


def train_char_gpt(plan: Plan, context: int = 64) -> Result:
    """Train :class:`CharGPT` on the first 90% of the bundled text with AdamW and a cosine
    schedule, report the loss on the last 10%, print a temperature-0.8 sample."""
    start = time.perf_counter()
    tx.manual_seed(0)
    text = load_text()
    vocab = CharVocab(text)
    cut = int(0.9 * len(text))
    train_set = CharDataset(text[:cut], context, vocab)
    val_set = CharDataset(text[cut:], context, vocab)
    loader = DataLoader(train_set, batch_size=plan.gpt_batch, shuffle=True,
                        generator=_seeded(1))
    model = CharGPT(len(vocab), context)
    opt = optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.99), weight_decay=0.1)
    warmup = max(1, plan.gpt_steps // 20)
    sched = optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (
        1.0 + math.cos(math.pi * min(s, plan.gpt_steps) / plan.gpt_steps)))
    bar = _Progress("2/3 char GPT", plan.gpt_steps, "tokens")
    batches = iter(loader)
    for _ in range(plan.gpt_steps):
        xb, yb = next(batches)  # ~480k windows: one pass is far more than any run takes
        loss = _lm_loss(model, xb, yb)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        bar.step(loss.item(), xb.numel())
    bar.close()
    val = _eval_loss(model, val_set, 2 if plan.quick else 16, 64)
    seconds = time.perf_counter() - start
    prompt = "ROMEO.\n"
    ids = model.generate(tx.tensor([vocab.encode(prompt)]), plan.gpt_sample_chars,
                         temperature=0.8, generator=_seeded(3))
    n_params = sum(p.numel() for p in model.parameters())
    print(f"char GPT ({n_params:,} parameters): validation loss {val:.3f} nats/char "
          f"({val / math.log(2):.2f} bits), {seconds:.1f} s. Sample (temperature 0.8):")
    print("-" * 72)
    print(vocab.decode(ids[0]))
    print("-" * 72)
    return Result("char GPT", plan.gpt_steps, seconds, loss.item(),
                  f"val loss {val:.3f} nats/char", val)


# -- 3. sequence reversal --------------------------------------------------------------------


class Reverser(nn.Module):
    """An encoder-only transformer mapping a digit sequence (B, L) to per-position logits
    (B, L, 10) for the reversed sequence; learned positional embeddings tell it where each
    digit sits."""

    def __init__(self, length: int = 8, d_model: int = 64, n_heads: int = 4,
                 n_layers: int = 2):
        super().__init__()
        self.tok_emb = nn.Embedding(10, d_model)
        self.pos_emb = nn.Embedding(length, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, 4 * d_model, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, n_layers)
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, 10)

    def forward(self, seq):
        x = self.tok_emb(seq) + self.pos_emb(tx.arange(seq.shape[1]))
        return self.head(self.ln_f(self.encoder(x)))


def _exact_match(model, length: int, n: int) -> float:
    seq = tx.randint(0, 10, (n, length), generator=_seeded(99))  # not the training stream
    model.eval()
    with tx.no_grad():
        pred = model(seq).argmax(-1)
    model.train()
    return (pred == seq.flip(1)).all(1).float().mean().item()


def train_reversal(plan: Plan, length: int = 8, batch: int = 128) -> Result:
    """Train :class:`Reverser` on fresh random digit sequences each step; report the exact
    match rate (every position right) on 2,000 unseen sequences."""
    tx.manual_seed(0)
    gen = _seeded(1)
    model = Reverser(length)
    opt = optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=plan.reversal_steps)
    start = time.perf_counter()
    bar = _Progress("3/3 reversal", plan.reversal_steps, "samples")
    for _ in range(plan.reversal_steps):
        seq = tx.randint(0, 10, (batch, length), generator=gen)
        loss = F.cross_entropy(model(seq).reshape(-1, 10), seq.flip(1).reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        bar.step(loss.item(), batch)
    bar.close()
    exact = _exact_match(model, length, 2000)
    seconds = time.perf_counter() - start
    print(f"reversal: exact-match accuracy {exact:.2%} on 2,000 unseen sequences of "
          f"{length} digits, {seconds:.1f} s")
    return Result("sequence reversal", plan.reversal_steps, seconds, loss.item(),
                  f"exact match {exact:.2%}", exact)


# -- driver ----------------------------------------------------------------------------------


def format_summary(results: list[Result]) -> str:
    """The closing table, in Markdown so it can be pasted as is."""
    rows = [("task", "steps", "time", "final loss", "metric")]
    rows += [(r.task, str(r.steps), f"{r.seconds:.1f} s", f"{r.loss:.4f}", r.metric)
             for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def run(plan: Plan) -> list[Result]:
    """Run the three tasks in order and print the summary; returns the rows."""
    mode = "quick run (short training; accuracy targets don't apply)" if plan.quick else \
        "full run"
    print(f"tensorix {tx.__version__} demo, {mode}")
    results = []
    for task in (train_digits, train_char_gpt, train_reversal):
        results.append(task(plan))
        print()
    print("Summary")
    print(format_summary(results))
    if not plan.quick:
        met = "met" if results[0].value >= DIGITS_TARGET else "MISSED"
        print(f"digits target (>= {DIGITS_TARGET:.0%} held-out accuracy): {met}")
    return results


def main(argv=None) -> int:
    """Entry point of ``tensorix demo`` and ``python -m tensorix.demo``."""
    parser = argparse.ArgumentParser(
        prog="tensorix demo",
        description="Train a digits CNN, a character-level GPT and a sequence-reversal "
                    "transformer on the bundled data, then print a summary table.")
    parser.add_argument("--quick", action="store_true",
                        help="a short run (about 10-20 s; what the tests use)")
    args = parser.parse_args(argv)
    run(QUICK if args.quick else Plan())
    return 0


if __name__ == "__main__":
    sys.exit(main())
