"""Public-style PyTorch programs run unmodified on tensorix (``torch`` mapped to tensorix by one
import alias) and on real torch, from the same weights and data: losses agree step by step.

The programs are in ``programs/``; ``benchmarks/bench_compat.py`` times them and writes the
table in docs/compat.md.
"""

import numpy as np
import pytest

from ._alias import program_names, run_pair

torch = pytest.importorskip("torch")

STEPS = 4
# Float32 programs agree to rounding, which the optimizer steps amplify a little; the float64
# L-BFGS program agrees to float64 rounding amplified by its line search.
RTOL = {"sine_lstm_lbfgs": 1e-8}


@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch's own deprecation notices
@pytest.mark.parametrize("name", program_names())
def test_program_matches_torch(name):
    losses_t, losses_x, _, _ = run_pair(name, STEPS)
    assert losses_x.shape == losses_t.shape, (losses_t, losses_x)
    assert np.isfinite(losses_x).all(), losses_x
    np.testing.assert_allclose(losses_x, losses_t, rtol=RTOL.get(name, 2e-4), atol=1e-5,
                               err_msg=f"{name}: tensorix losses differ from torch's")


def test_there_are_at_least_twelve_programs():
    assert len(program_names()) >= 12
