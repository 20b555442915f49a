"""nn.init against torch (formulas, bounds, statistics, errors) and every layer's default
initialisation: same distribution as torch's (bounds and moments, not the same numbers)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn
from tensorix.nn import init

from ._util import torch

tnn = torch.nn


@pytest.mark.parametrize("name,param", [("linear", None), ("conv2d", None), ("sigmoid", None),
                                        ("tanh", None), ("relu", None), ("leaky_relu", None),
                                        ("leaky_relu", 0.2), ("selu", None)])
def test_calculate_gain(name, param):
    assert init.calculate_gain(name, param) == pytest.approx(tnn.init.calculate_gain(name,
                                                                                    param))


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="negative_slope x not a valid number"):
        init.calculate_gain("leaky_relu", "x")


def _gen(seed=0):
    return tx.Generator().manual_seed(seed)


def test_uniform_normal_constant():
    w = tx.empty(200, 300)
    init.uniform_(w, -0.5, 2.0, generator=_gen())
    a = w.numpy()
    assert a.min() >= -0.5 and a.max() < 2.0 and abs(a.mean() - 0.75) < 0.01
    init.normal_(w, 1.0, 0.5, generator=_gen())
    assert abs(w.numpy().mean() - 1) < 0.01 and abs(w.numpy().std() - 0.5) < 0.01
    init.constant_(w, 3.0)
    assert (w.numpy() == 3).all()
    init.zeros_(w)
    assert not w.numpy().any()
    init.ones_(w)
    assert (w.numpy() == 1).all()


def test_generator_reproducible():
    a, b = tx.empty(10, 10), tx.empty(10, 10)
    init.kaiming_normal_(a, generator=_gen(3))
    init.kaiming_normal_(b, generator=_gen(3))
    assert np.array_equal(a.numpy(), b.numpy())


def test_trunc_normal():
    w = tx.empty(150, 150)
    init.trunc_normal_(w, mean=0.5, std=1.0, a=-1.0, b=1.5, generator=_gen())
    a = w.numpy()
    t = torch.empty(150, 150)
    tnn.init.trunc_normal_(t, mean=0.5, std=1.0, a=-1.0, b=1.5)
    assert a.min() >= -1.0 and a.max() <= 1.5
    assert abs(a.mean() - t.numpy().mean()) < 0.02 and abs(a.std() - t.numpy().std()) < 0.02


@pytest.mark.parametrize("fn", ["xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
                                "kaiming_normal_"])
@pytest.mark.parametrize("shape", [(300, 200), (64, 16, 3, 3)])
def test_fan_based_inits_match_torch_statistics(fn, shape):
    w = tx.empty(*shape)
    t = torch.empty(*shape)
    kw = dict(gain=2.0) if fn.startswith("xavier") else dict(a=0.1, mode="fan_out",
                                                           nonlinearity="leaky_relu")
    getattr(init, fn)(w, generator=_gen(), **kw)
    getattr(tnn.init, fn)(t, **kw)
    a, b = w.numpy(), t.numpy()
    assert abs(a.std() - b.std()) / b.std() < 0.03
    if fn.endswith("uniform_"):
        assert abs(np.abs(a).max() - np.abs(b).max()) / np.abs(b).max() < 0.01


def test_fan_errors():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(tx.empty(5))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(tx.empty(3, 4), mode="fan_avg")
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(tx.empty(0, 3))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(tx.empty(2, 2, 2))


def test_eye_dirac_orthogonal_sparse():
    w = tx.empty(3, 5)
    init.eye_(w)
    assert np.array_equal(w.numpy(), np.eye(3, 5))
    c = tx.empty(4, 2, 3, 3)
    t = torch.empty(4, 2, 3, 3)
    init.dirac_(c, groups=2)
    tnn.init.dirac_(t, groups=2)
    assert np.array_equal(c.numpy(), t.numpy())
    for shape in [(6, 4), (4, 6), (3, 2, 2)]:
        q = tx.empty(*shape)
        init.orthogonal_(q, gain=2.0, generator=_gen())
        m = q.numpy().reshape(shape[0], -1)
        small = min(m.shape)
        gram = m @ m.T if m.shape[0] == small else m.T @ m
        np.testing.assert_allclose(gram, 4 * np.eye(small), atol=1e-5)
    s = tx.empty(10, 4)
    init.sparse_(s, 0.3, generator=_gen())
    assert ((s.numpy() == 0).sum(0) >= 3).all()


def test_init_on_parameter_keeps_leaf_and_no_graph():
    lin = nn.Linear(3, 4)
    out = init.normal_(lin.weight)
    assert out is lin.weight and lin.weight.is_leaf and lin.weight.requires_grad
    assert lin.weight.grad_fn is None


def _bound_stats(make_ours, make_theirs, names, samples=3000):
    """The named parameters' values over fresh instances, at least ``samples`` of each."""
    ours = {n: [] for n in names}
    theirs = {n: [] for n in names}
    while min(sum(v.size for v in ours[n]) for n in names) < samples:
        a, b = make_ours(), make_theirs()
        pa, pb = dict(a.named_parameters()), dict(b.named_parameters())
        for n in names:
            ours[n].append(pa[n].detach().numpy().ravel())
            theirs[n].append(pb[n].detach().numpy().ravel())
    return ({n: np.concatenate(v) for n, v in ours.items()},
            {n: np.concatenate(v) for n, v in theirs.items()})


DEFAULTS = [
    ("Linear", (64, 32), {}, ["weight", "bias"]),
    ("Bilinear", (20, 10, 8), {}, ["weight", "bias"]),
    ("Conv2d", (8, 16, 3), {}, ["weight", "bias"]),
    ("Conv1d", (6, 4, 5), dict(groups=2), ["weight", "bias"]),
    ("ConvTranspose2d", (8, 6, 3), {}, ["weight", "bias"]),
    ("Embedding", (100, 16), {}, ["weight"]),
    ("EmbeddingBag", (100, 16), {}, ["weight"]),
    ("LSTM", (8, 16), {}, ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0"]),
    ("GRUCell", (8, 16), {}, ["weight_ih", "bias_hh"]),
    ("MultiheadAttention", (32, 4), {}, ["in_proj_weight", "out_proj.weight"]),
    ("PReLU", (4,), {}, ["weight"]),
]


@pytest.mark.parametrize("name,args,kw,names", DEFAULTS)
def test_default_init_distributions_match_torch(name, args, kw, names):
    ours, theirs = _bound_stats(lambda: getattr(nn, name)(*args, **kw),
                                lambda: getattr(tnn, name)(*args, **kw), names)
    for n in names:
        a, b = ours[n], theirs[n]
        assert a.shape == b.shape, n
        if b.std() == 0:
            assert np.array_equal(np.unique(a), np.unique(b)), n
            continue
        assert abs(a.std() - b.std()) / b.std() < 0.08, n
        assert abs(a.mean() - b.mean()) < 0.15 * b.std(), n
        if name not in ("Embedding", "EmbeddingBag"):  # uniform: same bound
            assert np.abs(a).max() <= np.abs(b).max() * 1.02 + 1e-7, n
            assert np.abs(a).max() >= np.abs(b).max() * 0.9, n


@pytest.mark.parametrize("name,args,kw", [("BatchNorm2d", (5,), {}), ("LayerNorm", (5,), {}),
                                          ("GroupNorm", (1, 5), {}), ("RMSNorm", (5,), {}),
                                          ("InstanceNorm1d", (5,), dict(affine=True,
                                                                        track_running_stats=True)),
                                          ("Embedding", (6, 3), dict(padding_idx=4)),
                                          ("MultiheadAttention", (8, 2),
                                           dict(add_bias_kv=True))])
def test_deterministic_parts_of_default_init(name, args, kw):
    a, b = getattr(nn, name)(*args, **kw), getattr(tnn, name)(*args, **kw)
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for k in sb:
        x, y = sa[k].numpy(), sb[k].numpy()
        assert x.shape == y.shape and x.dtype == y.dtype, k
        if np.unique(y).size <= 1 or k.endswith("bias") and name == "MultiheadAttention":
            assert np.array_equal(x, y) or k.startswith("bias_"), k
    if name == "Embedding":
        assert not sa["weight"].numpy()[4].any()


def test_default_dtype_and_factory_kwargs():
    lin = nn.Linear(3, 4, dtype=tx.float64)
    assert lin.weight.dtype is tx.float64 and lin.bias.dtype is tx.float64
    assert nn.Conv2d(2, 3, 3).weight.dtype is tx.float32
    assert nn.BatchNorm1d(3).num_batches_tracked.dtype is tx.int64


def test_kaiming_sqrt5_bound_is_one_over_sqrt_fan_in():
    w = nn.Linear(100, 500).weight.detach().numpy()
    assert np.abs(w).max() <= 1 / math.sqrt(100) and np.abs(w).max() > 0.99 / math.sqrt(100)
