"""GEMMs written straight into the buffer of the Cat that joins them.

Attention's backward ends in ``cat([dq, dk, dv], -1)`` (the gradient of the fused q, k, v
projection), each piece a head merge of a batched GEMM: ``gemm(...).permute(0, 2, 1, 3)
.reshape(b, t, c)`` (``dk`` permuted by ``(0, 3, 1, 2)``, ``dq`` scaled by a constant first).
Run as written, each piece's permuted result is copied by its Reshape, then again by the Cat.
Here the Cat's buffer is allocated before its first piece, and each piece's GEMM (or its
scaling Mul) writes into the piece's slice of it, laid out so that the Permute and the
Reshape after it are views of that slice: the Cat then finds its pieces already in place and
copies nothing. A GEMM whose target slice has its rows, not its columns, unit-strided (``dk``)
is run transposed (``(b^T a^T)^T``, the same dot products).

Every step checks at run time what the rewrite relies on (NumPy arrays, BLAS dtypes, no
dispatch hook, a GEMM the thread pool does not split, the scaling Mul's result dtype) and
otherwise runs its op as eager does; the Cat step then sees a piece that is not its slice and
concatenates as eager does. Values are eager's: the same GEMMs and the same multiplications,
stored elsewhere.
"""

from __future__ import annotations

import numpy as np

from ..autograd.grad_mode import modes
from ..fx.graph import Node
from ..ops.elementwise import Mul
from ..ops.linalg import MatMul
from ..ops.movement import Permute, Reshape
from ..ops.shape import Cat
from ..tensor import _make
from .layouts import BLAS_FLOATS, gemm_step

__all__ = ["cat_pieces", "gemm_into", "scale_into", "cat_step"]



def _only_user(node, op):
    users = list(node.users)
    return users[0] if len(users) == 1 and users[0].op is op else None


def cat_pieces(graph) -> dict:
    """``{node: (box, k)}`` for the nodes that write piece ``k`` of a Cat straight into its
    buffer (a MatMul, or the Mul by a constant after one), and ``{cat: box}`` for the Cats;
    ``box`` is the list all steps of one Cat share (its buffer while the pieces run)."""
    plan = {}
    for cat in graph.nodes:
        if cat.op is not Cat or len(cat.args) < 3 or type(cat.args[0]) is not int:
            continue
        shape = cat.meta.get("shape")
        pieces = cat.args[1:]
        if not shape or cat.args[0] not in (len(shape) - 1, -1) or \
                not all(type(p) is Node for p in pieces) or len(set(pieces)) != len(pieces):
            continue
        writers = []
        for p in pieces:
            w = _writer(p, cat)
            if w is None:
                break
            writers.append(w)
        else:
            box = [None, None]  # the buffer, the shape it is allocated in
            offset = 0
            for p, (node, perm) in zip(pieces, writers):
                width = p.meta["shape"][-1]
                plan[node] = (box, cat, offset, width, p.meta["shape"], perm)
                offset += width
            plan[cat] = (box, cat, 0, 0, None, None)
    return plan


def _writer(piece, cat):
    """The node writing ``piece`` (Reshape(Permute(MatMul [* constant]))) and its perm."""
    if piece.op is not Reshape or len(piece.users) != 1 or type(piece.args[0]) is not Node:
        return None
    perm_node = piece.args[0]
    if perm_node.op is not Permute or _only_user(perm_node, Reshape) is not piece:
        return None
    src, perm = perm_node.args[0], perm_node.args[1]
    if type(src) is not Node or not isinstance(perm, (tuple, list)) or len(src.users) != 1:
        return None
    if src.op is Mul:  # the scaled dq: the GEMM as eager's, the Mul into the slice
        if len(src.args) != 2 or type(src.args[0]) is not Node or src.args[0].op is not MatMul \
                or len(src.args[0].users) != 1 or type(src.args[1]) is not Node \
                or src.args[1].op != "constant" or src.args[1].meta.get("shape") != ():
            return None
    elif src.op is not MatMul or len(src.args) != 2 or \
            not all(type(a) is Node for a in src.args):
        return None
    if len(src.meta.get("shape", ())) != len(perm) or len(perm) < 3:
        return None
    return src, tuple(int(i) for i in perm)


def _target(box, cat, offset, width, perm, out_shape, dtype):
    """The array (in the GEMM's own shape) whose Permute by ``perm`` and Reshape to the
    piece's shape are views of the piece's slice of the Cat buffer; None if none is."""
    cat_shape = tuple(cat.meta["shape"])
    if box[0] is None or box[0].dtype != dtype:
        box[0] = np.empty(cat_shape, dtype)
    part = box[0][..., offset:offset + width]
    permuted_shape = tuple(out_shape[i] for i in perm)
    try:
        target = np.reshape(part, permuted_shape, copy=False)
    except ValueError:
        return None
    return target.transpose(tuple(int(i) for i in np.argsort(perm)))


def gemm_into(out, a, b, entry, dtype):
    """The step of a MatMul that writes its piece of a Cat (``entry`` from
    :func:`cat_pieces`)."""
    box, cat, offset, width, _, perm = entry

    def into(x, y, shape):
        if len(shape) != len(perm):
            return None
        view = _target(box, cat, offset, width, perm, shape, x.dtype)
        return view if view is not None and _gemm(x, y, view) else None
    return gemm_step(out, a, b, dtype, into)


def _gemm(x, y, view):
    """``x @ y`` into ``view`` by BLAS (pinned by :func:`whole_gemm_shape`): as it is where its
    rows are unit-strided, as ``(y^T @ x^T)^T`` where its columns are."""
    size = view.itemsize
    if view.strides[-1] == size:
        np.matmul(x, y, out=view)
        return True
    if view.strides[-2] == size:
        np.matmul(y.swapaxes(-1, -2), x.swapaxes(-1, -2), out=view.swapaxes(-1, -2))
        return True
    return False


def scale_into(out, a, c, entry, dtype):
    """The step of the Mul by a constant after a GEMM, written into its piece of a Cat."""
    box, cat, offset, width, _, perm = entry
    apply = Mul.apply

    def run(env):
        ta, tc = env[a], env[c]
        x, k = ta._data, tc._data
        if type(x) is np.ndarray and type(k) is np.ndarray and x.dtype in BLAS_FLOATS and \
                np.result_type(x, k) == x.dtype and not modes.state.hooked:
            view = _target(box, cat, offset, width, perm, x.shape, x.dtype)
            if view is not None:
                np.multiply(x, k, out=view)  # eager's Mul: the same product, stored here
                env[out] = _make(view, dtype)
                return
        env[out] = apply(ta, tc)
    return run


def cat_step(out, dim, pieces, entry, dtype):
    """The Cat's step: its buffer when every piece is its slice there, else Cat.apply."""
    box = entry[0]
    apply = Cat.apply

    def run(env):
        buf, box[0] = box[0], None  # the next call allocates afresh (this one is the output)
        ts = [env[p] for p in pieces]
        if buf is not None and not modes.state.hooked:
            offset, ok = 0, True
            addr, strides = buf.ctypes.data, buf.strides
            for t in ts:
                x = t._data
                w = x.shape[-1] if type(x) is np.ndarray else -1
                if w < 0 or x.strides != strides or x.shape[:-1] != buf.shape[:-1] or \
                        x.ctypes.data != addr + offset * buf.itemsize:
                    ok = False
                    break
                offset += w
            if ok and offset == buf.shape[-1]:
                env[out] = _make(buf, dtype)
                return
        env[out] = apply(dim, *ts)
    return run
