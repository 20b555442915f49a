"""Attention: ``scaled_dot_product_attention`` and PyTorch's ``multi_head_attention_forward``.

SDPA is composed from primitives (matmul, where, the Softmax primitive, matmul): the work is
in the two matmuls and the softmax, which a fused node would not make cheaper. Rows whose keys
are all masked out give zeros (PyTorch's "safe softmax"), with zero gradients rather than NaN.
"""

from __future__ import annotations

import math

import numpy as np

from ... import backend
from ... import dtypes as dt
from ...ops._common import check_tensor
from ...ops.pointwise import where
from ...ops.shape import cat, pad
from ...ops.softmax import softmax
from ...tensor import Tensor, _make
from ._core import dropout, linear

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_CAUSAL: dict = {}


def _causal_mask(length, source, xp):
    """Boolean (L, S) mask of the positions a query may attend to (lower triangle), cached."""
    key = (length, source, xp.__name__)
    m = _CAUSAL.get(key)
    if m is None:
        m = _make(xp.asarray(np.tril(np.ones((length, source), dtype=bool))))
        if len(_CAUSAL) > 64:
            _CAUSAL.clear()
        _CAUSAL[key] = m
    return m


def _dead_rows(keep):
    """(…, L, 1) bool: rows in which no key may be attended, or None when there are none."""
    dead = ~keep._data.any(axis=-1, keepdims=True)
    return _make(dead) if bool(dead.any()) else None


def _check_qkv(query, key, value, attn_mask, is_causal, op):
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_tensor(t, op, name)
        if t.ndim < 2:
            raise RuntimeError(f"{op}(): expected {name} with at least 2 dims, got shape "
                               f"{list(t.shape)}")
    if query.dtype is not key.dtype or query.dtype is not value.dtype:
        raise RuntimeError(f"{op}(): Expected query, key, and value to have the same dtype, but "
                           f"got query.dtype: {query.dtype.name} key.dtype: {key.dtype.name} "
                           f"and value.dtype: {value.dtype.name} instead.")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"{op}(): shape mismatch: query {list(query.shape)}, key "
                           f"{list(key.shape)}, value {list(value.shape)} (need query and key "
                           f"to share the last dim, key and value the sequence dim)")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if attn_mask is not None:
        check_tensor(attn_mask, op, "attn_mask")


def _masked_scores(scores, attn_mask, is_causal):
    """Scores with the mask applied, and the (…, L, 1) rows left with no key (or None)."""
    if is_causal:
        length, source = scores.shape[-2:]
        keep = _causal_mask(length, source, scores.xp)
        dead = _dead_rows(keep) if length > source else None
        return where(keep, scores, -math.inf), dead
    if attn_mask is None:
        return scores, None
    if attn_mask.dtype is dt.bool:
        return where(attn_mask, scores, -math.inf), _dead_rows(attn_mask)
    mdata = attn_mask._data
    xp = backend.array_module(mdata)
    dead = None
    if bool((mdata == -xp.inf).any()):  # isneginf, in the subset of NumPy CuPy shares
        dead = _dead_rows(_make(mdata != -xp.inf))
    return scores + attn_mask, dead


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False,
                                 generator=None) -> Tensor:
    """``softmax(query @ key^T * scale + mask) @ value``.

    Shapes: query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev).
    ``attn_mask`` broadcasts to (..., L, S): a bool mask marks the pairs that may attend, a
    float mask is added to the scores. ``is_causal`` masks keys after each query (the upper
    triangle); ``scale`` defaults to ``1/sqrt(E)``; ``dropout_p`` drops attention weights
    (always, as PyTorch's functional does; pass 0 in evaluation). ``enable_gqa`` repeats the
    key/value heads (dim -3) to match the query heads.
    Example: ``F.scaled_dot_product_attention(q, k, v, is_causal=True)``.
    """
    op = "scaled_dot_product_attention"
    _check_qkv(query, key, value, attn_mask, is_causal, op)
    if enable_gqa and key.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        if query.shape[-3] % key.shape[-3]:
            raise RuntimeError(f"{op}(): number of query heads ({query.shape[-3]}) must be a "
                               f"multiple of key/value heads ({key.shape[-3]})")
        rep = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(rep, -3)
        value = value.repeat_interleave(rep, -3)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    scores, dead = _masked_scores((query * scale) @ key.mT, attn_mask, is_causal)
    if dead is not None:  # safe softmax: all-masked rows give 0 (and no NaN gradients)
        scores = where(dead, 0.0, scores)
    weights = softmax(scores, -1)
    if dead is not None:
        weights = where(dead, 0.0, weights)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True, generator=generator)
    return weights @ value


def _canonical_mask(mask, dtype, name):
    """A bool mask (True = masked out, MHA's convention) as an additive float mask."""
    if mask is None:
        return None
    if mask.dtype is dt.bool:
        from ...ops.creation import zeros

        return zeros(*mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, -math.inf)
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _in_projection(query, key, value, w, b, embed_dim):
    if key is value and query is key:  # self-attention: one matmul
        proj = linear(query, w, b)
        return proj.chunk(3, -1)
    wq, wk, wv = w.chunk(3)
    bq, bk, bv = (None, None, None) if b is None else b.chunk(3)
    return linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)


def _check_attn_mask(attn_mask, tgt_len, src_len, bsz, num_heads):
    if attn_mask.ndim == 2:
        if tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(f"The shape of the 2D attn_mask is {list(attn_mask.shape)}, but "
                               f"should be {[tgt_len, src_len]}.")
        return attn_mask.unsqueeze(0)
    if attn_mask.ndim == 3:
        if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
            raise RuntimeError(f"The shape of the 3D attn_mask is {list(attn_mask.shape)}, but "
                               f"should be {[bsz * num_heads, tgt_len, src_len]}.")
        return attn_mask
    raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")


def _project(query, key, value, embed_dim, in_proj_weight, in_proj_bias, separate,
             q_proj_weight, k_proj_weight, v_proj_weight):
    if not separate:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        return _in_projection(query, key, value, in_proj_weight, in_proj_bias, embed_dim)
    for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
        if w is None:
            raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight is "
                                 "None")
    bq, bk, bv = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
    return (linear(query, q_proj_weight, bq), linear(key, k_proj_weight, bk),
            linear(value, v_proj_weight, bv))


def _extend_keys(k, v, attn_mask, key_padding_mask, bias_k, bias_v, bsz):
    """Append the learned bias_k / bias_v key and value (one extra source position)."""
    if bias_k is None and bias_v is None:
        return k, v, attn_mask, key_padding_mask
    if bias_k is None or bias_v is None:
        raise AssertionError("bias_k and bias_v must be given together")
    k = cat([k, bias_k.repeat(1, bsz, 1)])
    v = cat([v, bias_v.repeat(1, bsz, 1)])
    if attn_mask is not None:
        attn_mask = pad(attn_mask, (0, 1))
    if key_padding_mask is not None:
        key_padding_mask = pad(key_padding_mask, (0, 1))
    return k, v, attn_mask, key_padding_mask


def _heads(t, static, bsz, num_heads, head_dim, name):
    if static is None:
        return t.reshape(t.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if static.shape[0] != bsz * num_heads or static.shape[2] != head_dim:
        raise AssertionError(f"expecting static_{name} of shape ({bsz * num_heads}, *, "
                             f"{head_dim}), but got {list(static.shape)}")
    return static


def _merge_padding(q, k, v, attn_mask, key_padding_mask, bsz, num_heads, head_dim,
                   add_zero_attn):
    if add_zero_attn:
        from ...ops.creation import zeros

        z = zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype, device=k.device)
        k, v = cat([k, z], 1), cat([v, z], 1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but "
                                 f"got {tuple(key_padding_mask.shape)}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1) \
            .reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    return k, v, attn_mask


def _with_weights(q, k, v, attn_mask, dropout_p, shape, out_proj_weight, out_proj_bias,
                  average):
    tgt_len, bsz, num_heads, embed_dim = shape
    scores = (q * math.sqrt(1.0 / (embed_dim // num_heads))) @ k.mT
    if attn_mask is not None:
        scores = scores + attn_mask
    weights = softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    out = (weights @ v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    weights = weights.reshape(bsz, num_heads, tgt_len, k.shape[1])
    return out, (weights.mean(1) if average else weights)


def _with_sdpa(q, k, v, attn_mask, dropout_p, is_causal, shape, out_proj_weight,
               out_proj_bias):
    tgt_len, bsz, num_heads, embed_dim = shape
    src_len = k.shape[1]
    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.ndim == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, -1)
    k = k.reshape(bsz, num_heads, src_len, -1)
    v = v.reshape(bsz, num_heads, src_len, -1)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    return linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """PyTorch's functional multi-head attention (sequence-first).

    Shapes: query (L, N, E) or (L, E), key/value (S, N, E_k/E_v); ``key_padding_mask`` (N, S)
    and bool masks mark positions to ignore with True (float masks are added);
    ``attn_mask`` (L, S) or (N * num_heads, L, S). Returns (output (L, N, E), weights
    (N, L, S) averaged over heads, (N, num_heads, L, S) otherwise, or None without
    ``need_weights``).
    """
    if query.ndim not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                             f"{query.ndim}-D query tensor")
    batched = query.ndim == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    key_padding_mask = _canonical_mask(key_padding_mask, query.dtype, "key_padding_mask")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, query.dtype, "attn_mask")
        is_causal = is_causal and key_padding_mask is None
        if attn_mask is not None:
            attn_mask = _check_attn_mask(attn_mask, tgt_len, key.shape[0], bsz, num_heads)
    q, k, v = _project(query, key, value, embed_dim, in_proj_weight, in_proj_bias,
                       use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight)
    k, v, attn_mask, key_padding_mask = _extend_keys(k, v, attn_mask, key_padding_mask, bias_k,
                                                     bias_v, bsz)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _heads(k, static_k, bsz, num_heads, head_dim, "k")
    v = _heads(v, static_v, bsz, num_heads, head_dim, "v")
    k, v, attn_mask = _merge_padding(q, k, v, attn_mask, key_padding_mask, bsz, num_heads,
                                     head_dim, add_zero_attn)
    dropout_p = dropout_p if training else 0.0
    shape = (tgt_len, bsz, num_heads, embed_dim)
    if need_weights:
        out, weights = _with_weights(q, k, v, attn_mask, dropout_p, shape, out_proj_weight,
                                     out_proj_bias, average_attn_weights)
        return (out, weights) if batched else (out.squeeze(1), weights.squeeze(0))
    out = _with_sdpa(q, k, v, attn_mask, dropout_p, is_causal, shape, out_proj_weight,
                     out_proj_bias)
    return (out if batched else out.squeeze(1)), None
