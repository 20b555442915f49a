"""Helpers for the nn tests: run a tensorix function and its torch twin on the same inputs and
compare values and gradients (a random cotangent per output), through the one oracle
(tensorix.testing.oracle, tolerances per dtype in its COMPOSITE_TOLERANCES)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorix as tx
from tensorix.testing import oracle

torch = pytest.importorskip("torch")


def to_tx(a, requires_grad=False):
    if isinstance(a, torch.Tensor):
        a = a.detach().numpy()
    t = tx.tensor(np.array(a))
    return t.requires_grad_() if requires_grad else t


def to_torch(a, requires_grad=False):
    t = torch.from_numpy(np.array(a))
    return t.requires_grad_() if requires_grad else t


def numpy(t):
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return t.detach().numpy() if isinstance(t, tx.Tensor) else np.asarray(t)


def assert_close(a, b, atol=None, rtol=None, msg=""):
    """The one oracle (tensorix.testing.oracle) with the composites' tolerance for the
    expected value's dtype, unless ``atol``/``rtol`` are given."""
    a, b = numpy(a), numpy(b)
    dtype = tx.dtypes.from_numpy_dtype(b.dtype) if b.dtype.kind in "fc" else None
    oracle.assert_close(a, b, dtype, rtol=rtol, atol=atol, what=msg or "value", composite=True)


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def compare(fn_tx, fn_torch, args, grad=None, atol=None, rtol=None, seed=0, kwargs=None):
    """Call both functions on the numpy ``args`` (floating arrays become tensors that require
    grad when their index is in ``grad``; default: every floating array) and compare outputs
    and input gradients."""
    kwargs = kwargs or {}
    if grad is None:
        grad = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    txa = [to_tx(a, i in grad) if isinstance(a, np.ndarray) else a for i, a in enumerate(args)]
    tha = [to_torch(a, i in grad) if isinstance(a, np.ndarray) else a
           for i, a in enumerate(args)]
    out_x = _flat(fn_tx(*txa, **kwargs))
    out_t = _flat(fn_torch(*tha, **kwargs))
    assert len(out_x) == len(out_t)
    for k, (a, b) in enumerate(zip(out_x, out_t)):
        if b is None:
            assert a is None
            continue
        assert_close(a, b, atol, rtol, f"output {k}")
    if not grad:
        return out_x, out_t
    rng = np.random.default_rng(seed)
    lx, lt = 0, 0
    for a, b in zip(out_x, out_t):
        if b is None or not b.requires_grad:
            continue
        w = rng.standard_normal(tuple(b.shape)).astype(numpy(b).dtype)
        lx = lx + (a * tx.tensor(w)).sum()
        lt = lt + (b * torch.from_numpy(w)).sum()
    lx.backward()
    lt.backward()
    for i in grad:
        if tha[i].grad is None:
            assert txa[i].grad is None or not np.any(numpy(txa[i].grad)), f"grad {i}"
            continue
        assert txa[i].grad is not None, f"input {i} got no gradient"
        assert_close(txa[i].grad, tha[i].grad, atol, rtol, f"grad of input {i}")
    return out_x, out_t


def copy_module(tx_mod, torch_mod):
    """Load torch_mod's parameters and buffers into tx_mod (strict)."""
    sd = {k: tx.tensor(v.detach().numpy().copy()) for k, v in torch_mod.state_dict().items()}
    tx_mod.load_state_dict(sd)
    return tx_mod


def compare_modules(tx_mod, torch_mod, inputs, atol=None, rtol=None, seed=0, grad_inputs=True):
    """Forward both modules on the numpy ``inputs``; compare outputs, input grads and
    parameter grads (by name)."""
    txi = [to_tx(a, grad_inputs and a.dtype.kind == "f") if isinstance(a, np.ndarray) else a
           for a in inputs]
    thi = [to_torch(a, grad_inputs and a.dtype.kind == "f") if isinstance(a, np.ndarray) else a
           for a in inputs]
    out_x = _flat(tx_mod(*txi))
    out_t = _flat(torch_mod(*thi))
    rng = np.random.default_rng(seed)
    lx, lt = 0, 0
    for k, (a, b) in enumerate(zip(out_x, out_t)):
        if isinstance(b, tuple):  # e.g. LSTM's (h, c)
            pairs = list(zip(a, b))
        else:
            pairs = [(a, b)]
        for a2, b2 in pairs:
            if b2 is None:
                continue
            assert_close(a2, b2, atol, rtol, f"output {k}")
            if b2.requires_grad:
                w = rng.standard_normal(tuple(b2.shape)).astype(numpy(b2).dtype)
                lx = lx + (a2 * tx.tensor(w)).sum()
                lt = lt + (b2 * torch.from_numpy(w)).sum()
    if isinstance(lt, int):
        return out_x, out_t
    lx.backward()
    lt.backward()
    for i, (a, b) in enumerate(zip(txi, thi)):
        if isinstance(b, torch.Tensor) and b.requires_grad and b.grad is not None:
            assert_close(a.grad, b.grad, atol, rtol, f"grad of input {i}")
    theirs = dict(torch_mod.named_parameters())
    for name, p in tx_mod.named_parameters():
        q = theirs[name]
        if q.grad is None:
            assert p.grad is None or not np.any(numpy(p.grad)), name
        else:
            assert p.grad is not None, f"{name} got no gradient"
            assert_close(p.grad, q.grad, atol, rtol, f"grad of {name}")
    return out_x, out_t
