"""TT-Linear and TT-Embedding: weight matrices stored as tensor-train matrices (TT-matrices,
Oseledets 2010), as in Novikov et al. 2015, "Tensorizing Neural Networks" and Hrinchuk et al.
2020, "Tensorized Embedding Layers".

A TT-matrix of shape ``(prod m_k, prod n_k)`` has cores ``G_k (r_k, m_k, n_k, r_{k+1})`` with
``r_0 = r_d = 1``; entry ``W[(i_1..i_d), (j_1..j_d)] = G_1[:, i_1, j_1, :] ... G_d[:, i_d, j_d, :]``
with row and column multi-indices in C order.
"""

from __future__ import annotations

import math

from ...autograd import no_grad
from ...nn import Module, ParameterList, init
from ...nn.layers._util import optional_param
from ...nn.parameter import Parameter
from ...ops.creation import zeros
from ...ops.einsum import einsum
from ...ops.indexing import index_select
from ...ops.shape import cat
from ...tensor import Tensor
from .._tt import tensor_train
from ._util import check_features, modes_for, tt_matrix_cores, tt_matrix_ranks

__all__ = ["TTLinear", "TTEmbedding", "tt_matrix_to_dense", "tt_matrix_from_dense"]


def tt_matrix_to_dense(cores):
    """The full ``(prod m_k, prod n_k)`` matrix of TT-matrix cores ``(r_k, m_k, n_k, r_k+1)``;
    differentiable. Example: ``tt_matrix_to_dense(layer.cores)`` is a TTLinear's weight."""
    full = cores[0]
    for core in cores[1:]:
        a, m, n, _ = full.shape
        full = einsum("amnr,rpqs->ampnqs", full, core).reshape(a, m * core.shape[1],
                                                             n * core.shape[2], -1)
    return full[0, :, :, 0]


def tt_matrix_from_dense(matrix, row_modes, col_modes, rank):
    """TT-matrix cores ``(r_k, m_k, n_k, r_k+1)`` of ``matrix (prod m_k, prod n_k)`` by TT-SVD of
    the tensor with modes ``(m_1 n_1, ..., m_d n_d)``: quasi-optimal at the given ranks.
    Example: ``cores = tt_matrix_from_dense(W, (4, 8), (7, 16), rank=8)`` for ``W (32, 112)``."""
    op = "tt_matrix_from_dense"
    d = len(row_modes)
    ranks = tt_matrix_ranks(op, row_modes, col_modes, rank)
    if tuple(matrix.shape) != (math.prod(row_modes), math.prod(col_modes)):
        raise ValueError(f"{op}: matrix of shape {tuple(matrix.shape)} does not match modes "
                         f"{tuple(row_modes)} x {tuple(col_modes)}")
    interleaved = [i for k in range(d) for i in (k, d + k)]
    tensor = matrix.detach().reshape(*row_modes, *col_modes).permute(*interleaved)
    tensor = tensor.reshape(*[m * n for m, n in zip(row_modes, col_modes)])
    if d == 1:
        return [tensor.reshape(1, row_modes[0], col_modes[0], 1)]
    tt = tensor_train(tensor, ranks)
    return [f.reshape(f.shape[0], m, n, f.shape[2])
            for f, m, n in zip(tt.factors, row_modes, col_modes)]


class _TTMatrixModule(Module):
    """The cores of a TT-matrix as ``self.cores`` (a ParameterList), with the shared repr."""

    def _set_cores(self, cores):
        self.cores = ParameterList([c if isinstance(c, Parameter) else Parameter(c)
                                    for c in cores])

    @property
    def rank(self):
        """The bond ranks ``(1, r_1, ..., r_{d-1}, 1)``."""
        return tuple(c.shape[0] for c in self.cores) + (1,)

    def compression_ratio(self):
        """Entries of the dense matrix per entry stored in the cores (bias excluded)."""
        dense = math.prod(c.shape[1] for c in self.cores) * math.prod(c.shape[2]
                                                                     for c in self.cores)
        return dense / sum(c.numel() for c in self.cores)


class TTLinear(_TTMatrixModule):
    """``y = x @ W.T + bias`` with ``W (out_features, in_features)`` a TT-matrix:
    (*, in_features) -> (*, out_features), never forming ``W``.

    ``in_modes``/``out_modes``: ``d`` factors of the features each (default: a balanced
    factorization into ``d`` factors); ``rank``: an int (a bound on every bond) or
    ``d + 1`` ints ``(1, r_1, ..., 1)``. Cores ``(r_k, out_k, in_k, r_{k+1})`` start normal,
    scaled so that ``W``'s entries have ``nn.Linear``'s variance ``1 / (3 in_features)``.
    The forward contracts one core at a time, ``O(batch * sum_k r_k r_k+1 * prod(...))``
    instead of ``O(batch * in * out)``.

    Example::

        layer = TTLinear(784, 256, rank=8, d=2)   # modes (28, 28) -> (16, 16)
        y = layer(tx.randn(32, 784))              # (32, 784) -> (32, 256)
        layer = TTLinear.from_dense(nn.Linear(784, 256), rank=16, d=2)  # TT-SVD of W
    """

    def __init__(self, in_features, out_features, rank=8, in_modes=None, out_modes=None, d=3,
                 bias=True, device=None, dtype=None):
        super().__init__()
        op = "TTLinear"
        d = len(in_modes) if in_modes is not None else (
            len(out_modes) if out_modes is not None else d)
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.in_modes = modes_for(op, "in_modes", self.in_features, in_modes, d)
        self.out_modes = modes_for(op, "out_modes", self.out_features, out_modes, d)
        ranks = tt_matrix_ranks(op, self.out_modes, self.in_modes, rank)
        self._set_cores(tt_matrix_cores(self.out_modes, self.in_modes, ranks,
                                        1 / (3 * self.in_features), device, dtype))
        self.register_parameter("bias", optional_param(bias, self.out_features, device=device,
                                                       dtype=dtype))
        self.reset_bias()

    def reset_bias(self):
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features)
            init.uniform_(self.bias, -bound, bound)

    @classmethod
    def from_dense(cls, linear_or_weight, rank, in_modes=None, out_modes=None, d=3, bias=None):
        """A TTLinear whose cores are the TT-SVD of a trained weight ``(out, in)`` (an
        ``nn.Linear`` or a matrix; its bias is copied). Example:
        ``TTLinear.from_dense(model.fc, rank=8, in_modes=(4, 4, 4), out_modes=(2, 4, 8))``."""
        weight = getattr(linear_or_weight, "weight", linear_or_weight)
        if bias is None:
            bias = getattr(linear_or_weight, "bias", None)
        if not isinstance(weight, Tensor) or weight.ndim != 2:
            raise TypeError("TTLinear.from_dense: expected an nn.Linear or a 2-d weight Tensor, "
                            f"got {type(linear_or_weight).__name__}")
        out_features, in_features = weight.shape
        layer = cls(in_features, out_features, rank, in_modes, out_modes, d,
                    bias=bias is not None, device=weight.device, dtype=weight.dtype)
        with no_grad():
            cores = tt_matrix_from_dense(weight, layer.out_modes, layer.in_modes, rank)
            for p, c in zip(layer.cores, cores):
                if tuple(p.shape) != tuple(c.shape):  # TT-SVD met a smaller exact rank
                    p.data = c.contiguous()
                else:
                    p.copy_(c)
            if bias is not None:
                layer.bias.copy_(bias.detach())
        return layer

    def to_dense(self):
        """The weight ``(out_features, in_features)`` as a dense matrix; differentiable."""
        return tt_matrix_to_dense(list(self.cores))

    def forward(self, input):
        check_features("TTLinear", input, self.in_features)
        lead = tuple(input.shape[:-1])
        batch = math.prod(lead)
        d = len(self.cores)
        # why this layout: every step is one GEMM (rows, n_k r_k) @ (n_k r_k, m_k r_k+1) and one
        # transpose, with rows ordered (n_k+1, ..., n_d, batch, m_1, ..., m_k-1): the next mode
        # to contract leads, so moving it behind the rows is a single permute
        x = input.reshape(batch, self.in_modes[0], -1)
        state = x.permute(2, 0, 1).reshape(-1, self.in_modes[0])
        for k, core in enumerate(self.cores):
            r0, m, n, r1 = core.shape
            state = state @ core.permute(2, 0, 1, 3).reshape(n * r0, m * r1)
            if k + 1 < d:
                nxt = self.in_modes[k + 1]
                state = state.reshape(nxt, -1, r1).permute(1, 0, 2).reshape(-1, nxt * r1)
        out = state.reshape(*lead, self.out_features)
        return out + self.bias if self.bias is not None else out

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"in_modes={self.in_modes}, out_modes={self.out_modes}, rank={self.rank}, "
                f"bias={self.bias is not None}")


def _vocab_modes(num_embeddings, d):
    """Near-equal modes whose product covers ``num_embeddings`` (the vocabulary is padded, as
    in Hrinchuk et al.): ``ceil(V^(1/d))`` each, then shrunk from the last while it covers."""
    modes = [math.ceil(num_embeddings ** (1 / d) - 1e-9)] * d
    for k in reversed(range(d)):
        while modes[k] > 1 and math.prod(modes) // modes[k] * (modes[k] - 1) >= num_embeddings:
            modes[k] -= 1
    return tuple(modes)


class TTEmbedding(_TTMatrixModule):
    """An embedding table ``(num_embeddings, embedding_dim)`` stored as a TT-matrix with cores
    ``(r_k, voc_k, emb_k, r_{k+1})``: (*) integer indices -> (*, embedding_dim). Each looked-up
    row is built from one slice of each core (``O(n * sum_k r_k r_k+1 emb-prefix)``); the table
    is never formed. The vocabulary is padded to ``prod(voc_modes) >= num_embeddings``.

    Rows at ``padding_idx`` come out zero (and pass no gradient). Cores start normal, scaled
    so that entries have variance 1 (``nn.Embedding``'s N(0, 1)).

    Example::

        emb = TTEmbedding(10000, 256, rank=16, d=3)   # voc (22, 22, 21), emb (8, 8, 4)
        emb(tx.tensor([[1, 2], [4, 5]])).shape        # (2, 2, 256)
    """

    def __init__(self, num_embeddings, embedding_dim, rank=8, voc_modes=None, emb_modes=None,
                 d=3, padding_idx=None, device=None, dtype=None):
        super().__init__()
        op = "TTEmbedding"
        d = len(voc_modes) if voc_modes is not None else (
            len(emb_modes) if emb_modes is not None else d)
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        if voc_modes is None:
            voc_modes = _vocab_modes(self.num_embeddings, d)
        voc_modes = tuple(int(v) for v in voc_modes)
        if len(voc_modes) != d or math.prod(voc_modes) < self.num_embeddings:
            raise ValueError(f"{op}: voc_modes must be {d} ints whose product is at least "
                             f"num_embeddings = {self.num_embeddings}, got {voc_modes}")
        self.voc_modes = voc_modes
        self.emb_modes = modes_for(op, "emb_modes", self.embedding_dim, emb_modes, d)
        if padding_idx is not None:
            if not -self.num_embeddings <= padding_idx < self.num_embeddings:
                raise ValueError(f"{op}: padding_idx must be within num_embeddings, got "
                                 f"{padding_idx}")
            padding_idx %= self.num_embeddings
        self.padding_idx = padding_idx
        ranks = tt_matrix_ranks(op, self.voc_modes, self.emb_modes, rank)
        self._set_cores(tt_matrix_cores(self.voc_modes, self.emb_modes, ranks, 1.0, device,
                                        dtype))

    @classmethod
    def from_dense(cls, embedding_or_weight, rank, voc_modes=None, emb_modes=None, d=3):
        """A TTEmbedding from the TT-SVD of a trained table ``(num_embeddings, dim)`` (an
        ``nn.Embedding`` or a matrix), zero-padded to ``prod(voc_modes)`` rows.
        Example: ``TTEmbedding.from_dense(model.embed, rank=16)``."""
        weight = getattr(embedding_or_weight, "weight", embedding_or_weight)
        if not isinstance(weight, Tensor) or weight.ndim != 2:
            raise TypeError("TTEmbedding.from_dense: expected an nn.Embedding or a 2-d weight "
                            f"Tensor, got {type(embedding_or_weight).__name__}")
        layer = cls(weight.shape[0], weight.shape[1], rank, voc_modes, emb_modes, d,
                    padding_idx=getattr(embedding_or_weight, "padding_idx", None),
                    device=weight.device, dtype=weight.dtype)
        rows = math.prod(layer.voc_modes)
        with no_grad():
            table = weight.detach()
            if rows > weight.shape[0]:
                pad = zeros(rows - weight.shape[0], weight.shape[1], dtype=weight.dtype,
                            device=weight.device)
                table = cat([table, pad], 0)
            cores = tt_matrix_from_dense(table, layer.voc_modes, layer.emb_modes, rank)
            for p, c in zip(layer.cores, cores):
                p.data = c.contiguous()
        return layer

    def to_dense(self):
        """The table ``(num_embeddings, embedding_dim)``; differentiable."""
        return tt_matrix_to_dense(list(self.cores))[:self.num_embeddings]

    def forward(self, input):
        if not isinstance(input, Tensor) or input.dtype.is_floating_point or \
                input.dtype.is_complex:
            raise TypeError("TTEmbedding: expected integer indices, got "
                            f"{getattr(input, 'dtype', type(input).__name__)}")
        flat = input.reshape(-1).long()
        if flat.numel() and (int(flat.min()) < 0 or int(flat.max()) >= self.num_embeddings):
            raise IndexError(f"TTEmbedding: index out of range: expected indices in [0, "
                             f"{self.num_embeddings}), got [{int(flat.min())}, "
                             f"{int(flat.max())}]")
        stride = math.prod(self.voc_modes)
        state = None
        for k, core in enumerate(self.cores):
            stride //= self.voc_modes[k]
            piece = index_select(core, 1, (flat // stride) % self.voc_modes[k])
            piece = piece.permute(1, 0, 2, 3)  # (n, r_k, emb_k, r_k+1)
            if state is None:
                state = piece[:, 0]
            else:
                state = einsum("ber,brfs->befs", state, piece).reshape(
                    flat.shape[0], -1, core.shape[3])
        out = state.reshape(*input.shape, self.embedding_dim)
        if self.padding_idx is not None:
            out = out * (input != self.padding_idx).unsqueeze(-1).to(out.dtype)
        return out

    def extra_repr(self):
        s = (f"{self.num_embeddings}, {self.embedding_dim}, voc_modes={self.voc_modes}, "
             f"emb_modes={self.emb_modes}, rank={self.rank}")
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")
