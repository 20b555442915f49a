import numpy as np
import pytest

import tensorix as tx


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
