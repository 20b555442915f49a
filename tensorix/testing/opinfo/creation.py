"""Creation and random ops are not array functions of their inputs (no NumPy twin to compare
values with, no gradient): they are exempt from the op matrix and each is tested directly in
tests/test_creation.py, tests/test_random.py and tests/test_interop.py.

``complex`` and ``polar`` are differentiable functions of their inputs and take part in the
matrix; their complex output is seen through ``* (1 + 0.5j)`` and ``view_as_real`` (as for
view_as_complex), so the real-valued gradient checks reach both parts of the cotangent.
"""

from __future__ import annotations

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, exempt, register
from ._samples import positive, uniform

exempt("creation op, tested in tests/test_creation.py", "tensor", "as_tensor", "asarray",
       "from_numpy", "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
       "empty_like", "arange", "linspace", "logspace", "eye", "scalar_tensor", "tril_indices",
       "triu_indices")
exempt("interop, tested in tests/test_interop.py", "from_dlpack")
exempt("random op or generator API, tested in tests/test_random.py", "Generator",
       "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
       "set_rng_state", "rand", "randn", "randint", "randperm", "normal", "bernoulli",
       "multinomial", "poisson", "rand_like", "randn_like", "randint_like")
exempt("returns indices; tested with the indexing ops", "nonzero")

_TWIST = 1 + 0.5j  # mixes real and imaginary parts so both gradients matter


def _as_real(z):
    return np.stack([z.real, z.imag], -1)


def _parts_samples(first):
    def samples(rng, dtype):
        return [Sample((first(rng, (3, 4)), uniform(rng, (3, 4)))),
                Sample((first(rng, (2, 1, 4)), uniform(rng, (3, 1))), name="broadcast "),
                Sample((first(rng, ()), uniform(rng, (5,))), name="0-d ")]
    return samples


def _torch_seen(name):
    def fn(a, b):
        import torch

        return torch.view_as_real(getattr(torch, name)(a, b) * _TWIST)
    return fn


register(
    OpInfo("complex", _parts_samples(uniform),
           lambda re, im: _as_real((re + 1j * im) * _TWIST),
           op=lambda re, im: tx.view_as_real(tx.complex(re, im) * _TWIST),
           torch=_torch_seen("complex"), gradgrad=True),
    OpInfo("polar", _parts_samples(positive),
           lambda r, theta: _as_real(r * np.exp(1j * theta) * _TWIST),
           op=lambda r, theta: tx.view_as_real(tx.polar(r, theta) * _TWIST),
           torch=_torch_seen("polar"), gradgrad=True),
)
