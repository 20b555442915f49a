"""``tensorix.decomp.layers``: structured (factorized) layers for ``tensorix.nn``, built on the
decompositions of :mod:`tensorix.decomp`.

* tensor-train layers (``_tt``): :class:`TTLinear`, :class:`TTEmbedding`;
* factorized convolutions (``_conv``): :class:`CPConv2d`, :class:`TuckerConv2d`,
  :class:`LowRankConv2d`, :class:`SeparableConv2d`; :func:`decompose_conv2d` (the layer-wise
  choice at a size budget) and :func:`factorize_convs` (a whole model);
* adapters (``_lora``): :class:`LoRALinear`, :class:`TeRALinear`, :class:`TLoRALinear`,
  :func:`apply_lora`, :func:`merge_and_unload`;
* tensor regression and fusion (``_regression``): :class:`TensorRegression` (Tucker/CP
  weight, tensor dropout), :class:`LowRankFusion` (LMF);
* structured matrices (``_structured``): :class:`BTTLinear`, :class:`MonarchLinear`, with
  muP init and learning rates;
* low rank (``_lowrank``): :func:`low_rank_gemm` (randomized SVD), :class:`LowRankLinear`,
  :func:`rank_compensation` (lower precision reinvested in rank at equal bytes),
  :func:`shrink_tucker_ranks` (rank-adaptive Tucker training);

Every layer is an ``nn.Module`` with torch-like construction, a ``from_dense``/``from_conv``
constructor that decomposes a trained layer where that applies, and a ``to_dense()`` giving
the dense equivalent (for checks and export).

Example::

    from tensorix import nn
    from tensorix.decomp.layers import TTLinear
    layer = TTLinear.from_dense(nn.Linear(256, 64), rank=8, d=2)
"""

from ._conv import (
    CONV_METHODS,
    CPConv2d,
    LowRankConv2d,
    SeparableConv2d,
    TuckerConv2d,
    decompose_conv2d,
    factorize_convs,
)
from ._lora import ADAPTERS, LoRALinear, TeRALinear, TLoRALinear, apply_lora, merge_and_unload
from ._lowrank import (
    LowRankLinear,
    low_rank_gemm,
    rank_compensation,
    shrink_tucker_ranks,
    storage_bits,
    storage_bytes,
)
from ._regression import LowRankFusion, TensorRegression
from ._structured import BTTLinear, MonarchLinear
from ._tt import TTEmbedding, TTLinear, tt_matrix_from_dense, tt_matrix_to_dense

__all__ = ["TTLinear", "TTEmbedding", "tt_matrix_to_dense", "tt_matrix_from_dense",
           "CPConv2d", "TuckerConv2d", "LowRankConv2d", "SeparableConv2d", "decompose_conv2d",
           "factorize_convs", "CONV_METHODS", "LoRALinear", "TeRALinear", "TLoRALinear",
           "apply_lora", "merge_and_unload", "ADAPTERS", "TensorRegression", "LowRankFusion",
           "BTTLinear", "MonarchLinear", "low_rank_gemm", "LowRankLinear", "rank_compensation",
           "storage_bits", "storage_bytes", "shrink_tucker_ranks"]
