"""Exemptions for ops/tensor_info.py and ops/handle.py: predicates, functional spellings of
Tensor methods and the layout constants compute no new values to check against references."""

from ..registry import exempt

exempt("a question about a tensor or a functional spelling of a Tensor method; tested in "
       "tests/test_torch_names.py", "is_tensor", "is_floating_point", "is_complex", "is_nonzero",
       "is_same_size", "is_signed", "is_conj", "is_neg", "is_inference", "numel", "detach",
       "fill")

exempt("layout constants (tensorix.strided, the only layout), tested in "
       "tests/test_api_completion.py", "layout", "strided")
