"""Argument checks of nn.functional, the layers, nn.init and nn.utils: each raises the
documented exception with a message naming the op and the problem."""

from __future__ import annotations

import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix import nn


def _x(*shape):
    return tx.randn(*shape)


def _i(*values):
    return tx.tensor(list(values))


CASES = [
    # functional: dropouts, distances, shapes
    (lambda: F.dropout1d(_x(2, 3, 4, 5)), RuntimeError, "Expected 2D or 3D input"),
    (lambda: F.dropout2d(_x(2, 3, 4, 4), p=-0.1), ValueError, "between 0 and 1"),
    (lambda: F.pdist(_x(2, 3, 4)), RuntimeError, "only supports 2D tensors"),
    (lambda: F.one_hot(tx.tensor([], dtype=tx.int64)), RuntimeError, "Can not infer"),
    (lambda: F.one_hot(_i(-1, 2), 3), RuntimeError, "must be non-negative"),
    (lambda: F.pixel_shuffle(_x(4, 4), 2), RuntimeError, "at least 3 dimensions"),
    (lambda: F.pixel_unshuffle(_x(1, 3, 5), 2), RuntimeError, "divisible by downscale_factor"),
    (lambda: F.pixel_unshuffle(_x(4, 4), 2), RuntimeError, "at least 3 dimensions"),
    (lambda: F.channel_shuffle(_x(1, 5, 2), 2), RuntimeError, "must be divisible by groups"),
    (lambda: F.embedding_bag(_i(1, 2), _x(4, 2), mode="median"), ValueError,
     "mode has to be one of sum, mean or max"),
    (lambda: F.embedding_bag(tx.tensor([[1, 2]]), _x(4, 2), _i(0)), ValueError,
     "if input is 2D, then offsets has to be None"),
    (lambda: F.embedding_bag(tx.zeros(1, 1, 1, dtype=tx.int64), _x(4, 2)), ValueError,
     "input has to be 1D or 2D Tensor"),
    (lambda: F.embedding_bag(_i(1, 2), _x(4, 2), tx.tensor([[0]])), ValueError,
     "offsets has to be a 1D Tensor, but got Tensor of dimension 2"),
    (lambda: F.embedding_bag(_i(1, 2), _x(4, 2), _i(0, 5)), RuntimeError,
     "offsets\\[-1\\] can not be greater than input's length"),
    (lambda: F.embedding_bag(_i(1, 2), _x(4, 2), _i(0), mode="sum",
                             per_sample_weights=_x(3)), ValueError,
     "must have the same shape as the input"),
    # interpolate
    (lambda: F.interpolate(_x(1, 1, 4, 4), size=(2, 2, 2)), ValueError,
     "same number of spatial dimensions"),
    (lambda: F.interpolate(_x(1, 1, 4, 4), scale_factor=(2, 2, 2)), ValueError,
     "Input and scale_factor must have the same number"),
    (lambda: F.interpolate(_x(1, 1, 4), size=3, mode="cubic"), NotImplementedError,
     "got cubic"),
    (lambda: F.interpolate(_x(1, 1, 4, 4), size=3, mode="bilinear", antialias=True),
     NotImplementedError, "antialias=True is not supported"),
    (lambda: F.interpolate(_x(1, 1, 4), scale_factor=0.1), RuntimeError,
     "output sizes must be positive"),
    # attention
    (lambda: F.scaled_dot_product_attention(_x(3), _x(3), _x(3)), RuntimeError,
     "expected query with at least 2 dims"),
    (lambda: F.scaled_dot_product_attention(_x(2, 3), _x(2, 4), _x(2, 3)), RuntimeError,
     "shape mismatch"),
    (lambda: F.scaled_dot_product_attention(_x(1, 3, 2, 4), _x(1, 2, 2, 4), _x(1, 2, 2, 4),
                                            enable_gqa=True), RuntimeError,
     "must be a multiple of key/value heads"),
    # losses
    (lambda: F.smooth_l1_loss(_x(2), _x(2), beta=-1), RuntimeError, "negative values for beta"),
    (lambda: F.huber_loss(_x(2), _x(2), delta=0), RuntimeError, "non-positive values for delta"),
    (lambda: F.kl_div(_x(2), _x(2), reduction="avg"), ValueError, "not a valid value"),
    (lambda: F.cosine_embedding_loss(_x(2, 2, 2), _x(2, 2, 2), _x(2)), RuntimeError,
     "expected 1D or 2D inputs"),
    (lambda: F.margin_ranking_loss(_x(2), _x(2, 1), _x(2)), RuntimeError,
     "should have same dimension"),
    (lambda: F.triplet_margin_loss(_x(2, 3), _x(2, 3), _x(3)), RuntimeError,
     "same number of dimensions"),
    (lambda: F.triplet_margin_with_distance_loss(_x(2), _x(2), _x(2), margin=-1), ValueError,
     "expected margin to be greater than 0"),
    (lambda: F.multi_margin_loss(_x(2, 3), _i(0, 1), p=3), ValueError,
     "only p == 1 and p == 2"),
    (lambda: F.cross_entropy(_x(2, 3), _i(0, 1), label_smoothing=1.5), ValueError,
     "label_smoothing must be between 0.0 and 1.0"),
    (lambda: F.cross_entropy(_x(2, 3), _x(2, 4)), RuntimeError,
     "probability targets must have the input's shape"),
    (lambda: F.nll_loss(_x(2, 3), _i(0, 1), weight=tx.ones(4)), RuntimeError,
     "weight should be a 1D tensor of size 3"),
    # norms
    (lambda: F.batch_norm(_x(3), None, None, training=True), ValueError, "at least 2 dims"),
    (lambda: F.group_norm(_x(3), 1), RuntimeError, "at least 2 dims"),
    (lambda: F.group_norm(_x(2, 4), 2, tx.ones(3)), RuntimeError,
     "expected weight of shape \\[4\\]"),
    (lambda: F.instance_norm(_x(2, 3)), ValueError, "at least 3 dims"),
    (lambda: F.instance_norm(_x(2, 3, 1)), ValueError, "more than 1 spatial element"),
    (lambda: F.rms_norm(_x(2, 3), 3, tx.ones(2)), RuntimeError,
     "expected weight of shape \\[3\\]"),
    (lambda: F.local_response_norm(_x(2, 3), 2), ValueError, "3D or higher dimensional"),
    # activations
    (lambda: F.prelu(_x(2, 3), tx.ones(3, 1)), RuntimeError, "must be a scalar or 1-D"),
    (lambda: F.glu(tx.tensor(1.0)), RuntimeError, "does not support scalars"),
    (lambda: F.softshrink(_x(2), -1), RuntimeError, "must be greater or equal to 0"),
    # pooling
    (lambda: F.avg_pool2d(_x(2, 2), 2), RuntimeError, "expected a 3D or 4D input"),
    (lambda: F.avg_pool2d(_x(1, 1, 4, 4), 3, padding=2), RuntimeError,
     "pad should be at most half"),
    (lambda: F.max_pool2d(_x(1, 1, 2, 2), 3), RuntimeError, "output size is too small"),
    (lambda: F.max_unpool2d(_x(1, 1, 2, 2), tx.zeros(1, 1, 2, 3, dtype=tx.int64), 2),
     RuntimeError, "indices of its shape"),
    (lambda: F.max_unpool2d(_x(1, 1, 2, 2), tx.zeros(1, 1, 2, 2, dtype=tx.int64), 2,
                            output_size=(9, 9)), ValueError, "invalid output_size"),
    (lambda: F.max_unpool2d(_x(1, 1, 2, 2), tx.zeros(1, 1, 2, 2, dtype=tx.int64), 2,
                            output_size=(4,)), ValueError, "output_size must have 2 or 4"),
    # core
    (lambda: F.linear(_x(2, 3), _x(4, 3).double()), RuntimeError, "of one dtype"),
    (lambda: F.bilinear(_x(2, 3), _x(2, 2), _x(4, 2, 2)), RuntimeError, "do not fit"),
    (lambda: F.softmax(tx.tensor([1, 2]), 0), RuntimeError, "expected a floating point input"),
    (lambda: F.embedding(_x(2), _x(4, 2)), RuntimeError, "expected input of integer dtype"),
    (lambda: F.embedding(_i(1), _x(4, 2), scale_grad_by_freq=True), NotImplementedError,
     "scale_grad_by_freq"),
    # layers
    (lambda: nn.Unflatten(1.5, (2, 2)), TypeError, "invalid argument type for dim"),
    (lambda: nn.Unflatten(1, 4), TypeError, "unflattened_size must be tuple"),
    (lambda: nn.Embedding(4, 2, padding_idx=5), AssertionError, "Padding_idx must be within"),
    (lambda: nn.Embedding.from_pretrained(_x(4)), AssertionError, "expected to be 2-dim"),
    (lambda: nn.EmbeddingBag.from_pretrained(_x(4)), AssertionError, "expected to be 2-dim"),
    (lambda: nn.Conv2d(3, 4, 3, groups=0), ValueError, "groups must be a positive integer"),
    (lambda: nn.Conv2d(4, 3, 3, groups=2), ValueError, "out_channels must be divisible"),
    (lambda: nn.Conv2d(3, 3, 3, padding="full"), ValueError, "Invalid padding string"),
    (lambda: nn.ConvTranspose2d(3, 3, 3, padding_mode="reflect"), ValueError,
     'Only "zeros" padding mode'),
    (lambda: nn.ConvTranspose1d(2, 2, 3)(_x(1, 2, 4), output_size=[1, 2, 3, 4]), ValueError,
     "output_size must have 1 or 3 elements"),
    (lambda: nn.InstanceNorm1d(3, affine=True)(_x(2, 4, 5)), ValueError,
     "to match num_features"),
    (lambda: nn.InstanceNorm2d(3)(_x(2, 3)), ValueError, "expected 3D or 4D input"),
    (lambda: nn.BatchNorm1d(3)(_x(2, 3, 4, 5)), ValueError, "expected 2D or 3D input"),
    (lambda: nn.Hardtanh(1.0, -1.0), ValueError, "must be less than max_val"),
    (lambda: nn.Softmax2d()(_x(2, 3)), ValueError, "expected input to be 3D or 4D"),
    (lambda: nn.ZeroPad2d((1, 2, 3)), ValueError, "expected padding of 4 ints"),
    (lambda: nn.TripletMarginLoss(margin=0), ValueError, "margin to be greater than 0"),
    (lambda: nn.MultiMarginLoss(p=3), ValueError, "only p == 1 and p == 2"),
    (lambda: nn.MultiheadAttention(0, 2), ValueError, "must be greater than 0"),
    (lambda: nn.MultiheadAttention(4, 2)(_x(3, 2, 4), _x(3, 2, 4), _x(3, 2, 4),
                                         attn_mask=tx.ones(2, 2, dtype=tx.bool)), RuntimeError,
     "The shape of the 2D attn_mask is"),
    (lambda: nn.MultiheadAttention(4, 2)(_x(3, 2, 4), _x(3, 2, 4), _x(3, 2, 4),
                                         attn_mask=tx.ones(1, 3, 3)), RuntimeError,
     "The shape of the 3D attn_mask is"),
    (lambda: nn.MultiheadAttention(4, 2)(_x(3, 2, 4), _x(3, 2, 4), _x(3, 2, 4),
                                         attn_mask=tx.ones(1, 1, 3, 3)), RuntimeError,
     "dimension 4 is not supported"),
    (lambda: nn.MultiheadAttention(4, 2)(_x(3, 2, 4), _x(3, 2, 4), _x(3, 2, 4),
                                         key_padding_mask=tx.ones(2, 5, dtype=tx.bool)),
     AssertionError, "expecting key_padding_mask shape"),
    (lambda: nn.MultiheadAttention(4, 2)(_x(3, 2, 4), _x(3, 2, 4), _x(3, 2, 4),
                                         attn_mask=tx.ones(3, 3, dtype=tx.int64)),
     AssertionError, "only bool and floating types of attn_mask"),
    (lambda: nn.MultiheadAttention(4, 2)(_x(2, 3, 2, 4), _x(3, 2, 4), _x(3, 2, 4)),
     AssertionError, "unbatched 2D or batched 3D"),
    (lambda: nn.TransformerEncoderLayer(4, 2, activation="tanh"), RuntimeError,
     "activation should be relu/gelu"),
    (lambda: nn.Transformer(8, 2, 1, 1, 16)(_x(3, 2, 8), _x(3, 2, 6)), RuntimeError,
     "feature number of src and tgt must be equal to d_model"),
    (lambda: nn.RNN(3, 4, nonlinearity="sigmoid"), ValueError, "Unknown nonlinearity"),
    (lambda: nn.RNNCell(3, 4, nonlinearity="sigmoid"), ValueError, "Unknown nonlinearity"),
    (lambda: nn.LSTM(3, 4, dropout=2.0), ValueError, "dropout should be a number in range"),
    (lambda: nn.LSTM(3, 0), ValueError, "hidden_size must be greater than zero"),
    (lambda: nn.LSTM(3, 4, 0), ValueError, "num_layers must be greater than zero"),
    (lambda: nn.LSTM(3, 4, proj_size=4), ValueError, "proj_size has to be smaller"),
    (lambda: nn.LSTM(3, 4)(_x(5, 2, 3), _x(1, 2, 4)), TypeError, "hx must be a tuple"),
    (lambda: nn.LSTM(3, 4)(_x(5, 2, 3), (_x(1, 2, 4), _x(1, 2, 5))), RuntimeError,
     "Expected cell size"),
    (lambda: nn.GRU(3, 4)(_x(5, 2, 3), _x(2, 4)), RuntimeError,
     "hx should also be 3-D"),
    (lambda: nn.GRU(3, 4)(_x(2, 3, 4, 3)), ValueError, "Expected input to be 2D or 3D"),
    (lambda: nn.LSTMCell(3, 4)(_x(2, 2, 3)), ValueError, "Expected input to be 1D or 2D"),
    (lambda: nn.GRUCell(3, 4)(_x(2, 2)), RuntimeError, "inconsistent input_size"),
    (lambda: nn.RNN(3, 4, 1, "tanh", num_layers=2), TypeError, "multiple values"),
    # init and utils
    (lambda: nn.init.dirac_(_x(3, 3)), ValueError, "3, 4, or 5 dimensions"),
    (lambda: nn.init.dirac_(_x(3, 3, 3), groups=2), ValueError, "divisible by groups"),
    (lambda: nn.init.orthogonal_(_x(3)), ValueError, "2 or more dimensions"),
    (lambda: nn.init.sparse_(_x(3), 0.5), ValueError, "2 dimensions"),
    (lambda: nn.init.uniform_([1.0]), TypeError, "argument 'tensor' must be a Tensor"),
    (lambda: nn.utils.pad_sequence([]), RuntimeError, "empty list"),
    (lambda: nn.utils.pad_sequence([_x(2)], padding_side="top"), ValueError,
     "left or right"),
]


@pytest.mark.parametrize("fn,exc,match", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_argument_errors(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()


def test_trunc_normal_warns_far_mean():
    with pytest.warns(UserWarning, match="mean is more than 2 std"):
        nn.init.trunc_normal_(tx.empty(3), mean=10.0)


def test_weight_norm_twice():
    m = nn.utils.weight_norm(nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        nn.utils.weight_norm(m)


def test_instance_norm_num_features_mismatch_warns_without_affine():
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(3)(_x(2, 4, 5))
