"""scaled_dot_product_attention and multi_head_attention_forward vs torch."""

from __future__ import annotations

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix.testing import gradgradcheck

from ._util import compare, torch

TF = torch.nn.functional


@pytest.fixture
def rng():
    return np.random.default_rng(3)


def _r(rng, *shape):
    return rng.standard_normal(shape)


def _qkv(rng, b=2, h=3, lq=4, lk=5, e=6, ev=7):
    return _r(rng, b, h, lq, e), _r(rng, b, h, lk, e), _r(rng, b, h, lk, ev)


def test_sdpa_plain_and_scale(rng):
    q, k, v = _qkv(rng)
    compare(F.scaled_dot_product_attention, TF.scaled_dot_product_attention, [q, k, v])
    compare(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.3),
            lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, scale=0.3), [q, k, v])


@pytest.mark.parametrize("lq,lk", [(5, 5), (3, 6), (6, 3)])
def test_sdpa_causal(rng, lq, lk):
    q, k, v = _qkv(rng, lq=lq, lk=lk)
    compare(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
            lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True), [q, k, v])


def test_sdpa_bool_mask_with_fully_masked_row(rng):
    q, k, v = _qkv(rng)
    mask = rng.uniform(size=(4, 5)) > 0.4
    mask[0] = True
    mask[2] = False  # no key: zeros, zero gradients
    compare(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, tx.tensor(mask)),
            lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, torch.tensor(mask)),
            [q, k, v])


def test_sdpa_float_mask_broadcast_and_grad(rng):
    q, k, v = _qkv(rng)
    m = _r(rng, 2, 1, 4, 5)
    m[1, 0, 3] = -np.inf
    compare(F.scaled_dot_product_attention, TF.scaled_dot_product_attention, [q, k, v, m])


def test_sdpa_3d_and_gqa(rng):
    q, k, v = _r(rng, 3, 4, 6), _r(rng, 3, 5, 6), _r(rng, 3, 5, 2)
    compare(F.scaled_dot_product_attention, TF.scaled_dot_product_attention, [q, k, v])
    q, k, v = _r(rng, 1, 4, 3, 6), _r(rng, 1, 2, 5, 6), _r(rng, 1, 2, 5, 6)
    compare(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
            lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, enable_gqa=True),
            [q, k, v])


def test_sdpa_dropout():
    g = tx.Generator().manual_seed(0)
    q = tx.randn(1, 1, 200, 8, generator=g)
    v = tx.ones(1, 1, 50, 8)
    out = F.scaled_dot_product_attention(q, tx.zeros(1, 1, 50, 8), v, dropout_p=0.5,
                                         generator=g)
    # uniform weights 1/50, half dropped, the rest scaled by 2: row sums near 1 on average
    rows = out.numpy()[0, 0, :, 0]
    assert abs(rows.mean() - 1) < 0.05 and rows.std() > 0.05
    assert np.allclose(F.scaled_dot_product_attention(q, tx.zeros(1, 1, 50, 8), v).numpy(), 1)


def test_sdpa_errors():
    q = tx.randn(2, 3, 4)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set"):
        F.scaled_dot_product_attention(q, q, q, tx.ones(3, 3, dtype=tx.bool), is_causal=True)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.scaled_dot_product_attention(q, q.double(), q)


def test_sdpa_second_order(rng):
    q, k, v = (tx.tensor(a, requires_grad=True) for a in _qkv(rng, 1, 1, 3, 3, 2, 2))
    assert gradgradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v,
                                                                        is_causal=True),
                         [q, k, v])


def _mha_weights(rng, e, kdim=None, vdim=None, bias_kv=False):
    w = {"in_w": _r(rng, 3 * e, e) * 0.3, "in_b": _r(rng, 3 * e) * 0.1,
         "out_w": _r(rng, e, e) * 0.3, "out_b": _r(rng, e) * 0.1}
    if bias_kv:
        w["bk"], w["bv"] = _r(rng, 1, 1, e), _r(rng, 1, 1, e)
    return w


@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("masks", ["none", "bool", "float", "kpm", "both"])
def test_mha_forward(rng, need_weights, average, masks):
    e, h, length, s, n = 6, 2, 4, 5, 3
    w = _mha_weights(rng, e)
    q, kv = _r(rng, length, n, e), _r(rng, s, n, e)
    attn = {"none": None, "bool": rng.uniform(size=(length, s)) > 0.7,
            "float": _r(rng, n * h, length, s), "kpm": None,
            "both": rng.uniform(size=(length, s)) > 0.7}[masks]
    kpm = rng.uniform(size=(n, s)) > 0.7 if masks in ("kpm", "both") else None
    if kpm is not None:
        kpm[:, 0] = False
    if attn is not None and attn.dtype == bool:
        attn[:, :2] = False

    def run(lib, F_, q, kv, in_w, in_b, out_w, out_b):
        conv = tx.tensor if lib is tx else torch.tensor
        return F_.multi_head_attention_forward(
            q, kv, kv, e, h, in_w, in_b, None, None, False, 0.0, out_w, out_b,
            training=True, key_padding_mask=None if kpm is None else conv(kpm),
            need_weights=need_weights, attn_mask=None if attn is None else conv(attn),
            average_attn_weights=average)

    compare(lambda *a: run(tx, F, *a), lambda *a: run(torch, TF, *a),
            [q, kv, w["in_w"], w["in_b"], w["out_w"], w["out_b"]])


def test_mha_bias_kv_zero_attn_separate_weights_unbatched(rng):
    e, h = 4, 2
    w = _mha_weights(rng, e, bias_kv=True)
    qw, kw, vw = _r(rng, e, e), _r(rng, e, 3), _r(rng, e, 5)
    q, k, v = _r(rng, 3, e), _r(rng, 6, 3), _r(rng, 6, 5)

    def run(F_, q, k, v, in_b, out_w, out_b, bk, bv, qw, kw, vw):
        return F_.multi_head_attention_forward(
            q, k, v, e, h, None, in_b, bk, bv, True, 0.0, out_w, out_b,
            use_separate_proj_weight=True, q_proj_weight=qw, k_proj_weight=kw,
            v_proj_weight=vw)

    compare(lambda *a: run(F, *a), lambda *a: run(TF, *a),
            [q, k, v, w["in_b"], w["out_w"], w["out_b"], w["bk"], w["bv"], qw, kw, vw])


def test_mha_causal_hint(rng):
    e, h, length, n = 4, 2, 5, 2
    w = _mha_weights(rng, e)
    x = _r(rng, length, n, e)
    mask = np.triu(np.full((length, length), -np.inf), 1)

    def run(lib, F_, x, in_w, in_b, out_w, out_b):
        return F_.multi_head_attention_forward(
            x, x, x, e, h, in_w, in_b, None, None, False, 0.0, out_w, out_b,
            need_weights=False, attn_mask=lib.tensor(mask), is_causal=True)

    compare(lambda *a: run(tx, F, *a), lambda *a: run(torch, TF, *a),
            [x, w["in_w"], w["in_b"], w["out_w"], w["out_b"]])
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        F.multi_head_attention_forward(tx.tensor(x), tx.tensor(x), tx.tensor(x), e, h,
                                       tx.tensor(w["in_w"]), None, None, None, False, 0.0,
                                       tx.tensor(w["out_w"]), None, is_causal=True)
