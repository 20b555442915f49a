"""``tensorix.linalg``: linear algebra with the names and semantics of ``torch.linalg``.

Every function takes batches ``(..., m, n)`` and is differentiable (twice, where PyTorch's
is) unless said otherwise. The implementations live in ``tensorix/ops/linalg*.py``; this
module is the public surface.

* inverses and solvers: :func:`inv`, :func:`pinv`, :func:`solve`, :func:`solve_triangular`,
  :func:`lstsq`;
* determinants: :func:`det`, :func:`slogdet`;
* decompositions: :func:`cholesky`, :func:`qr`, :func:`svd`, :func:`svdvals`, :func:`eigh`,
  :func:`eigvalsh`, :func:`lu`, :func:`lu_factor`, :func:`lu_factor_ex` (with :func:`lu_solve`);
* Householder products: :func:`householder_product` (``Q`` from ``tensorix.geqrf``);
* functions of a matrix: :func:`matrix_exp`;
* norms and numbers: :func:`vector_norm`, :func:`matrix_norm`, :func:`norm`, :func:`cond`,
  :func:`matrix_rank`;
* products: :func:`matmul`, :func:`multi_dot`, :func:`matrix_power`, :func:`cross`,
  :func:`vecdot`, :func:`diagonal`.

A singular input to ``inv``/``solve`` or a non-positive-definite one to ``cholesky`` raises
:class:`LinAlgError` (a ``RuntimeError``), as in PyTorch.

Example::

    import tensorix as tx
    A = tx.randn(4, 4, dtype=tx.float64, requires_grad=True)
    x = tx.linalg.solve(A @ A.mT + tx.eye(4, dtype=tx.float64), tx.ones(4, dtype=tx.float64))
    x.sum().backward()
"""

from .ops.linalg import matmul, matrix_power, multi_dot
from .ops.linalg_decomp import (
    LinAlgError,
    cholesky,
    det,
    diagonal,
    eigh,
    eigvalsh,
    inv,
    lstsq,
    matrix_rank,
    pinv,
    qr,
    slogdet,
    solve,
    solve_triangular,
    svd,
    svdvals,
)
from .ops.linalg_lu import householder_product, lu_factor, lu_factor_ex, matrix_exp
from .ops.linalg_lu import linalg_lu as lu
from .ops.linalg_lu import linalg_lu_solve as lu_solve
from .ops.linalg_norm import cond, cross, matrix_norm, norm, vecdot, vector_norm

__all__ = ["LinAlgError", "inv", "pinv", "solve", "solve_triangular", "lstsq", "det",
           "slogdet", "cholesky", "qr", "svd", "svdvals", "eigh", "eigvalsh", "vector_norm",
           "matrix_norm", "norm", "cond", "matrix_rank", "matmul", "multi_dot",
           "matrix_power", "cross", "vecdot", "diagonal", "lu", "lu_factor", "lu_solve",
           "lu_factor_ex", "matrix_exp", "householder_product"]
