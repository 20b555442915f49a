"""Creation ops are not array functions of inputs: they are exempt from the op matrix and
tested in tests/test_creation.py."""

from ..registry import exempt

exempt("creation op, tested in tests/test_creation.py", "tensor", "as_tensor", "asarray",
       "from_numpy", "from_dlpack", "zeros", "ones", "full", "empty", "zeros_like",
       "ones_like", "full_like", "empty_like", "arange", "linspace", "logspace", "eye",
       "scalar_tensor")
exempt("returns indices; tested with the indexing ops", "nonzero")
