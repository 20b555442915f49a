"""Module semantics against torch: registration, traversal order, state_dict round trips and
strict-load errors, hooks, modes, dtype conversion, sharing, copying and reprs."""

from __future__ import annotations

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn

from ._util import copy_module, torch

tnn = torch.nn


def _net(lib, nn_lib):
    """The same small network built with torch (``torch``, ``torch.nn``) or tensorix."""

    class Block(nn_lib.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn_lib.Conv2d(2, 3, 3, padding=1)
            self.bn = nn_lib.BatchNorm2d(3)
            self.acts = nn_lib.ModuleList([nn_lib.ReLU(),
                                           nn_lib.Sequential(nn_lib.Identity(), nn_lib.ReLU())])

        def forward(self, x):
            x = self.bn(self.conv(x))
            for a in self.acts:
                x = a(x)
            return x

    class Net(nn_lib.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.heads = nn_lib.ModuleDict({"a": nn_lib.Linear(12, 4), "b": nn_lib.Linear(12, 2)})
            self.scale = nn_lib.Parameter(lib.ones(1))
            self.register_buffer("step", lib.zeros(1))
            self.register_buffer("scratch", lib.zeros(2), persistent=False)

        def forward(self, x):
            h = self.block(x).flatten(1)
            return self.heads["a"](h) * self.scale, self.heads["b"](h)

    return Net()


@pytest.fixture
def pair():
    torch.manual_seed(0)
    theirs = _net(torch, tnn)
    ours = _net(tx, nn)
    copy_module(ours, theirs)
    return ours, theirs


def test_traversal_orders_match_torch(pair):
    ours, theirs = pair
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert "scratch" not in ours.state_dict()
    assert repr(ours).replace("Net", "") == repr(theirs).replace("Net", "")


def test_forward_matches_after_load(pair):
    ours, theirs = pair
    x = np.random.default_rng(0).standard_normal((2, 2, 2, 2)).astype(np.float32)
    for mode in ("train", "eval"):
        getattr(ours, mode)(), getattr(theirs, mode)()
        a, b = ours(tx.tensor(x)), theirs(torch.tensor(x))
        for u, v in zip(a, b):
            np.testing.assert_allclose(u.detach().numpy(), v.detach().numpy(), atol=1e-5)


def test_state_dict_round_trip_and_detached(pair):
    ours, _ = pair
    sd = ours.state_dict()
    assert all(not v.requires_grad for v in sd.values())
    other = _net(tx, nn)
    result = other.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    for k, v in other.state_dict().items():
        assert np.array_equal(v.numpy(), sd[k].numpy()), k
    kept = ours.state_dict(keep_vars=True)
    assert kept["scale"] is ours.scale


def test_strict_load_errors_list_all_keys(pair):
    ours, _ = pair
    sd = ours.state_dict()
    del sd["heads.a.bias"], sd["block.bn.running_var"]
    sd["extra.weight"] = tx.zeros(2)
    with pytest.raises(RuntimeError) as err:
        ours.load_state_dict(sd)
    msg = str(err.value)
    assert 'Missing key(s) in state_dict: "block.bn.running_var", "heads.a.bias".' in msg
    assert 'Unexpected key(s) in state_dict: "extra.weight".' in msg
    result = ours.load_state_dict(sd, strict=False)
    assert sorted(result.missing_keys) == ["block.bn.running_var", "heads.a.bias"]
    assert result.unexpected_keys == ["extra.weight"]
    sd = ours.state_dict()
    sd["heads.a.weight"] = tx.zeros(3, 3)
    with pytest.raises(RuntimeError, match="size mismatch for heads.a.weight: copying a param "
                                           "with shape \\(3, 3\\)"):
        ours.load_state_dict(sd, strict=False)


def test_load_with_assign_takes_the_tensors(pair):
    ours, _ = pair
    sd = {k: v.clone() for k, v in ours.state_dict().items()}
    ours.load_state_dict(sd, assign=True)
    assert ours.heads.a.weight is not sd["heads.a.weight"]  # a Parameter sharing its memory
    assert np.shares_memory(ours.heads.a.weight.detach().numpy(), sd["heads.a.weight"].numpy())
    assert isinstance(ours.heads.a.weight, nn.Parameter) and ours.heads.a.weight.requires_grad
    assert ours.block.bn.running_mean is sd["block.bn.running_mean"]


def test_load_keeps_parameter_identity(pair):
    ours, _ = pair
    w = ours.heads.a.weight
    ours.load_state_dict({k: v * 0 for k, v in ours.state_dict().items()})
    assert ours.heads.a.weight is w and not w.detach().numpy().any()
    assert w.requires_grad and isinstance(w, nn.Parameter)


def test_hooks():
    lin = nn.Linear(3, 2)
    calls = []

    def pre(mod, args):
        calls.append("pre")
        return (args[0] * 2,)

    def post(mod, args, out):
        calls.append("post")
        return out + 1

    h1 = lin.register_forward_pre_hook(pre)
    h2 = lin.register_forward_hook(post)
    x = tx.ones(1, 3)
    expected = (lin.weight @ (x * 2).mT).mT + lin.bias + 1
    np.testing.assert_allclose(lin(x).detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    assert calls == ["pre", "post"]
    h1.remove(), h2.remove()
    np.testing.assert_allclose(lin(x).detach().numpy(),
                               (x @ lin.weight.mT + lin.bias).detach().numpy(), rtol=1e-6)
    assert calls == ["pre", "post"]


def test_hook_options_prepend_kwargs_always_call():
    class Scale(nn.Module):
        def forward(self, x, factor=1.0):
            if factor == 0:
                raise ValueError("zero factor")
            return x * factor

    m = Scale()
    order = []
    m.register_forward_hook(lambda mod, a, out: order.append("first"))
    m.register_forward_hook(lambda mod, a, out: order.append("prepended"), prepend=True)
    m.register_forward_pre_hook(lambda mod, a, kw: (a, {"factor": 3.0}), with_kwargs=True)
    seen = []
    m.register_forward_hook(lambda mod, a, kw, out: seen.append((kw["factor"], out)),
                            with_kwargs=True, always_call=True)
    out = m(tx.ones(2), factor=2.0)
    assert np.allclose(out.numpy(), 3.0) and order == ["prepended", "first"]
    assert seen[-1][0] == 3.0
    m2 = Scale()
    m2.register_forward_hook(lambda mod, a, out: seen.append(("always", out)), always_call=True)
    with pytest.raises(ValueError, match="zero factor"):
        m2(tx.ones(2), factor=0)
    assert seen[-1] == ("always", None)
    m3 = Scale()
    m3.register_forward_pre_hook(lambda mod, a, kw: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match="must return None or a tuple of"):
        m3(tx.ones(2))


def test_train_eval_propagates_and_zero_grad(pair):
    ours, _ = pair
    ours.eval()
    assert all(not m.training for m in ours.modules())
    ours.train()
    assert all(m.training for m in ours.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        ours.train("yes")
    out = ours(tx.randn(2, 2, 2, 2))
    (out[0].sum() + out[1].sum()).backward()
    assert all(p.grad is not None for p in ours.parameters())
    ours.zero_grad()
    assert all(p.grad is None for p in ours.parameters())
    ours.requires_grad_(False)
    assert not any(p.requires_grad for p in ours.parameters())


def test_to_dtype_keeps_identity_and_casts_only_floats(pair):
    ours, _ = pair
    w = ours.heads.a.weight
    ours.to(tx.float64)
    assert ours.heads.a.weight is w and w.dtype is tx.float64
    assert ours.block.bn.running_mean.dtype is tx.float64
    assert ours.block.bn.num_batches_tracked.dtype is tx.int64
    ours.float()
    assert w.dtype is tx.float32
    with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
        ours.to(tx.int32)
    out = ours.double()(tx.randn(1, 2, 2, 2, dtype=tx.float64))
    assert out[0].dtype is tx.float64


def test_shared_parameters_counted_once():
    lin = nn.Linear(4, 4)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    tlin = tnn.Linear(4, 4)
    tseq = tnn.Sequential(tlin, tnn.ReLU(), tlin)
    assert len(list(seq.parameters())) == len(list(tseq.parameters())) == 2
    assert [n for n, _ in seq.named_modules()] == [n for n, _ in tseq.named_modules()]
    assert list(seq.state_dict()) == list(tseq.state_dict())
    emb = nn.Embedding(5, 4)
    head = nn.Linear(4, 5, bias=False)
    head.weight = emb.weight  # weight tying
    model = nn.ModuleList([emb, head])
    assert len(list(model.parameters())) == 1


def test_registration_rules():
    m = nn.Module()
    with pytest.raises(TypeError, match="cannot assign 'Tensor' object to parameter 'w'"):
        m.register_parameter("w", tx.zeros(2))
    with pytest.raises(KeyError, match="buffer name can"):
        m.register_buffer("a.b", tx.zeros(2))
    m.w = nn.Parameter(tx.zeros(2))
    with pytest.raises(TypeError, match="cannot assign 'int' as parameter 'w'"):
        m.w = 3
    m.w = None
    assert list(m.named_parameters()) == []
    m.child = nn.Linear(2, 2)
    assert m.get_submodule("child") is m.child
    assert m.get_parameter("child.bias") is m.child.bias
    with pytest.raises(AttributeError, match="has no attribute 'missing'"):
        _ = m.missing
    del m.child
    assert list(m.children()) == []

    class Early(nn.Module):
        def __init__(self):
            self.x = 1

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_apply_and_reset_parameters_order():
    seen = []
    net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU(), nn.Linear(2, 1)))
    net.apply(lambda m: seen.append(type(m).__name__))
    tseen = []
    tnn.Sequential(tnn.Linear(2, 2), tnn.Sequential(tnn.ReLU(), tnn.Linear(2, 1))).apply(
        lambda m: tseen.append(type(m).__name__))
    assert seen == tseen


def test_deepcopy_and_pickle_keep_parameters():
    net = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    for clone in (copy.deepcopy(net), pickle.loads(pickle.dumps(net))):
        params = list(clone.parameters())
        assert len(params) == 4 and all(isinstance(p, nn.Parameter) for p in params)
        assert all(p is not q for p, q in zip(params, net.parameters()))
        for a, b in zip(clone.state_dict().values(), net.state_dict().values()):
            assert np.array_equal(a.numpy(), b.numpy())


def test_containers():
    seq = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 3)), ("act", nn.ReLU())]))
    assert isinstance(seq[0], nn.Linear) and isinstance(seq[-1], nn.ReLU)
    assert list(seq[:1]._modules) == ["fc"]
    seq.append(nn.Linear(3, 1))
    assert len(seq) == 3
    ml = nn.ModuleList([nn.ReLU()])
    ml.insert(0, nn.Tanh())
    assert [type(m).__name__ for m in ml] == ["Tanh", "ReLU"]
    with pytest.raises(IndexError, match="out of range"):
        ml[5]
    pl = nn.ParameterList([tx.zeros(2), nn.Parameter(tx.ones(3))])
    assert len(list(pl.parameters())) == 2 and all(isinstance(p, nn.Parameter) for p in pl)
    part = pl[1:]                       # a slice is a ParameterList of the same Parameters
    assert isinstance(part, nn.ParameterList) and len(part) == 1 and part[0] is pl[1]
    assert len(pl[::-1]) == 2 and pl[::-1][0] is pl[1] and len(pl[5:]) == 0
    pd = nn.ParameterDict({"a": tx.zeros(1)})
    assert "a" in pd and [n for n, _ in pd.named_parameters()] == ["a"]


def test_module_without_forward():
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(1)
