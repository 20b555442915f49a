"""The benchmark workloads, written once for both frameworks.

Every model is plain ``nn.Module`` + ``nn.Parameter`` + ``nn.functional`` code over a module
``m`` that is either ``torch`` or ``tensorix`` (their APIs agree on everything used here), so
the two sides run literally the same program. The torch side initialises the weights with
``torch.nn.init`` as ``torch.nn.Linear``/``Conv2d``/``Embedding``/``LayerNorm`` do; the
tensorix side loads those weights (``state_dict`` through NumPy), and both train on the same
NumPy-generated batches, so their first two losses must agree.

``build(m, name, weights)`` returns a :class:`Workload`: ``step()`` is one timed iteration,
``losses`` the first two training losses (training cases only), ``per_call`` how many timed
operations one ``step()`` holds (10,000 for the per-op case, whose unit is us per op).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

SEED = 1234

# name -> (title, kind); kind "train" cases report losses, "op" cases report us per op
CASES = {
    "matmul_1024": "matmul 1024x1024 @ 1024x1024",
    "matmul_256": "matmul 256x256 @ 256x256",
    "gelu_fwd": "gelu_tanh(x*1.5+0.3), 4M floats, forward",
    "gelu_fwd_bwd": "gelu_tanh(x*1.5+0.3), 4M floats, forward + backward of sum",
    "mlp_step": "MLP 784-512-256-10, batch 128, SGD momentum: train step",
    "cnn_step": "CNN 2x(conv3x3, relu, maxpool2) + linear, batch 32, Adam: train step",
    "gpt_step": "GPT 2 layers, d=128, 4 heads, T=64, batch 16, AdamW: train step",
    "einsum_bmm": "einsum 'bij,bjk->bik' (64 x 128^3)",
    "einsum_chain": "einsum 'ij,jk,kl->il' (512^3)",
    "add_overhead": "tiny a + b, requires_grad (per op)",
    "add_overhead_no_grad": "tiny a + b, no_grad (per op)",
    "gelu_exact_fwd": "gelu (exact, erf), 4M floats, forward",
    "lstm_step": "char LSTM LM, width 256, batch 32, seq 64, Adam: train step",
    "gru_step": "char GRU LM, width 256, batch 32, seq 64, Adam: train step",
    "mlp_small_step": "MLP 64-64-10, batch 32, SGD momentum: train step",
}
TRAIN = ("mlp_step", "cnn_step", "gpt_step", "lstm_step", "gru_step", "mlp_small_step")
OPS_PER_CALL = 10_000  # add_overhead: one timed call is this many ``a + b``


@dataclass
class Workload:
    step: object
    losses: list = field(default_factory=list)
    per_call: int = 1


def _rng(tag):
    return np.random.default_rng([SEED, sum(map(ord, tag))])


def _f32(rng, *shape):
    return rng.standard_normal(shape, dtype=np.float32)


# -- models ----------------------------------------------------------------------------------

def _param(m, *shape):
    return m.nn.Parameter(m.zeros(*shape))


def _models(m):
    """The three models over framework ``m`` (classes are made per framework). Parameter
    names end in ``w`` (weight) or ``b`` (its bias), which ``torch_init`` relies on."""
    F = m.nn.functional

    class MLP(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.l1w, self.l1b = _param(m, 512, 784), _param(m, 512)
            self.l2w, self.l2b = _param(m, 256, 512), _param(m, 256)
            self.l3w, self.l3b = _param(m, 10, 256), _param(m, 10)

        def forward(self, x):
            x = F.relu(F.linear(x, self.l1w, self.l1b))
            x = F.relu(F.linear(x, self.l2w, self.l2b))
            return F.linear(x, self.l3w, self.l3b)

    class CNN(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1w, self.c1b = _param(m, 16, 1, 3, 3), _param(m, 16)
            self.c2w, self.c2b = _param(m, 32, 16, 3, 3), _param(m, 32)
            self.fw, self.fb = _param(m, 10, 1568), _param(m, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(F.conv2d(x, self.c1w, self.c1b, padding=1)), 2)
            x = F.max_pool2d(F.relu(F.conv2d(x, self.c2w, self.c2b, padding=1)), 2)
            return F.linear(x.reshape(x.shape[0], -1), self.fw, self.fb)

    class Block(m.nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.ln1w, self.ln1b = _param(m, d), _param(m, d)
            self.qkvw, self.qkvb = _param(m, 3 * d, d), _param(m, 3 * d)
            self.projw, self.projb = _param(m, d, d), _param(m, d)
            self.ln2w, self.ln2b = _param(m, d), _param(m, d)
            self.fcw, self.fcb = _param(m, 4 * d, d), _param(m, 4 * d)
            self.fc2w, self.fc2b = _param(m, d, 4 * d), _param(m, d)

        def forward(self, x):
            b, t, d = x.shape
            h = F.layer_norm(x, (d,), self.ln1w, self.ln1b)
            q, k, v = F.linear(h, self.qkvw, self.qkvb).split(d, dim=2)
            q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)
                       for z in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + F.linear(a.transpose(1, 2).reshape(b, t, d), self.projw, self.projb)
            h = F.layer_norm(x, (d,), self.ln2w, self.ln2b)
            h = F.gelu(F.linear(h, self.fcw, self.fcb), approximate="tanh")
            return x + F.linear(h, self.fc2w, self.fc2b)

    class GPT(m.nn.Module):
        def __init__(self, vocab=65, ctx=64, d=128, heads=4, layers=2):
            super().__init__()
            self.wte, self.wpe = _param(m, vocab, d), _param(m, ctx, d)
            self.blocks = m.nn.ModuleList([Block(d, heads) for _ in range(layers)])
            self.lnfw, self.lnfb = _param(m, d), _param(m, d)
            self.headw, self.headb = _param(m, vocab, d), _param(m, vocab)

        def forward(self, idx):
            t = idx.shape[1]
            x = F.embedding(idx, self.wte) + F.embedding(m.arange(t), self.wpe)
            for blk in self.blocks:
                x = blk(x)
            x = F.layer_norm(x, (x.shape[-1],), self.lnfw, self.lnfb)
            return F.linear(x, self.headw, self.headb)

    class SmallMLP(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.l1w, self.l1b = _param(m, 64, 64), _param(m, 64)
            self.l2w, self.l2b = _param(m, 10, 64), _param(m, 10)

        def forward(self, x):
            return F.linear(F.relu(F.linear(x, self.l1w, self.l1b)), self.l2w, self.l2b)

    class CharRNN(m.nn.Module):
        """Embedding, one recurrent layer (the framework's own nn.LSTM / nn.GRU, whose
        parameters keep torch's default init), linear head."""

        def __init__(self, kind, vocab=65, d=256):
            super().__init__()
            self.embw = _param(m, vocab, d)
            self.rnn = getattr(m.nn, kind)(d, d, batch_first=True)
            self.headw, self.headb = _param(m, vocab, d), _param(m, vocab)

        def forward(self, idx):
            y, _ = self.rnn(F.embedding(idx, self.embw))
            return F.linear(y, self.headw, self.headb)

    return {"mlp_step": MLP, "cnn_step": CNN, "gpt_step": GPT, "mlp_small_step": SmallMLP,
            "lstm_step": lambda: CharRNN("LSTM"), "gru_step": lambda: CharRNN("GRU")}


def torch_init(model):
    """PyTorch's default initialisation of the layers these parameters stand for."""
    import torch

    for name, p in model.named_parameters():
        leaf = name.rsplit(".", 1)[-1]
        if leaf.startswith(("weight_", "bias_")):  # nn.LSTM / nn.GRU: their own init
            continue
        if leaf in ("wte", "wpe", "embw"):
            torch.nn.init.normal_(p)  # nn.Embedding
        elif leaf.startswith("ln") and leaf.endswith("w"):
            torch.nn.init.ones_(p)  # nn.LayerNorm
        elif leaf.startswith("ln") and leaf.endswith("b"):
            torch.nn.init.zeros_(p)
        elif p.ndim >= 2:  # nn.Linear / nn.Conv2d weight
            torch.nn.init.kaiming_uniform_(p, a=math.sqrt(5))
        else:  # their bias: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with the weight's fan_in
            w = dict(model.named_parameters())[name[:-1] + "w"]
            bound = 1 / math.sqrt(w[0].numel())
            torch.nn.init.uniform_(p, -bound, bound)


def _batches(name):
    """Two NumPy batches (inputs, int64 targets) of a training case."""
    rng = _rng(name)
    out = []
    for _ in range(2):
        if name == "mlp_step":
            out.append((_f32(rng, 128, 784), rng.integers(0, 10, 128)))
        elif name == "cnn_step":
            out.append((_f32(rng, 32, 1, 28, 28), rng.integers(0, 10, 32)))
        elif name == "mlp_small_step":
            out.append((_f32(rng, 32, 64), rng.integers(0, 10, 32)))
        else:  # language models: GPT batch 16, the recurrent ones 32; 64 steps each
            tok = rng.integers(0, 65, (16 if name == "gpt_step" else 32, 65))
            out.append((tok[:, :-1].copy(), tok[:, 1:].copy()))
    return out


def _optimizer(m, name, params):
    if name in ("mlp_step", "mlp_small_step"):
        return m.optim.SGD(params, lr=0.01, momentum=0.9)
    if name in ("cnn_step", "lstm_step", "gru_step"):
        return m.optim.Adam(params, lr=1e-3)
    return m.optim.AdamW(params, lr=1e-3)


def _train(m, name, weights):
    """A training step closure; ``weights`` None means "initialise (torch) and return them"."""
    F = m.nn.functional
    if weights is None:
        m.manual_seed(SEED)  # before building: nn.LSTM / nn.GRU initialise themselves
    model = _models(m)[name]()
    if weights is None:
        torch_init(model)
    else:
        model.load_state_dict({k: m.from_numpy(v.copy()) for k, v in weights.items()})
    opt = _optimizer(m, name, list(model.parameters()))
    batches = [(m.from_numpy(x), m.from_numpy(y)) for x, y in _batches(name)]

    def step(batch=batches[0]):
        x, y = batch
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    init = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    losses = [float(step(b).item()) for b in batches]  # the first two losses, then timing
    return Workload(step, losses), init


def _gelu(m, backward):
    x = m.from_numpy(_f32(_rng("gelu"), 4 * 1024 * 1024))
    F = m.nn.functional
    if not backward:
        return Workload(lambda: F.gelu(x * 1.5 + 0.3, approximate="tanh"))
    x.requires_grad_(True)

    def step():
        F.gelu(x * 1.5 + 0.3, approximate="tanh").sum().backward()
        x.grad = None

    return Workload(step)


def _overhead(m, grad=True):
    a = m.ones(3, requires_grad=grad)
    b = m.ones(3, requires_grad=grad)
    n = OPS_PER_CALL

    def step():
        for _ in range(n):
            a + b

    if grad:
        return Workload(step, per_call=n)

    def step_no_grad():
        with m.no_grad():
            step()

    return Workload(step_no_grad, per_call=n)


def build(m, name, weights=None):
    """The workload ``name`` over framework ``m``; returns (Workload, initial weights or None).

    Training cases on torch (``weights`` None) initialise the model and return its weights as
    NumPy arrays for the tensorix side to load.
    """
    if name in TRAIN:
        return _train(m, name, weights)
    rng = _rng(name)
    if name.startswith("matmul"):
        n = int(name.split("_")[1])
        a, b = (m.from_numpy(_f32(rng, n, n)) for _ in range(2))
        return Workload(lambda: a @ b), None
    if name == "einsum_bmm":
        a, b = (m.from_numpy(_f32(rng, 64, 128, 128)) for _ in range(2))
        return Workload(lambda: m.einsum("bij,bjk->bik", a, b)), None
    if name == "einsum_chain":
        a, b, c = (m.from_numpy(_f32(rng, 512, 512)) for _ in range(3))
        return Workload(lambda: m.einsum("ij,jk,kl->il", a, b, c)), None
    if name == "gelu_exact_fwd":
        x = m.from_numpy(_f32(_rng("gelu"), 4 * 1024 * 1024))
        return Workload(lambda: m.nn.functional.gelu(x)), None
    if name.startswith("gelu"):
        return _gelu(m, name == "gelu_fwd_bwd"), None
    if name.startswith("add_overhead"):
        return _overhead(m, grad=name == "add_overhead"), None
    raise KeyError(f"unknown benchmark case {name!r}; known: {', '.join(CASES)}")
