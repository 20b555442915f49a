"""Every layer against torch with identical weights (torch's state_dict loaded into ours):
outputs, input gradients and parameter gradients; reprs equal torch's."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn

from ._util import compare_modules, copy_module, torch

tnn = torch.nn


def _build(spec):
    name, args, kwargs = spec[0], spec[1], spec[2] if len(spec) > 2 else {}
    torch.manual_seed(0)
    theirs = getattr(tnn, name)(*args, **kwargs).double()
    ours = getattr(nn, name)(*args, **kwargs).double()
    return copy_module(ours, theirs), theirs


LAYERS = [
    (("Linear", (4, 3)), [(2, 5, 4)]),
    (("Linear", (4, 3), dict(bias=False)), [(6, 4)]),
    (("Bilinear", (3, 2, 4)), [(5, 3), (5, 2)]),
    (("Identity", (1, 2)), [(3, 2)]),
    (("Flatten", ()), [(2, 3, 4, 5)]),
    (("Flatten", (0, 2)), [(2, 3, 4, 5)]),
    (("Unflatten", (1, (2, 3))), [(4, 6, 2)]),
    (("Conv1d", (4, 6, 3), dict(stride=2, padding=1, groups=2)), [(2, 4, 9)]),
    (("Conv1d", (2, 3, 4), dict(padding="same", padding_mode="circular")), [(2, 2, 7)]),
    (("Conv2d", (3, 4, 3), dict(padding=1, padding_mode="reflect")), [(2, 3, 5, 6)]),
    (("Conv2d", (3, 4, (2, 3)), dict(padding=(1, 2), padding_mode="replicate", stride=2)),
     [(2, 3, 5, 6)]),
    (("Conv2d", (2, 4, 3), dict(dilation=2, bias=False)), [(1, 2, 7, 7)]),
    (("Conv3d", (2, 3, 2), dict(padding=1)), [(1, 2, 3, 4, 3)]),
    (("ConvTranspose1d", (3, 2, 3), dict(stride=2, output_padding=1)), [(2, 3, 5)]),
    (("ConvTranspose2d", (4, 2, 3), dict(stride=2, padding=1, groups=2)), [(2, 4, 3, 3)]),
    (("ConvTranspose3d", (2, 2, 2), dict(stride=2)), [(1, 2, 2, 2, 2)]),
    (("MaxPool1d", (3, 2)), [(2, 3, 9)]),
    (("MaxPool2d", (2,)), [(2, 3, 6, 6)]),
    (("MaxPool2d", (3, 2, 1), dict(ceil_mode=True)), [(1, 2, 7, 8)]),
    (("AvgPool1d", (3,)), [(2, 3, 9)]),
    (("AvgPool2d", (3, 2, 1), dict(count_include_pad=False)), [(2, 3, 7, 6)]),
    (("AdaptiveAvgPool1d", (4,)), [(2, 3, 10)]),
    (("AdaptiveAvgPool2d", ((1, 1),)), [(2, 3, 5, 4)]),
    (("AdaptiveAvgPool2d", (3,)), [(2, 3, 7, 5)]),
    (("AdaptiveMaxPool2d", ((2, 3),)), [(2, 3, 7, 5)]),
    (("LPPool2d", (2, 2)), [(1, 2, 4, 4)]),
    (("BatchNorm1d", (3,)), [(5, 3)]),
    (("BatchNorm1d", (3,), dict(affine=False)), [(5, 3, 4)]),
    (("BatchNorm2d", (3,), dict(momentum=None)), [(4, 3, 2, 2)]),
    (("BatchNorm3d", (2,)), [(2, 2, 2, 2, 2)]),
    (("InstanceNorm1d", (3,), dict(affine=True)), [(2, 3, 5)]),
    (("InstanceNorm2d", (3,)), [(2, 3, 4, 4)]),
    (("InstanceNorm2d", (3,), dict(affine=True, track_running_stats=True)), [(3, 4, 4)]),
    (("LayerNorm", (5,)), [(2, 3, 5)]),
    (("LayerNorm", ((3, 5),), dict(bias=False)), [(2, 3, 5)]),
    (("GroupNorm", (2, 4)), [(2, 4, 3)]),
    (("RMSNorm", (5,)), [(2, 3, 5)]),
    (("RMSNorm", ((3, 5),), dict(eps=1e-3, elementwise_affine=False)), [(2, 3, 5)]),
    (("LocalResponseNorm", (3,)), [(2, 5, 3, 3)]),
    (("Upsample", (), dict(scale_factor=2, mode="nearest")), [(1, 2, 3, 3)]),
    (("Upsample", (), dict(size=(5, 4), mode="bilinear", align_corners=True)), [(1, 2, 3, 3)]),
    (("Upsample", (), dict(scale_factor=1.5, mode="bilinear")), [(1, 2, 4, 3)]),
    (("PixelShuffle", (2,)), [(1, 8, 2, 3)]),
    (("PixelUnshuffle", (2,)), [(1, 2, 4, 6)]),
    (("ZeroPad2d", ((1, 2, 0, 1),)), [(1, 2, 3, 3)]),
    (("ConstantPad1d", (2, 3.5)), [(1, 2, 3)]),
    (("ReflectionPad2d", (1,)), [(1, 2, 3, 3)]),
    (("ReplicationPad1d", ((2, 1),)), [(1, 2, 3)]),
    (("CircularPad2d", (1,)), [(1, 2, 3, 3)]),
    (("CosineSimilarity", ()), [(4, 5), (4, 5)]),
    (("PairwiseDistance", (1.0,)), [(4, 5), (4, 5)]),
    (("Fold", ((4, 5), 2)), [(2, 12, 12)]),
    (("Unfold", (2,), dict(padding=1)), [(2, 3, 4, 4)]),
]

ACTIVATIONS = [("ReLU", ()), ("ReLU6", ()), ("LeakyReLU", (0.2,)), ("PReLU", ()),
               ("PReLU", (3, 0.1)), ("ELU", (0.5,)), ("SELU", ()), ("CELU", (1.3,)),
               ("GELU", ()), ("GELU", ("tanh",)), ("SiLU", ()), ("Mish", ()),
               ("Hardswish", ()), ("Hardsigmoid", ()), ("Hardtanh", (-0.5, 0.7)),
               ("Sigmoid", ()), ("Tanh", ()), ("Softplus", (2.0, 1.0)), ("Softsign", ()),
               ("Tanhshrink", ()), ("LogSigmoid", ()), ("Hardshrink", (0.3,)), ("GLU", (-1,)),
               ("Softshrink", (0.3,)), ("Threshold", (0.1, -1.0)),
               ("Softmax", (1,)), ("Softmin", (-1,)), ("LogSoftmax", (1,)), ("Softmax2d", ()),
               ("RReLU", ())]


def _inputs(shapes, rng):
    return [rng.standard_normal(s) * 2 for s in shapes]


@pytest.mark.parametrize("spec,shapes", LAYERS, ids=[s[0][0] + str(i) for i, s in
                                                    enumerate(LAYERS)])
def test_layer_matches_torch(spec, shapes):
    ours, theirs = _build(spec)
    compare_modules(ours, theirs, _inputs(shapes, np.random.default_rng(0)))
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())


@pytest.mark.parametrize("name,args", ACTIVATIONS)
def test_activation_layers(name, args):
    ours, theirs = _build((name, args))
    ours.eval(), theirs.eval()
    compare_modules(ours, theirs, _inputs([(2, 3, 4, 4)], np.random.default_rng(1)))
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name,args", [("ReLU", (True,)), ("LeakyReLU", (0.1, True)),
                                       ("ELU", (1.0, True)), ("Hardtanh", (-2, 2, True)),
                                       ("SiLU", (True,)), ("Threshold", (0.5, 0.0, True))])
def test_inplace_activation_layers(name, args):
    ours, theirs = _build((name, args))
    x = np.random.default_rng(2).standard_normal((3, 4))
    a, b = tx.tensor(x), torch.tensor(x)
    out = ours(a)
    theirs(b)
    assert out is a or np.shares_memory(out.numpy(), a.numpy())
    np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-12)
    assert repr(ours) == repr(theirs)


LOSSES = [
    ("L1Loss", (), "reg"), ("MSELoss", (), "reg"), ("MSELoss", (None, None, "sum"), "reg"),
    ("SmoothL1Loss", (None, None, "mean", 0.5), "reg"), ("HuberLoss", ("sum", 0.7), "reg"),
    ("SoftMarginLoss", (), "sign"), ("BCELoss", (), "prob"),
    ("BCEWithLogitsLoss", (), "prob"), ("KLDivLoss", (None, None, "batchmean"), "dist"),
    ("KLDivLoss", (None, None, "sum", True), "logdist"),
    ("PoissonNLLLoss", (), "count"), ("MultiLabelSoftMarginLoss", (), "binary"),
    ("HingeEmbeddingLoss", (0.5,), "sign"),
]


def _target(kind, rng, shape):
    if kind == "reg":
        return rng.standard_normal(shape)
    if kind == "sign":
        return np.sign(rng.standard_normal(shape))
    if kind in ("prob", "binary"):
        t = rng.uniform(0, 1, shape)
        return np.round(t) if kind == "binary" else t
    if kind == "count":
        return rng.poisson(2, shape).astype(np.float64)
    d = rng.dirichlet(np.ones(shape[-1]), shape[0])
    return np.log(d) if kind == "logdist" else d


@pytest.mark.parametrize("name,args,kind", LOSSES)
def test_loss_layers(name, args, kind):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5))
    if name == "BCELoss":
        x = rng.uniform(0.05, 0.95, (4, 5))
    if name.startswith("KLDiv"):
        x = np.log(rng.dirichlet(np.ones(5), 4))
    t = _target(kind, rng, (4, 5))
    ours, theirs = getattr(nn, name)(*args), getattr(tnn, name)(*args)
    a = tx.tensor(x, requires_grad=True)
    b = torch.tensor(x, requires_grad=True)
    la, lb = ours(a, tx.tensor(t)), theirs(b, torch.tensor(t))
    np.testing.assert_allclose(la.detach().numpy(), lb.detach().numpy(), rtol=1e-6)
    la.backward(), lb.backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6, atol=1e-12)
    assert repr(ours) == repr(theirs)


def test_weighted_and_index_losses():
    rng = np.random.default_rng(4)
    x, y, w = rng.standard_normal((6, 4)), rng.integers(0, 4, 6), rng.uniform(0.5, 2, 4)
    for name, kw in [("CrossEntropyLoss", dict(label_smoothing=0.1, ignore_index=2)),
                     ("NLLLoss", dict(reduction="sum")), ("MultiMarginLoss", dict(p=2))]:
        ours = getattr(nn, name)(weight=tx.tensor(w), **kw)
        theirs = getattr(tnn, name)(weight=torch.tensor(w), **kw)
        assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
        a, b = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        la, lb = ours(a, tx.tensor(y)), theirs(b, torch.tensor(y))
        np.testing.assert_allclose(la.detach().numpy(), lb.detach().numpy(), rtol=1e-6)
        la.backward(), lb.backward()
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6, atol=1e-12)
    pw = rng.uniform(0.5, 2, 4)
    ours = nn.BCEWithLogitsLoss(pos_weight=tx.tensor(pw))
    theirs = tnn.BCEWithLogitsLoss(pos_weight=torch.tensor(pw))
    t = rng.uniform(size=(6, 4))
    np.testing.assert_allclose(ours(tx.tensor(x), tx.tensor(t)).numpy(),
                               theirs(torch.tensor(x), torch.tensor(t)).numpy(), rtol=1e-6)


def test_pair_and_triplet_loss_layers():
    rng = np.random.default_rng(5)
    a, b, c = (rng.standard_normal((4, 3)) for _ in range(3))
    y = np.array([1.0, -1, -1, 1])
    cases = [("CosineEmbeddingLoss", (0.2,), (a, b, y)), ("MarginRankingLoss", (0.1,),
                                                            (a[:, 0], b[:, 0], y)),
             ("TripletMarginLoss", (0.5, 1.0), (a, b, c)),
             ("TripletMarginWithDistanceLoss", (), (a, b, c))]
    for name, args, inputs in cases:
        ours, theirs = getattr(nn, name)(*args), getattr(tnn, name)(*args)
        np.testing.assert_allclose(ours(*map(tx.tensor, inputs)).numpy(),
                                   theirs(*map(torch.tensor, inputs)).numpy(), rtol=1e-6)
    var = rng.uniform(0.5, 1, (4, 3))
    np.testing.assert_allclose(nn.GaussianNLLLoss(full=True)(*map(tx.tensor, (a, b, var))
                                                            ).numpy(),
                               tnn.GaussianNLLLoss(full=True)(*map(torch.tensor, (a, b, var))
                                                              ).numpy(), rtol=1e-6)


def test_legacy_reduction_flags():
    assert nn.MSELoss(size_average=False).reduction == "sum"
    assert nn.L1Loss(reduce=False).reduction == "none"


def test_embedding_layers():
    ours, theirs = _build(("Embedding", (7, 3), dict(padding_idx=2)))
    idx = np.array([[0, 2, 6], [2, 1, 1]])
    compare_modules(ours, theirs, [idx])
    assert repr(ours) == repr(theirs)
    for kw in (dict(mode="sum"), dict(mode="max", padding_idx=0)):
        ours, theirs = _build(("EmbeddingBag", (7, 3), kw))
        compare_modules(ours, theirs, [np.array([[1, 2, 0], [4, 4, 6]])])
        assert repr(ours) == repr(theirs)
    w = tx.randn(4, 2)
    frozen = nn.Embedding.from_pretrained(w)
    assert not frozen.weight.requires_grad
    assert np.array_equal(frozen(tx.tensor([3])).numpy(), w.numpy()[3:4])


def test_conv_transpose_output_size():
    ours, theirs = _build(("ConvTranspose2d", (2, 3, 3), dict(stride=2, padding=1)))
    x = np.random.default_rng(6).standard_normal((1, 2, 4, 4))
    a = ours(tx.tensor(x), output_size=[8, 8])
    b = theirs(torch.tensor(x), output_size=[8, 8])
    assert tuple(a.shape) == tuple(b.shape) == (1, 3, 8, 8)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-10)
    with pytest.raises(ValueError, match="requested an output size of"):
        ours(tx.tensor(x), output_size=[12, 12])


def test_layer_argument_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="string paddings apply to Conv only"):
        nn.ConvTranspose2d(3, 4, 3, padding="same")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv1d(3, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="expected 4D input \\(got 3D input\\)"):
        nn.BatchNorm2d(3)(tx.randn(2, 3, 4))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(3, 4)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(6, 4)


def test_dropout_layers_train_and_eval():
    x = tx.ones(100, 100)
    for cls in (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.AlphaDropout):
        m = cls(0.4)
        inp = tx.ones(10, 100, 2, 2) if cls is nn.Dropout2d else x
        assert not np.array_equal(m(inp).numpy(), inp.numpy())
        m.eval()
        assert m(inp) is inp
        assert repr(m) == repr(getattr(tnn, cls.__name__)(0.4))


def test_batchnorm_running_stats_follow_torch_over_steps():
    rng = np.random.default_rng(7)
    for momentum in (0.1, None):
        ours, theirs = _build(("BatchNorm2d", (3,), dict(momentum=momentum)))
        for _ in range(4):
            x = rng.standard_normal((4, 3, 2, 2)) * 3 + 1
            compare_modules(ours, theirs, [x])
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            np.testing.assert_allclose(getattr(ours, name).numpy(),
                                       getattr(theirs, name).numpy(), rtol=1e-10)
        ours.eval(), theirs.eval()
        x = rng.standard_normal((2, 3, 2, 2))
        compare_modules(ours, theirs, [x])
        before = ours.running_mean.numpy().copy()
        ours(tx.tensor(x))
        assert np.array_equal(before, ours.running_mean.numpy())  # eval leaves stats alone


def test_batchnorm_without_running_stats_uses_batch_in_eval():
    ours, theirs = _build(("BatchNorm1d", (3,), dict(track_running_stats=False)))
    ours.eval(), theirs.eval()
    compare_modules(ours, theirs, [np.random.default_rng(8).standard_normal((5, 3))])
    assert ours.running_mean is None and "running_mean" not in ours.state_dict()


def test_lazy_linear():
    m = nn.LazyLinear(3)
    out = m(tx.randn(2, 5))
    assert tuple(out.shape) == (2, 3) and tuple(m.weight.shape) == (3, 5)
    assert float(m.weight.abs().max()) <= 1 / math.sqrt(5)
