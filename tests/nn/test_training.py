"""End-to-end float32 training against torch: small MLP, CNN, transformer and LSTM models
from identical weights, a few plain-SGD steps on both, the losses must agree step by step."""

from __future__ import annotations

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn

from ._util import copy_module, torch

tnn = torch.nn


def _mlp(lib):
    return lib.Sequential(lib.Linear(12, 16), lib.BatchNorm1d(16), lib.GELU(),
                          lib.Dropout(0.0), lib.Linear(16, 5))


def _cnn(lib):
    return lib.Sequential(lib.Conv2d(1, 4, 3, padding=1), lib.BatchNorm2d(4), lib.ReLU(),
                          lib.MaxPool2d(2), lib.Conv2d(4, 6, 3, padding=1), lib.ReLU(),
                          lib.AdaptiveAvgPool2d(2), lib.Flatten(), lib.Linear(24, 5))


def _transformer(lib):
    class Model(lib.Module):
        def __init__(self):
            super().__init__()
            self.emb = lib.Embedding(11, 16)
            self.enc = lib.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True,
                                                   norm_first=True, activation="gelu")
            self.head = lib.Linear(16, 5)

        def forward(self, x):
            return self.head(self.enc(self.emb(x), is_causal=False).mean(1))

    return Model()


def _lstm(lib):
    class Model(lib.Module):
        def __init__(self):
            super().__init__()
            self.emb = lib.Embedding(11, 8)
            self.rnn = lib.LSTM(8, 12, 2, batch_first=True, bidirectional=True)
            self.head = lib.Linear(24, 5)

        def forward(self, x):
            out, _ = self.rnn(self.emb(x))
            return self.head(out[:, -1])

    return Model()


def _data(kind, rng):
    if kind == "mlp":
        return rng.standard_normal((16, 12)).astype(np.float32)
    if kind == "cnn":
        return rng.standard_normal((8, 1, 8, 8)).astype(np.float32)
    return rng.integers(0, 11, (8, 7))


@pytest.mark.parametrize("kind,build", [("mlp", _mlp), ("cnn", _cnn),
                                        ("transformer", _transformer), ("lstm", _lstm)])
def test_sgd_steps_match_torch(kind, build):
    torch.manual_seed(0)
    theirs = build(tnn)
    ours = copy_module(build(nn), theirs)
    rng = np.random.default_rng(0)
    lr = 0.1
    for step in range(4):
        x, y = _data(kind, rng), rng.integers(0, 5, len(_data(kind, rng)))
        la = nn.functional.cross_entropy(ours(tx.tensor(x)), tx.tensor(y))
        lb = tnn.functional.cross_entropy(theirs(torch.tensor(x)), torch.tensor(y))
        np.testing.assert_allclose(la.item(), lb.item(), rtol=2e-5, err_msg=f"step {step}")
        ours.zero_grad()
        theirs.zero_grad()
        la.backward()
        lb.backward()
        with tx.no_grad():
            for p in ours.parameters():
                p.sub_(p.grad * lr)
        with torch.no_grad():
            for p in theirs.parameters():
                p.sub_(p.grad * lr)
    for (name, a), b in zip(ours.state_dict().items(), theirs.state_dict().values()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
