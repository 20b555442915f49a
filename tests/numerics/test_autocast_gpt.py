"""A plain nn GPT under numerics.autocast: every GEMM (the linears and attention's two
products) is computed by the policy, through the dispatcher's GEMM hook, with no layer
swapped; its training losses equal those of the same model whose every GEMM calls the
explicit policy functions, and those of the convert_to_policy path."""

import copy
import math

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn, optim
from tensorix import numerics as nx
from tensorix.demo import CharGPT

F = nn.functional
STEPS = 3


def _explicit_forward(model, ids, pol):
    """CharGPT's forward written out, each GEMM an explicit policy call."""
    x = model.tok_emb(ids) + model.pos_emb(tx.arange(ids.shape[1]))
    for blk in model.blocks:
        a = blk.attn
        h = blk.ln1(x)
        b, t, d = h.shape
        q, k, v = nx.linear(h, a.qkv.weight, a.qkv.bias, pol) \
            .reshape(b, t, 3, a.n_heads, d // a.n_heads).permute(2, 0, 3, 1, 4).unbind(0)
        scores = nx.matmul(q * (1.0 / math.sqrt(q.shape[-1])), k.mT, pol)
        keep = tx.ones(t, t, dtype=tx.bool).tril()
        w = F.softmax(tx.where(keep, scores, -math.inf), -1)
        y = nx.matmul(w, v, pol).transpose(1, 2).reshape(b, t, d)
        x = x + nx.linear(y, a.proj.weight, a.proj.bias, pol)
        m1, act, m2 = blk.mlp
        h = act(nx.linear(blk.ln2(x), m1.weight, m1.bias, pol))
        x = x + nx.linear(h, m2.weight, m2.bias, pol)
    return nx.linear(model.ln_f(x), model.head.weight, model.head.bias, pol)


def _train(model, forward, batches):
    opt = optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for xb, yb in batches:
        logits = forward(model, xb)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), yb.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.fixture(scope="module")
def setup():
    tx.manual_seed(0)
    model = CharGPT(vocab_size=13, context=8, d_model=32, n_heads=2, n_layers=1)
    gen = np.random.default_rng(0)
    batches = [(tx.tensor(gen.integers(0, 13, (4, 8))), tx.tensor(gen.integers(0, 13, (4, 8))))
               for _ in range(STEPS)]
    return model, batches


def _under(policy):
    def forward(model, xb):
        with nx.autocast(policy):
            return model(xb)
    return forward


def test_plain_gpt_under_autocast_trains_as_every_gemm_under_the_policy(setup):
    model, batches = setup
    got = _train(copy.deepcopy(model), _under("mxfp8"), batches)
    pol = nx.POLICIES["mxfp8"]
    want = _train(copy.deepcopy(model), lambda m, xb: _explicit_forward(m, xb, pol), batches)
    assert got == want
    fp32 = _train(copy.deepcopy(model), lambda m, xb: m(xb), batches)
    assert got[0] != fp32[0] and all(abs(a - b) < 0.05 for a, b in zip(got, fp32))


def test_convert_to_policy_path_gives_the_same_losses(setup):
    model, batches = setup
    plain = _train(copy.deepcopy(model), _under("mxfp8"), batches)
    converted = nx.convert_to_policy(copy.deepcopy(model))  # layers follow autocast
    assert _train(converted, _under("mxfp8"), batches) == plain
    assert not any(type(m).__module__.startswith("tensorix.numerics")  # no class swapping
                   for m in converted.modules())
