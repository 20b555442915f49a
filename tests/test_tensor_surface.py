"""The Tensor surface that is not an op: ``Tensor.xp``."""

import numpy as np

import tensorix as tx
from tensorix import backend


def test_xp_is_the_array_module_of_the_storage(device):
    x = tx.arange(6.0, device=device).reshape(2, 3)
    assert x.xp is backend.array_module(x._data)
    assert (x.xp is np) == (device == "cpu")
    assert x.T.xp is x.xp and x.sum().xp is x.xp  # views and op results keep their device
    y = x.xp.exp(x._data)  # the module computes on the tensor's own storage
    assert type(y) is type(x._data)
    np.testing.assert_allclose(tx.tensor(y).cpu().numpy(), np.exp(np.arange(6.0)).reshape(2, 3))
