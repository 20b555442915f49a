"""Evidence (issue 5): the benchmark suite's GPT trained on the bundled text in five formats.

The GPT of ``benchmarks/workloads.py`` (vocabulary of the text, context 64, d_model 128,
4 heads, 2 layers, MLP 4x, pre-LayerNorm, causal attention), batch 16, AdamW, trained from the
same initial weights on the same batches of ``tensorix.data.load_text()`` (four Shakespeare
plays; the last 10 % is held out) under

* ``fp32``: no policy;
* ``bf16 autocast``: ``numerics.POLICIES["bf16"]`` - operands, outputs and gradients bf16;
* ``MXFP8 E4M3 rceil`` / ``floor``: every operand of every matmul in MXFP8 E4M3 (32-element
  blocks along the reduction axis, E8M0 scales by the round-up rule of the MXFP8 pre-training
  recipe or by the OCP round-down rule), float32 accumulation, bf16 outputs; the backward GEMMs
  the same way, the output gradient in MXFP8 E4M3 too, every operand re-quantized along the
  backward GEMM's own reduction axis (as in the MXFP8 recipe);
* ``NVFP4``: ``numerics.POLICIES["nvfp4"]`` - FP4 operands with E4M3 block scales and a float32
  tensor scale, bf16 outputs and gradients.

Every linear layer (QKV, projection, MLP, LM head) is switched to ``numerics.Linear`` by
``numerics.convert_to_policy`` and both attention matmuls go through ``numerics.matmul``, so
the policy rounds them all; weights stay float32 master weights with straight-through
gradients; LayerNorm, softmax and the loss stay float32. Writes a markdown table
(``numerics_gpt_formats.md``), the loss curves (``numerics_gpt_formats.json``) and a plot
(``numerics_gpt_formats.png``, needs matplotlib: ``pip install -e ".[plot]"``, or ``--no-plot``;
the curves of seed 0) to ``--out`` (default ``./out``, under the current directory; the
repository's ``docs/`` holds a published run and is only written when named).

``--ablation`` adds the floor rule with bf16 gradients and with MXFP8 E5M2 gradients (is the
floor rule's gap in the forward or in the gradients?). ``--seeds N`` repeats everything for
seeds 0..N-1 (initial weights and batches) and reports mean +- sd. Run:
``python examples/numerics_gpt_formats.py --seeds 5 --ablation`` (about 20 minutes on 2 CPU
cores; ``--steps``, ``--batch``, ``--only NAME``; ``--tiny --steps 2 --no-plot`` is the smoke
test's run; ``--from-json FILE`` redoes the table and plot from saved results).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import pathlib
import time

import numpy as np

import tensorix as tx
from tensorix import nn
from tensorix import numerics as nx

F = nn.functional
MXFP8 = nx.Policy("mxfp8", acc="fp32", out="bf16", grad="mxfp8")
CONFIGS = {
    "fp32": None,
    "bf16 autocast": nx.POLICIES["bf16"],
    "MXFP8 E4M3 rceil": MXFP8.replace(scale_mode="rceil"),
    "MXFP8 E4M3 floor": MXFP8.replace(scale_mode="floor"),
    "NVFP4": nx.POLICIES["nvfp4"],
}
# --ablation: is the floor rule's gap in the forward or in the gradients?
EXTRA = {"MXFP8 E4M3 floor, bf16 grads": MXFP8.replace(scale_mode="floor", grad="bf16"),
         "MXFP8 E4M3 floor, E5M2 grads": MXFP8.replace(scale_mode="floor", grad="mxfp8_e5m2")}


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in (q, k, v))
        att = nx.matmul(q, k.mT) * (1.0 / math.sqrt(d // self.heads)) + mask
        a = nx.matmul(F.softmax(att, dim=-1), v)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, ctx=64, d=128, heads=4, layers=2):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.lnf, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, idx):
        t = idx.shape[1]
        mask = tx.tensor(np.triu(np.full((t, t), -np.inf, np.float32), 1))
        x = self.wte(idx) + self.wpe(tx.arange(t))
        for blk in self.blocks:
            x = blk(x, mask)
        return self.head(self.lnf(x))


def make_data(args, seed):
    text = tx.data.load_text()
    vocab = tx.data.CharVocab(text)
    ids = np.asarray(vocab.encode(text), np.int64)
    split = int(len(ids) * 0.9)
    train, val = ids[:split], ids[split:]
    rng = np.random.default_rng(seed)

    def batch(src, n):
        off = rng.integers(0, len(src) - args.ctx - 1, n)
        win = np.stack([src[o:o + args.ctx + 1] for o in off])
        return win[:, :-1].copy(), win[:, 1:].copy()

    steps = [batch(train, args.batch) for _ in range(args.steps)]
    evals = [batch(val, args.batch) for _ in range(args.eval_batches)]
    return len(vocab.chars), steps, evals


def loss_of(model, x, y):
    logits = model(tx.tensor(x))
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tx.tensor(y).reshape(-1))


def train(name, policy, init, vocab, steps, evals, args):
    model = GPT(vocab, args.ctx, args.d, args.heads, args.layers)
    model.load_state_dict(init)
    nx.convert_to_policy(model)  # kept for older tensorix: autocast reaches plain layers now
    opt = tx.optim.AdamW(model.parameters(), lr=args.lr)
    losses, t0 = [], time.perf_counter()
    for i, (x, y) in enumerate(steps):
        with nx.autocast(policy or "fp32"):
            loss = loss_of(model, x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
        if args.verbose and (i + 1) % 50 == 0:
            print(f"  {name}: step {i + 1} loss {np.mean(losses[-50:]):.4f}", flush=True)
    ms = (time.perf_counter() - t0) / len(steps) * 1e3
    with tx.no_grad(), nx.autocast(policy or "fp32"):
        val = float(np.mean([loss_of(model, x, y).item() for x, y in evals]))
    return {"losses": losses, "val": val, "ms_per_step": ms}


def _final(losses, args):
    return float(np.mean(losses[-max(1, min(20, args.steps)):]))


def table(results, args):
    """One row per format: losses of the first seed at a few steps, then over all seeds the
    final loss (mean of the last 20 steps), its gap to fp32 (paired per seed: same start, same
    batches) and the held-out loss, as mean +- standard deviation when there are several."""
    ref = results.get("fp32")
    marks = [m for m in (1, 50, 100, 200) if m < args.steps]
    head = " | ".join(f"loss @{m}" for m in marks)
    n = len(next(iter(results.values()))["runs"])
    lines = [f"| format | {head} | final (mean of last {min(20, args.steps)}) | vs fp32 | "
             f"worst seed vs fp32 | held-out loss |", "|---" * (len(marks) + 5) + "|"]

    def pm(v, fmt):
        v = np.asarray(v)
        sd = fmt.replace("+", "").format(v.std(ddof=1)) if n > 1 else ""
        return fmt.format(v.mean()) + (f" +- {sd}" if sd else "")

    for name, r in results.items():
        finals = [_final(run["losses"], args) for run in r["runs"]]
        if ref is None or name == "fp32":
            rel = worst = "-"
        else:
            gaps = [(f / _final(b["losses"], args) - 1) * 100 for f, b in zip(finals, ref["runs"])]
            rel, worst = pm(gaps, "{:+.2f}") + " %", f"{max(gaps):+.2f} %"
        cells = " | ".join(f"{r['runs'][0]['losses'][m - 1]:.3f}" for m in marks)
        vals = [run["val"] for run in r["runs"]]
        lines.append(f"| {name} | {cells} | {pm(finals, '{:.4f}')} | {rel} | {worst} | "
                     f"{pm(vals, '{:.4f}')} |")
    return "\n".join(lines)


def plot(results, path, args):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, dx) = plt.subplots(2, 1, figsize=(8, 7.5), sharex=True,
                                 gridspec_kw={"height_ratios": [3, 2]})
    w = min(10, args.steps)
    ref = np.asarray(results["fp32"]["runs"][0]["losses"]) if "fp32" in results else None
    x = np.arange(w, args.steps + 1)
    for name, r in results.items():
        loss = np.asarray(r["runs"][0]["losses"])
        ax.plot(x, np.convolve(loss, np.ones(w) / w, mode="valid"), label=name, lw=1.3)
        if ref is not None:  # same batches, same start: the per-step gap is low-noise
            gap = np.convolve(loss - ref, np.ones(w) / w, mode="valid")
            dx.plot(x, gap, label=name, lw=1.3)
    ax.set_ylabel(f"training loss (nats/char, {w}-step mean)")
    ax.set_title(f"GPT (d={args.d}, {args.layers} layers, ctx {args.ctx}, batch {args.batch}) "
                 "on load_text()")
    dx.set_ylabel("loss - fp32 loss")
    dx.set_xlabel("step")
    for a in (ax, dx):
        a.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def have_matplotlib():
    return importlib.util.find_spec("matplotlib") is not None


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seeds", type=int, default=1, help="runs per format (seeds 0..N-1: "
                    "initial weights and batches)")
    ap.add_argument("--eval-batches", type=int, default=8)
    ap.add_argument("--only", action="append", choices=list(CONFIGS) + list(EXTRA),
                    help="repeatable")
    ap.add_argument("--ablation", action="store_true", help="also run " + ", ".join(EXTRA))
    ap.add_argument("--tiny", action="store_true", help="d=32, 1 layer, ctx 32 (smoke test)")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--out", default="out", help="output folder (default ./out)")
    ap.add_argument("--from-json", help="redo the table and plot from a saved results file")
    args = ap.parse_args(argv)
    if not args.no_plot and not have_matplotlib():  # say so now, not after 20 minutes
        ap.error("the plot needs matplotlib: pip install -e '.[plot]' (or pass --no-plot)")
    args.ctx, args.d, args.heads, args.layers = (32, 32, 2, 1) if args.tiny else (64, 128, 4, 2)
    return args


def main(argv=None):
    args = parse(argv)
    if args.from_json:
        saved = json.loads(pathlib.Path(args.from_json).read_text())
        for k, v in saved["args"].items():
            setattr(args, k, v)
        return write(saved["results"], args)
    names = args.only or list(CONFIGS) + (list(EXTRA) if args.ablation else [])
    results = {name: {"runs": []} for name in names}
    for seed in range(args.seeds):
        vocab, steps, evals = make_data(args, seed)
        tx.manual_seed(seed)
        init = GPT(vocab, args.ctx, args.d, args.heads, args.layers).state_dict()
        init = {k: v.detach().clone() for k, v in init.items()}
        for name in names:
            run = train(name, {**CONFIGS, **EXTRA}[name], init, vocab, steps, evals, args)
            results[name]["runs"].append(run)
            print(f"seed {seed} {name}: final {_final(run['losses'], args):.4f}, "
                  f"{run['ms_per_step']:.0f} ms/step", flush=True)
    return write(results, args)


def write(results, args):
    md = table(results, args)
    print("\n" + md)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "numerics_gpt_formats.md").write_text(md + "\n")
    (out / "numerics_gpt_formats.json").write_text(json.dumps(
        {"args": {k: v for k, v in vars(args).items() if k not in ("out", "from_json")},
         "results": results}))
    if not args.no_plot:
        plot(results, out / "numerics_gpt_formats.png", args)
    return results


if __name__ == "__main__":
    main()
