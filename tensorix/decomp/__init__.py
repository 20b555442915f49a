"""``tensorix.decomp``: tensor decompositions with TensorLy's names and conventions.

* the shared linear algebra (``_base``): :func:`unfold`, :func:`fold`, :func:`khatri_rao`,
  :func:`kronecker`, :func:`mode_dot`, :func:`multi_mode_dot`, :func:`norm`,
  :func:`truncated_svd`, :func:`randomized_svd`;
* CP (``_cp``): :func:`parafac` (ALS, line search, masks), :func:`non_negative_parafac` (HALS),
  :class:`CPTensor`;
* Tucker (``_tucker``): :func:`tucker` (HOSVD / HOOI), :func:`non_negative_tucker`,
  :class:`TuckerTensor`;
* tensor train and ring (``_tt``): :func:`tensor_train` (TT-SVD), :func:`tt_round`,
  :func:`tensor_ring` (TR-SVD),
  :func:`tensor_ring_als` (TR-ALS), :class:`TTTensor`, :class:`TRTensor`;
* NMF (``_nmf``): :func:`non_negative_factorization`, :func:`shift_nmf`,
  :func:`stretch_nmf`; TT-cross
  (``_cross``): :func:`tensor_train_cross`; completion (``_completion``): :func:`cp_wopt`,
  :func:`tt_completion`; symmetric tensors (``_spm``): :func:`subspace_power_method`;
  Tucker packing: :func:`tucker_rank_for_budget`; stable CP (``_stable``): :func:`cp_stabilize`
  (the error-preserving correction of degenerate CP), :func:`cp_sensitivity`.

Every function takes Tensors of any device and floating dtype (16-bit ones are fitted in
float32). Fitting runs without autograd; reconstructions (``to_tensor``), mode products and
contractions are tensorix ops and differentiable.

Example::

    import tensorix as tx
    from tensorix import decomp
    X = tx.randn(10, 12, 14, dtype=tx.float64)
    cp = decomp.parafac(X, rank=5, random_state=0)
    err = (cp.to_tensor() - X).norm() / X.norm()
"""

from ._base import (
    fold,
    khatri_rao,
    kronecker,
    mode_dot,
    multi_mode_dot,
    nndsvda,
    norm,
    randomized_svd,
    svd_flip,
    truncated_svd,
    unfold,
)
from ._completion import cp_wopt, tt_completion
from ._cp import CPTensor, cp_norm, cp_normalize, cp_to_tensor, non_negative_parafac, parafac
from ._cross import tensor_train_cross
from ._nmf import (
    ShiftNMFResult,
    StretchNMFResult,
    non_negative_factorization,
    shift_nmf,
    stretch_nmf,
)
from ._spm import subspace_power_method
from ._stable import cp_sensitivity, cp_stabilize
from ._tt import (
    TRTensor,
    TTTensor,
    tensor_ring,
    tensor_ring_als,
    tensor_train,
    tr_to_tensor,
    tt_round,
    tt_to_tensor,
)
from ._tucker import (
    TuckerTensor,
    non_negative_tucker,
    tucker,
    tucker_rank_for_budget,
    tucker_to_tensor,
)

__all__ = ["unfold", "fold", "khatri_rao", "kronecker", "mode_dot", "multi_mode_dot", "norm",
           "truncated_svd", "randomized_svd", "svd_flip", "nndsvda",
           "CPTensor", "cp_to_tensor", "cp_norm", "cp_normalize", "parafac",
           "non_negative_parafac", "TuckerTensor", "tucker_to_tensor", "tucker",
           "non_negative_tucker", "TTTensor", "TRTensor", "tt_to_tensor", "tr_to_tensor",
           "tensor_train", "tt_round", "tensor_ring", "tensor_ring_als",
           "non_negative_factorization", "shift_nmf", "stretch_nmf", "StretchNMFResult",
           "ShiftNMFResult", "tensor_train_cross",
           "cp_wopt", "tt_completion", "subspace_power_method", "tucker_rank_for_budget",
           "cp_stabilize", "cp_sensitivity"]


def __getattr__(name):
    # the structured nn layers (decomp.layers) load on first use: they pull in nn and numerics
    if name == "layers":
        import importlib

        return importlib.import_module(f"{__name__}.layers")
    raise AttributeError(f"module 'tensorix.decomp' has no attribute {name!r}")
