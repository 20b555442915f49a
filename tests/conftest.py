import os

import numpy as np
import pytest
from hypothesis import settings

import tensorix as tx

# Property tests run derandomized by default, so CI is reproducible; set
# HYPOTHESIS_PROFILE=explore to search with fresh random examples.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture(autouse=True)
def _restore_global_state():
    """Tests that change global modes or the default dtype don't leak into others."""
    default = tx.get_default_dtype()
    yield
    tx.set_default_dtype(default)
    tx.autograd.set_detect_anomaly(False)
    tx.set_grad_enabled(True)
