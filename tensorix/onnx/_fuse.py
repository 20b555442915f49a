"""Patterns the exporter writes as one ONNX op where the traced primitives would be several.

A tensorix convolution is traced as its implementation: im2col (``Unfold``), a permute and a
reshape of the windows, one batched GEMM with the reshaped weight, and a reshape and permute of
the result (nn/functional/_conv.py). Written primitive by primitive that is exact but slow in a
runtime (a Gather of every window); the same chain is one ONNX ``Conv``, which computes the
same sums. :func:`conv_chains` finds such chains; the exporter writes their head as a Conv and
skips the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..nn.functional._conv import Unfold
from ..ops.linalg import MatMul
from ..ops.movement import Permute, Reshape

__all__ = ["ConvChain", "conv_chains"]


@dataclass
class ConvChain:
    x: object  # the fx node of the convolution's input
    weight: object  # the fx node of the (groups, O/G, C/G * K) weight matrix
    kernel: tuple
    stride: tuple
    padding: tuple
    dilation: tuple
    groups: int
    members: tuple  # the chain's nodes but its head


def _only_user(node, op):
    """The one user of ``node`` if it is a call of ``op``, else None."""
    users = list(node.users)
    return users[0] if len(users) == 1 and users[0].op is op else None


def conv_chains(graph, folded) -> dict:
    """``{head: ConvChain}`` for each Unfold -> Permute -> Reshape -> MatMul -> Reshape ->
    Permute chain of a traced convolution whose inner nodes nothing else reads."""
    chains = {}
    for unfold in graph.call_nodes():
        if unfold.op is not Unfold or unfold in folded:
            continue
        x, kernel, stride, padding, dilation = unfold.args
        nd = len(kernel)
        permute = _only_user(unfold, Permute)
        cols = permute and _only_user(permute, Reshape)
        matmul = cols and _only_user(cols, MatMul)
        if matmul is None or matmul.args[1] is not cols or \
                tuple(permute.args[1]) != (1, *range(2, 2 + nd), 0, *range(2 + nd, 2 + 2 * nd)):
            continue
        out = _only_user(matmul, Reshape)
        head = out and _only_user(out, Permute)
        if head is None or tuple(head.args[1]) != (1, 0, *range(2, 2 + nd)):
            continue
        groups = matmul.meta["shape"][0]
        chains[head] = ConvChain(x, matmul.args[0], tuple(kernel), tuple(stride),
                                 tuple(padding), tuple(dilation), groups,
                                 (unfold, permute, cols, matmul, out))
    return chains
