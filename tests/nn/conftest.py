"""tests/nn run torch (the oracle) single-threaded: its small per-step ops (LSTM steps,
attention) otherwise spend most of their time in OpenMP hand-offs on a shared machine
(10 s instead of 0.4 s for the LSTM training test)."""

import pytest


@pytest.fixture(autouse=True, scope="package")
def _torch_single_thread():
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
