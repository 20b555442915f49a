"""A tabular regression MLP: BatchNorm1d, SiLU, Huber loss, AdamW with OneCycleLR stepped per
batch, a shuffled-free DataLoader, and evaluation under model.eval() / torch.no_grad()."""

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self, d_in=12, hidden=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_in, hidden), nn.BatchNorm1d(hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.SiLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.net(x).squeeze(-1)


def make_model():
    torch.manual_seed(0)
    return MLP()


def make_data():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((320, 12)).astype(np.float32)
    w = rng.standard_normal(12).astype(np.float32)
    y = (np.sin(x @ w) + 0.1 * rng.standard_normal(320)).astype(np.float32)
    return TensorDataset(torch.tensor(x), torch.tensor(y))


def train(model, data, steps):
    loader = DataLoader(data, batch_size=32, shuffle=False, drop_last=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=steps)
    loss_fn = nn.HuberLoss(delta=1.0)
    losses = []
    while len(losses) < steps:
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
            if len(losses) == steps:
                break
        model.eval()
        with torch.no_grad():
            xs, ys = data.tensors
            _ = nn.functional.mse_loss(model(xs), ys).item()
    return losses


if __name__ == "__main__":
    print(train(make_model(), make_data(), 12))
