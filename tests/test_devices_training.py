"""Training steps on every device (``device`` fixture: cpu, and cuda on a GPU or else on the
CuPy stand-in): an MLP, a small CNN and a tiny GPT take the same AdamW steps as on the CPU, and
the stand-in's counters pin the host<->device transfers of one step."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import backend

F = tx.nn.functional


def _np(t):
    return t.detach().cpu().numpy()


class _Block(tx.nn.Module):
    """A pre-norm transformer block: layer norm, causal attention, tanh-GELU MLP."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = tx.nn.LayerNorm(d), tx.nn.LayerNorm(d)
        self.qkv, self.proj = tx.nn.Linear(d, 3 * d), tx.nn.Linear(d, d)
        self.fc, self.fc2 = tx.nn.Linear(d, 4 * d), tx.nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class _GPT(tx.nn.Module):
    def __init__(self, vocab=11, ctx=8, d=16, heads=2, layers=2):
        super().__init__()
        self.wte, self.wpe = tx.nn.Embedding(vocab, d), tx.nn.Embedding(ctx, d)
        self.blocks = tx.nn.ModuleList([_Block(d, heads) for _ in range(layers)])
        self.lnf, self.head = tx.nn.LayerNorm(d), tx.nn.Linear(d, vocab)

    def forward(self, idx):
        pos = tx.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.lnf(x))


def _model(kind):
    tx.manual_seed(0)
    nn = tx.nn
    if kind == "mlp":
        return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(),
                             nn.Linear(16, 5))
    if kind == "cnn":
        return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Conv2d(4, 6, 3), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(6, 5))
    return _GPT()


def _batch(kind):
    rng = np.random.default_rng(7)
    if kind == "mlp":
        return rng.standard_normal((6, 12)).astype(np.float32), rng.integers(0, 5, 6)
    if kind == "cnn":
        return rng.standard_normal((3, 1, 8, 8)).astype(np.float32), rng.integers(0, 5, 3)
    tok = rng.integers(0, 11, (3, 9))
    return tok[:, :-1], tok[:, 1:]


def _train_steps(kind, dev, steps=2):
    """``steps`` AdamW steps (with grad-norm clipping) of a model on ``dev``: the losses, the
    parameters and their gradients, on the host."""
    model = _model(kind).to(dev)
    opt = tx.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    xb, yb = _batch(kind)
    x, y = tx.tensor(xb).to(dev), tx.tensor(yb).to(dev)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        tx.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    return losses, [(_np(p), _np(p.grad)) for p in model.parameters()]


@pytest.mark.parametrize("kind", ["mlp", "cnn", "gpt"])
def test_model_training_steps_match_cpu(device, kind):
    """MLP, a small CNN (conv, batch norm, pooling) and a tiny GPT (embeddings, layer norm,
    causal attention, GELU): forward, backward, clipping and AdamW on the device equal the
    CPU's."""
    ref_losses, ref = _train_steps(kind, "cpu")
    losses, got = _train_steps(kind, device)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-4)
    for (p, g), (rp, rg) in zip(got, ref):
        np.testing.assert_allclose(g, rg, rtol=1e-3, atol=1e-5)
        np.testing.assert_allclose(p, rp, rtol=1e-3, atol=1e-5)


# Host <-> device transfers of one training step (after a first step), counted by the CuPy
# stand-in: the loss's int target check in nll_loss and each embedding's index check are the
# only device-to-host copies left (one each); Python scalars become 0-d device arrays by a
# fill kernel, not a host copy. Measured before the fixes: GPT 22 host-to-device + 6
# device-to-host per step. An upper bound that catches a regression:
_STEP_TRANSFERS = {"mlp": (0, 1), "cnn": (0, 1), "gpt": (0, 3)}  # (h2d, d2h)


@pytest.mark.parametrize("kind", ["mlp", "cnn", "gpt"])
def test_transfers_per_training_step(kind):
    from tensorix import fakecupy

    with backend.fake_cuda():
        model = _model(kind).to("cuda")
        opt = tx.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
        x, y = (tx.tensor(a).to("cuda") for a in _batch(kind))
        for _ in range(2):
            fakecupy.reset_counts()
            opt.zero_grad()
            logits = model(x)
            F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).backward()
            tx.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        n = fakecupy.counts()
    h2d, d2h = _STEP_TRANSFERS[kind]
    assert n["h2d"] <= h2d and n["d2h"] <= d2h and n["sync"] == 0, n


def test_erf_family_on_cuda_needs_no_sync():
    # erf/erfc/erfinv pick one of two series per element: on the CPU by boolean masks, on a GPU by a
    # select over both (a mask costs a device sync each); the values are the CPU's, bit for bit
    from tensorix import fakecupy

    x = np.concatenate([np.linspace(-40, 40, 801), [np.nan, np.inf, -np.inf, 0.0, -0.0]])
    y = np.concatenate([np.linspace(-1.1, 1.1, 801), [np.nan, 1.0, -1.0, 0.0, -0.0]])
    fns = (tx.erf, tx.erfc, tx.erfinv)
    want = [_np(f(tx.tensor(v))) for f, v in zip(fns, (x, x, y))]
    with backend.fake_cuda():
        t = tx.tensor(x, device="cuda").requires_grad_()
        ty = tx.tensor(y, device="cuda")
        fakecupy.reset_counts()
        got = [tx.erf(t), tx.erfc(t), tx.erfinv(ty)]
        F.gelu(t.float()).sum().backward()  # exact GELU: erf forward and backward
        n = fakecupy.counts()
        got = [_np(g) for g in got]
    assert n == {"h2d": 0, "d2h": 0, "sync": 0}, n
    for g, w in zip(got, want):
        assert np.array_equal(g, w, equal_nan=True)
