"""Creation and random ops are not array functions of their inputs (no NumPy twin to compare
values with, no gradient): they are exempt from the op matrix and each is tested directly in
tests/test_creation.py, tests/test_random.py and tests/test_interop.py."""

from ..registry import exempt

exempt("creation op, tested in tests/test_creation.py", "tensor", "as_tensor", "asarray",
       "from_numpy", "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
       "empty_like", "arange", "linspace", "logspace", "eye", "scalar_tensor", "tril_indices",
       "triu_indices")
exempt("interop, tested in tests/test_interop.py", "from_dlpack")
exempt("random op or generator API, tested in tests/test_random.py", "Generator",
       "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
       "set_rng_state", "rand", "randn", "randint", "randperm", "normal", "bernoulli",
       "multinomial", "poisson", "rand_like", "randn_like", "randint_like")
