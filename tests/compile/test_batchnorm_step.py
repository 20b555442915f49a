"""A compiled training step of a CNN with BatchNorm: the batch count (``num_batches_tracked``)
is counted by the BatchNorm primitive, so the step is one graph with no break, and its running
statistics move once per call, as eager's (the trace's own run is undone where the compiled
graph runs the first call again: the primitive's ``_writes`` rule)."""

import numpy as np
import pytest

import tensorix as tx

nn = tx.nn
NUMPY = {"kernels": "numpy"}


def _cnn(momentum):
    tx.manual_seed(0)
    return nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4, momentum=momentum), nn.ReLU(),
                         nn.Flatten(), nn.Linear(4 * 4 * 4, 3)).to(tx.float64)


def _train(net, compiled, steps=5):
    opt = tx.optim.SGD(net.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.mse_loss(net(x), y)
        loss.backward()
        opt.step()
        return loss

    run = tx.compile(step, options=NUMPY) if compiled else step
    g = tx.Generator().manual_seed(1)
    losses = [run(tx.randn(5, 2, 6, 6, generator=g, dtype=tx.float64),
                  tx.randn(5, 3, generator=g, dtype=tx.float64)).item() for _ in range(steps)]
    return losses, run


@pytest.mark.parametrize("momentum", [0.1, None])  # None: the cumulative average, 1 / count
def test_compiled_cnn_step_with_batchnorm_is_one_graph_and_equals_eager(momentum):
    ref, comp = _cnn(momentum), _cnn(momentum)
    losses_ref, _ = _train(ref, False)
    losses, run = _train(comp, True)
    np.testing.assert_allclose(losses, losses_ref, rtol=1e-12, atol=1e-12)
    assert not run.stats["breaks"], run.stats["breaks"]
    report = run.explain()
    assert report.graph_count == 1 and report.graph_break_count == 0
    want, got = ref.state_dict(), comp.state_dict()
    assert int(got["1.num_batches_tracked"].item()) == 5
    for k, v in want.items():  # parameters, running statistics and the batch count
        np.testing.assert_allclose(got[k].numpy(), v.numpy(), rtol=1e-12, atol=1e-12,
                                   err_msg=k)


def test_compiled_batchnorm_module_moves_running_stats_once_per_call():
    """tx.compile(module) in training mode (forward with grad, then under no_grad): the
    running statistics and the count after three calls are eager's."""
    for grad in (True, False):
        ref, comp = _cnn(None), _cnn(None)
        compiled = tx.compile(comp, options=NUMPY)
        g = tx.Generator().manual_seed(2)
        for _ in range(3):
            x = tx.randn(4, 2, 6, 6, generator=g, dtype=tx.float64)
            with tx.set_grad_enabled(grad):
                np.testing.assert_allclose(compiled(x).detach().numpy(),
                                           ref(x).detach().numpy(), rtol=1e-12, atol=1e-12)
        for k in ("1.running_mean", "1.running_var", "1.num_batches_tracked"):
            np.testing.assert_allclose(comp.state_dict()[k].numpy(),
                                       ref.state_dict()[k].numpy(), rtol=1e-12, err_msg=k)
