"""CheckpointWrapper's names: state-dict keys (and the wrapper's own named_parameters) leave
``_checkpoint_wrapped_module.`` out, as torch's checkpoint_wrapper does (Module.state_key)."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn
from tensorix.utils.remat import CheckpointWrapper


def _nested(wrap, linear, seq):
    """Sequential(wrap(Sequential(wrap(Linear(4, 4)), Linear(4, 3))), Linear(3, 2))."""
    return seq(wrap(seq(wrap(linear(4, 4)), linear(4, 3))), linear(3, 2))


def test_names_match_torch():
    torch = pytest.importorskip("torch")
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    ours = _nested(CheckpointWrapper, nn.Linear, nn.Sequential)
    theirs = _nested(checkpoint_wrapper, torch.nn.Linear, torch.nn.Sequential)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours[0].named_parameters()] == \
        [n for n, _ in theirs[0].named_parameters()]
    assert list(ours.state_dict(prefix="m.")) == list(theirs.state_dict(prefix="m."))


def test_state_dict_moves_between_wrapped_and_plain():
    tx.manual_seed(0)
    wrapped = _nested(CheckpointWrapper, nn.Linear, nn.Sequential).to(tx.float64)
    plain = _nested(lambda m: m, nn.Linear, nn.Sequential).to(tx.float64)
    assert list(wrapped.state_dict()) == list(plain.state_dict())
    plain.load_state_dict(wrapped.state_dict())
    x = tx.randn(5, 4, dtype=tx.float64)
    np.testing.assert_array_equal(plain(x).detach().numpy(), wrapped(x).detach().numpy())
    fresh = _nested(CheckpointWrapper, nn.Linear, nn.Sequential).to(tx.float64)
    fresh.load_state_dict(plain.state_dict())
    np.testing.assert_array_equal(fresh(x).detach().numpy(), wrapped(x).detach().numpy())
    # the long names are not keys: strict loading names them as unexpected
    long = {n: p.detach() for n, p in wrapped.named_parameters()}
    with pytest.raises(RuntimeError, match='Unexpected key.*_checkpoint_wrapped_module.weight'):
        fresh.load_state_dict(long)


def test_assign_finds_the_wrapped_parameters():
    """load_state_dict(assign=True) puts the given tensors into the wrapped module, whose
    path differs from the key; a tied weight stays tied."""
    tx.manual_seed(0)
    inner = nn.Linear(3, 3, bias=False)
    model = nn.Sequential(CheckpointWrapper(inner), nn.Linear(3, 3, bias=False))
    model[1].weight = inner.weight  # tied
    sd = {k: tx.full((3, 3), float(i + 1)) for i, k in enumerate(model.state_dict())}
    assert list(sd) == ["0.weight", "1.weight"]
    model.load_state_dict(sd, assign=True)
    assert model[0]._checkpoint_wrapped_module.weight is model[1].weight
    assert model[1].weight.requires_grad
    np.testing.assert_array_equal(model[1].weight.detach().numpy(), sd["0.weight"].numpy())


def test_state_key():
    model = nn.Sequential(nn.Linear(2, 2), CheckpointWrapper(nn.Sequential(nn.Linear(2, 2))))
    assert model.state_key("1._checkpoint_wrapped_module.0.weight") == "1.0.weight"
    assert model.state_key("0.weight") == "0.weight"
    assert model.state_key("m.1._checkpoint_wrapped_module.0.bias", "m.") == "m.1.0.bias"
    # a name that only looks like a wrapper's is kept where no wrapper holds it
    odd = nn.Module()
    odd._checkpoint_wrapped_module = nn.Linear(1, 1)
    assert odd.state_key("_checkpoint_wrapped_module.weight") == \
        "_checkpoint_wrapped_module.weight"
