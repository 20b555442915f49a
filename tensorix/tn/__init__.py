"""``tensorix.tn``: tensor networks on tensorix Tensors (any device, float or complex dtype,
differentiable where it means something).

* networks (``_network``): :class:`Node` (a Tensor with index names), :class:`TensorNetwork`
  (bonds checked, contracted along opt_einsum or cotengra paths), :func:`contract_path`;
* matrix product states and operators (``_mps``): :class:`MPS` (canonical forms, compression,
  norms, overlaps, expectation values, two-site gates), :class:`MPO`, :func:`heisenberg_mpo`,
  :func:`ising_mpo`, :func:`svd_split`;
* ground states and time evolution (``_dmrg``): :func:`dmrg2`, :func:`tebd`,
  :func:`trotter_gates`, :func:`lanczos_ground`;
* 2-D lattice models (``_trg``): :func:`trg`, :func:`hotrg`, :func:`ising_tensor`,
  :func:`onsager_free_energy`;
* quantum circuits (``_circuit``): :class:`Circuit` (gates, amplitudes, expectation values,
  gradients through gate angles), :func:`gate_matrix`;
* Pauli strings (``_pauli``): :func:`pauli_matrix`, :func:`pauli_apply`,
  :func:`pauli_decompose`, :func:`pauli_compose`, :func:`pauli_terms`;
* learning (``_classifier``): :class:`MPSClassifier` (Stoudenmire & Schwab), the tree
  :class:`TTNClassifier` and :func:`zorder`, and their :func:`pixel_feature_map`;
* structure search (``_search``): :func:`greedy_rank_search` (greedy rank growth),
  :func:`tnale` (alternating local enumeration over ranks and mode order),
  :class:`StructureSearchResult`.

Example::

    import tensorix as tx
    from tensorix import tn
    res = tn.dmrg2(tn.heisenberg_mpo(10, dtype=tx.float64), bond_dims=[16, 32])
    print(res.energy)   # -4.25803520728...
"""

from ._circuit import GATES, Circuit, gate_matrix
from ._classifier import MPSClassifier, TTNClassifier, pixel_feature_map, zorder
from ._dmrg import DMRGResult, dmrg2, lanczos_ground, tebd, trotter_gates
from ._mps import MPO, MPS, heisenberg_mpo, ising_mpo, svd_split
from ._network import Node, TensorNetwork, contract_path
from ._pauli import pauli_apply, pauli_compose, pauli_decompose, pauli_matrix, pauli_terms
from ._search import StructureSearchResult, greedy_rank_search, tnale
from ._trg import ISING_BETA_C, hotrg, ising_tensor, onsager_free_energy, trg

__all__ = ["Node", "TensorNetwork", "contract_path", "MPS", "MPO", "heisenberg_mpo",
           "ising_mpo", "svd_split", "dmrg2", "DMRGResult", "lanczos_ground", "tebd",
           "trotter_gates", "trg", "hotrg", "ising_tensor", "onsager_free_energy",
           "ISING_BETA_C", "Circuit", "gate_matrix", "GATES", "pauli_matrix",
           "pauli_apply", "pauli_decompose", "pauli_compose", "pauli_terms", "MPSClassifier",
           "pixel_feature_map", "TTNClassifier", "zorder", "greedy_rank_search", "tnale",
           "StructureSearchResult"]
