"""Exemptions for ops/tensor_info.py: predicates and functional spellings of Tensor methods
compute no new values to check against references."""

from ..registry import exempt

exempt("a question about a tensor or a functional spelling of a Tensor method; tested in "
       "tests/test_torch_names.py", "is_tensor", "is_floating_point", "is_complex", "is_nonzero",
       "is_same_size", "is_signed", "is_conj", "is_neg", "is_inference", "numel", "detach",
       "fill")
