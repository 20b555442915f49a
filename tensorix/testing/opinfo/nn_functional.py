"""Registry entries for ``tensorix.nn.functional`` (losses, convolutions, pooling,
normalization, attention, embeddings, linear maps): torch's ``nn.functional`` is the oracle for
values and gradients, plus the float64 gradcheck. Activations have their entries in unary.py.

Entries are named ``nn.functional.<name>`` (``op`` and ``torch`` both resolve that path). They
compare with the composites' tolerances (oracle.COMPOSITE_TOLERANCES): a loss or a convolution
is a chain of ops, summed in another order than torch's.
"""

from __future__ import annotations

import numpy as np

from ..oracle import COMPOSITE_TOLERANCES
from ..registry import OpInfo, Sample, exempt, register
from ._samples import away_from, positive, uniform

TOL = {name: COMPOSITE_TOLERANCES[name] for name in ("float32", "float64")}
REDUCTIONS = ("mean", "sum", "none")


def _entry(name, samples, **kw):
    kw.setdefault("tol", TOL)
    return OpInfo(f"nn.functional.{name}", samples, **kw)


def _pair(gen_b=uniform, shape=(3, 4), grad=None, **kw):
    """(input, target) of one shape, each reduction."""
    def samples(rng, dtype):
        return [Sample((uniform(rng, shape), gen_b(rng, shape)), dict(kw, reduction=r),
                       grad=grad) for r in REDUCTIONS]
    return samples


def _probs(rng, shape):
    return rng.uniform(0.05, 0.95, size=shape)


def _signs(rng, shape):
    return np.where(rng.uniform(size=shape) < 0.5, -1.0, 1.0)


def _classes(rng, shape, n):
    return rng.integers(0, n, size=shape).astype(np.int64)


def _log_probs(rng, shape):
    x = uniform(rng, shape)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _nll(rng, dtype):
    return [Sample((_log_probs(rng, (5, 4)), _classes(rng, (5,), 4)), {"reduction": r})
            for r in REDUCTIONS] + [
        Sample((_log_probs(rng, (2, 4, 3)), _classes(rng, (2, 3), 4)), {"ignore_index": 1})]


def _cross_entropy(rng, dtype):
    probs = _probs(rng, (5, 4))
    return [Sample((uniform(rng, (5, 4)), _classes(rng, (5,), 4)), {"reduction": r})
            for r in REDUCTIONS] + [
        Sample((uniform(rng, (5, 4)), _classes(rng, (5,), 4)), {"label_smoothing": 0.1}),
        Sample((uniform(rng, (2, 4, 3)), _classes(rng, (2, 3), 4)), {}),
        Sample((uniform(rng, (5, 4)), probs / probs.sum(-1, keepdims=True)), {}, grad=(0,),
               name="probabilities ")]


def _triple(third, grad=(0, 1), **kw):
    def samples(rng, dtype):
        return [Sample((uniform(rng, (4, 3)), uniform(rng, (4, 3)), third(rng)), dict(kw),
                       grad=grad)]
    return samples


def _margin(rng, dtype):
    return [Sample((uniform(rng, (4, 5)), _classes(rng, (4,), 5)), {"reduction": r})
            for r in REDUCTIONS]


def _multilabel_margin(rng, dtype):
    target = np.full((3, 4), -1, dtype=np.int64)  # class indices, ended by -1
    target[0, :2], target[1, :1], target[2, :3] = [3, 0], [2], [1, 2, 0]
    return [Sample((uniform(rng, (3, 4)), target), {})]


LOSSES = [
    _entry("mse_loss", _pair(), ref=lambda a, b, reduction: _reduce((a - b) ** 2, reduction)),
    _entry("l1_loss", _pair(lambda rng, s: away_from(rng, s, margin=0.3)),
           ref=lambda a, b, reduction: _reduce(np.abs(a - b), reduction)),
    _entry("smooth_l1_loss", _pair(beta=0.5)),
    _entry("huber_loss", _pair(delta=0.7)),
    _entry("soft_margin_loss", _pair(_signs, grad=(0,))),
    _entry("hinge_embedding_loss", _pair(_signs, grad=(0,), margin=0.5)),
    _entry("binary_cross_entropy", lambda rng, dtype: [
        Sample((_probs(rng, (3, 4)), _probs(rng, (3, 4))), {"reduction": r}, grad=(0,))
        for r in REDUCTIONS]),
    _entry("binary_cross_entropy_with_logits", lambda rng, dtype: [
        Sample((uniform(rng, (3, 4)), _probs(rng, (3, 4))), {"reduction": r}, grad=(0,))
        for r in REDUCTIONS] + [Sample((uniform(rng, (3, 4)), _probs(rng, (3, 4))),
                                       {"pos_weight": positive(rng, (4,))}, grad=(0,))]),
    _entry("multilabel_soft_margin_loss", lambda rng, dtype: [
        Sample((uniform(rng, (3, 4)), (rng.uniform(size=(3, 4)) < 0.5).astype(np.float64)),
               {}, grad=(0,))]),
    _entry("kl_div", lambda rng, dtype: [
        Sample((_log_probs(rng, (3, 4)), np.exp(_log_probs(rng, (3, 4)))), {"reduction": r},
               grad=(0,)) for r in ("batchmean", "sum", "none")]),
    _entry("poisson_nll_loss", lambda rng, dtype: [
        Sample((uniform(rng, (3, 4)), rng.poisson(2.0, (3, 4)).astype(np.float64)), {},
               grad=(0,)),
        Sample((positive(rng, (3, 4)), rng.poisson(2.0, (3, 4)).astype(np.float64)),
               {"log_input": False, "full": True}, grad=(0,))]),
    _entry("gaussian_nll_loss", lambda rng, dtype: [
        Sample((uniform(rng, (3, 4)), uniform(rng, (3, 4)), positive(rng, (3, 4))), {})]),
    _entry("cosine_embedding_loss", _triple(lambda rng: _signs(rng, (4,)), margin=0.2)),
    _entry("margin_ranking_loss", lambda rng, dtype: [
        Sample((uniform(rng, (5,)), uniform(rng, (5,)), _signs(rng, (5,))), {"margin": 0.1},
               grad=(0, 1))]),
    _entry("triplet_margin_loss", _triple(lambda rng: uniform(rng, (4, 3)), grad=(0, 1, 2))),
    _entry("triplet_margin_with_distance_loss",
           _triple(lambda rng: uniform(rng, (4, 3)), grad=(0, 1, 2), margin=0.5)),
    _entry("multi_margin_loss", _margin),
    _entry("multilabel_margin_loss", _multilabel_margin),
    _entry("nll_loss", _nll),
    _entry("cross_entropy", _cross_entropy),
]


def _reduce(x, reduction):
    return {"mean": np.mean, "sum": np.sum}.get(reduction, lambda v: v)(x)


def _conv(nd, transpose=False):
    """Samples for conv{nd}d / conv_transpose{nd}d on 4 input channels: plain, strided and
    padded, dilated with 2 groups (with a bias each)."""
    def samples(rng, dtype):
        out = []
        for kw, groups in (({}, 1), ({"stride": 2, "padding": 1}, 1), ({"dilation": 2}, 2)):
            # weight: (out, in / groups, k...) for a convolution, (in, out / groups, k...) for
            # a transposed one
            w = ((4, 6 // groups) if transpose else (6, 4 // groups)) + (3,) * nd
            x = uniform(rng, (2, 4) + (5,) * nd)
            out.append(Sample((x, uniform(rng, w), uniform(rng, (6,))), dict(kw, groups=groups)))
        return out
    return samples


def _fold(rng, dtype):
    return [Sample((uniform(rng, (2, 3 * 4, 9)), (4, 4), 2), {}),
            Sample((uniform(rng, (1, 2 * 4, 9)), (5, 5), 2), {"stride": 2, "padding": 1})]


CONVOLUTIONS = [
    *[_entry(f"conv{n}d", _conv(n)) for n in (1, 2, 3)],
    *[_entry(f"conv_transpose{n}d", _conv(n, transpose=True)) for n in (1, 2, 3)],
    _entry("fold", _fold),
]


def _pool(nd, *args, **kw):
    def samples(rng, dtype):
        return [Sample((uniform(rng, (2, 3) + (6,) * nd), *args), dict(kw))]
    return samples


def _pools():
    out = []
    for n in (1, 2, 3):
        out.append(_entry(f"max_pool{n}d", _pool(n, 2)))
        out.append(_entry(f"avg_pool{n}d", _pool(n, 3, stride=2, padding=1)))
    for n in (1, 2):
        out.append(_entry(f"adaptive_avg_pool{n}d", _pool(n, 4)))
        out.append(_entry(f"adaptive_max_pool{n}d", _pool(n, 4)))
        out.append(_entry(f"lp_pool{n}d", lambda rng, dtype, n=n: [
            Sample((positive(rng, (2, 3) + (6,) * n), 2.0, 2), {})]))
    return out


POOLING = _pools()


def _batch_norm(rng, dtype):
    x = uniform(rng, (4, 3, 5))
    stats = (uniform(rng, (3,)), positive(rng, (3,)))
    affine = (positive(rng, (3,)), uniform(rng, (3,)))
    return [Sample((x, *stats, *affine), {"training": True}, grad=(0, 3, 4)),
            Sample((x, *stats, *affine), {"training": False}, grad=(0, 3, 4))]


NORMALIZATION = [
    _entry("layer_norm", lambda rng, dtype: [
        Sample((uniform(rng, (2, 3, 4)), (3, 4), positive(rng, (3, 4)), uniform(rng, (3, 4))),
               {}),
        Sample((uniform(rng, (5, 4)), (4,)), {"eps": 1e-3})]),
    _entry("rms_norm", lambda rng, dtype: [
        Sample((uniform(rng, (2, 3, 4)), (4,), positive(rng, (4,))), {"eps": 1e-6})]),
    _entry("group_norm", lambda rng, dtype: [
        Sample((uniform(rng, (2, 4, 3)), 2, positive(rng, (4,)), uniform(rng, (4,))), {})]),
    _entry("instance_norm", lambda rng, dtype: [
        Sample((uniform(rng, (2, 3, 5)),), {}),
        Sample((uniform(rng, (2, 3, 4, 4)),), {"weight": positive(rng, (3,)),
                                               "bias": uniform(rng, (3,))})]),
    _entry("batch_norm", _batch_norm),
    _entry("local_response_norm", lambda rng, dtype: [
        Sample((uniform(rng, (2, 5, 4)), 3), {}), Sample((uniform(rng, (2, 4, 3, 3)), 2), {})]),
    _entry("normalize", lambda rng, dtype: [
        Sample((uniform(rng, (3, 4)),), {}), Sample((uniform(rng, (2, 3, 4)),),
                                                    {"p": 1.0, "dim": -1})]),
]


def _attention(rng, dtype):
    q, k, v = (uniform(rng, (2, 3, 5, 4)), uniform(rng, (2, 3, 6, 4)),
               uniform(rng, (2, 3, 6, 4)))
    return [Sample((q, k, v), {}),
            Sample((q, k[:, :, :5], v[:, :, :5]), {"is_causal": True}),
            Sample((q, k, v, uniform(rng, (5, 6))), {"scale": 0.3}),
            Sample((q, k, v, rng.uniform(size=(5, 6)) < 0.8), {}, name="bool mask ")]


def _embedding(rng, dtype):
    # no padding_idx sample: its row's gradient is zero by definition, not the derivative, so
    # the finite-difference check cannot hold (tests/nn/test_functional_misc.py checks it)
    return [Sample((_classes(rng, (3, 4), 6), uniform(rng, (6, 5))), {}),
            Sample((_classes(rng, (7,), 6), uniform(rng, (6, 5))), {"max_norm": None})]


def _embedding_bag(rng, dtype):
    idx = _classes(rng, (7,), 6)
    offsets = np.array([0, 2, 2, 5], dtype=np.int64)
    return [Sample((idx, uniform(rng, (6, 3)), offsets), {"mode": m})
            for m in ("mean", "sum", "max")] + [
        Sample((_classes(rng, (2, 3), 6), uniform(rng, (6, 3))), {"mode": "sum"})]


LAYERS = [
    _entry("scaled_dot_product_attention", _attention),
    _entry("embedding", _embedding),
    _entry("embedding_bag", _embedding_bag),
    _entry("linear", lambda rng, dtype: [
        Sample((uniform(rng, (3, 4)), uniform(rng, (5, 4)), uniform(rng, (5,))), {}),
        Sample((uniform(rng, (2, 3, 4)), uniform(rng, (5, 4))), {})]),
    _entry("bilinear", lambda rng, dtype: [
        Sample((uniform(rng, (3, 4)), uniform(rng, (3, 2)), uniform(rng, (5, 4, 2)),
                uniform(rng, (5,))), {})]),
]

register(*LOSSES, *CONVOLUTIONS, *POOLING, *NORMALIZATION, *LAYERS)

# the rest of these families, with why they are not rows of the matrix
exempt("random: tested for their statistics and masks in tests/nn/test_functional_misc.py",
       "nn.functional.dropout", "nn.functional.dropout1d", "nn.functional.dropout2d",
       "nn.functional.dropout3d", "nn.functional.alpha_dropout",
       "nn.functional.feature_alpha_dropout")
exempt("take the indices of a max_pool call: tests/nn/test_functional_conv_pool.py",
       "nn.functional.max_unpool1d", "nn.functional.max_unpool2d", "nn.functional.max_unpool3d")
exempt("nn.MultiheadAttention's kernel, checked through the module against torch's in "
       "tests/nn/test_rnn_transformer.py", "nn.functional.multi_head_attention_forward")
