"""A small training run used by test_checkpoint.py, importable and runnable as a script:

    python resume_train.py resume CKPT TOTAL_STEPS OUT_JSON

builds everything afresh (from a *different* seed, so that only the checkpoint can make it
match), restores the checkpoint and trains on to TOTAL_STEPS, writing the losses as exact
hex floats. The model: a two-layer MLP with dropout, AdamW with weight decay, a OneCycleLR
schedule cycling beta1, a shuffled DataLoader with its own generator, dropout masks from the
default generator.
"""

import json
import sys

import numpy as np

import tensorix as tx
import tensorix.nn.functional as F
from tensorix import nn
from tensorix.data import DataLoader, TensorDataset
from tensorix.io import load_checkpoint

TOTAL = 30


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Parameter(tx.randn(16, 8) * 0.4)
        self.b1 = nn.Parameter(tx.zeros(16))
        self.w2 = nn.Parameter(tx.randn(3, 16) * 0.4)
        self.b2 = nn.Parameter(tx.zeros(3))

    def forward(self, x):
        h = F.relu(F.linear(x, self.w1, self.b1))
        h = F.dropout(h, p=0.3, training=self.training)
        return F.linear(h, self.w2, self.b2)


def build(seed):
    """Model, optimizer, scheduler, loader and the loader's generator, from ``seed``."""
    tx.manual_seed(seed)
    data = np.random.default_rng(0)  # the data set itself is fixed
    x = data.standard_normal((100, 8)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5).astype(np.int64)
    gen = tx.Generator().manual_seed(seed + 1)
    loader = DataLoader(TensorDataset(tx.tensor(x), tx.tensor(y)), batch_size=16,
                        shuffle=True, generator=gen)
    model = MLP()
    opt = tx.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.05)
    sched = tx.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=TOTAL)
    return model, opt, sched, loader, gen


def batches(loader):
    while True:
        yield from loader


def train(model, opt, sched, loader, start, stop, on_step=None):
    """Steps ``start`` .. ``stop - 1``; returns their losses."""
    losses = []
    stream = batches(loader)
    model.train()
    for step in range(start, stop):
        xb, yb = next(stream)
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step)
    return losses


def resume(ckpt, total):
    model, opt, sched, loader, gen = build(seed=999)  # deliberately different
    info = load_checkpoint(ckpt, model=model, optimizer=opt, scheduler=sched, loader=loader,
                           generators={"loader": gen})
    start = info["step"] + 1
    return train(model, opt, sched, loader, start, total), info


def main(argv):
    if argv[0] != "resume":
        raise SystemExit(f"unknown command {argv[0]!r}")
    ckpt, total, out = argv[1], int(argv[2]), argv[3]
    losses, info = resume(ckpt, total)
    with open(out, "w") as f:
        json.dump({"losses": [v.hex() for v in losses], "extra": info["extra"]}, f)


if __name__ == "__main__":
    main(sys.argv[1:])
