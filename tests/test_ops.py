"""The op matrix: every registered op against NumPy, torch (values and gradients) and a
float64 numerical gradient check. Driven entirely by ``tensorix.testing`` entries."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import tensorix as tx
from tensorix.testing import all_opinfos, assert_close, gradcheck, gradgradcheck, tolerance
from tensorix.testing.registry import EXEMPT

from ._harness import np_args, outputs, torch, torch_args, tx_args

# The value and first-order gradient checks run on every device of conftest's ``device``
# fixture: 'cpu' and 'cuda' (a real GPU where there is one, else the CuPy stand-in). Inputs
# are made on the host from the samples and moved with .to(device); results are compared on
# the host. The float64 gradchecks stay on the CPU (finite differences add nothing the torch
# gradients do not check on the device).

INFOS = all_opinfos()
VALUE_CASES = [pytest.param(i, d, id=f"{i.name}-{d.name}") for i in INFOS for d in i.dtypes]
GRAD_CASES = [pytest.param(i, d, id=f"{i.name}-{d.name}") for i in INFOS if i.grad
              for d in i.dtypes if d.is_floating_point or d.is_complex]
F64_CASES = [pytest.param(i, id=i.name) for i in INFOS if i.grad and tx.float64 in i.dtypes]
GG_CASES = [pytest.param(i, id=i.name) for i in INFOS if i.gradgrad]


def _rng(info, dtype=None):
    # a stable seed per (op, dtype): Python's hash() of strings changes between processes
    key = f"{info.name}/{getattr(dtype, 'name', '')}".encode()
    return np.random.default_rng(zlib.crc32(key))


def _to(x, device):
    """Move the tensors in ``x`` (an argument: a tensor, a list/tuple of them, or other) to
    ``device``; a tensor that requires grad becomes a leaf there."""
    if isinstance(x, tx.Tensor):
        return x if device == "cpu" else x.detach().to(device).requires_grad_(x.requires_grad)
    if isinstance(x, (list, tuple)) and any(isinstance(e, tx.Tensor) for e in x):
        return type(x)(_to(e, device) for e in x)
    return x


def _dev_args(sample, dtype, device, requires_grad=False, info=None):
    if info is not None and device not in info.devices:
        pytest.skip(f"{info.name} serves {', '.join(info.devices)} only")
    args, kwargs = tx_args(sample, dtype, requires_grad=requires_grad)
    return [_to(a, device) for a in args], {k: _to(v, device) for k, v in kwargs.items()}


def _on(out, device):
    if device != "cpu" and isinstance(out, tx.Tensor):
        assert out.device.type == device, f"result on {out.device}, expected {device}"
    return out


def test_every_public_op_has_an_entry():
    covered = set()
    for info in INFOS:
        covered.add(info.name)
        covered.update(info.aliases)
    public = list(tx.ops.__all__) + [f"linalg.{n}" for n in tx.linalg.__all__]
    missing = [n for n in public if n not in covered and n not in EXEMPT]
    assert not missing, f"public ops without an OpInfo entry or exemption: {missing}"


@pytest.mark.parametrize("info,dtype", VALUE_CASES)
def test_values_against_numpy(info, dtype, device):
    if info.ref is None:
        pytest.skip("no NumPy reference (torch is the oracle)")
    for sample in info.samples(_rng(info, dtype), dtype):
        args, kwargs = _dev_args(sample, dtype, device, info=info)
        rargs, rkwargs = np_args(sample, dtype)
        got = [_on(o, device) for o in outputs(info.op(*args, **kwargs), info.output)]
        want = outputs(info.ref(*rargs, **rkwargs), info.output)
        assert len(got) == len(want), f"{info.name} {sample}: output count"
        rtol, atol = tolerance(dtype, info.tol)
        for k, (g, w) in enumerate(zip(got, want)):
            assert_close(g, w, rtol=rtol, atol=atol, what=f"{info.name} {sample} output {k}")


@pytest.mark.parametrize("info,dtype", VALUE_CASES)
def test_values_against_torch(info, dtype, device):
    if torch is None:
        pytest.skip("torch not installed")
    fn = info.torch_fn()
    if fn is None:
        pytest.skip("no torch counterpart")
    for sample in info.samples(_rng(info, dtype), dtype):
        args, kwargs = _dev_args(sample, dtype, device, info=info)
        targs, tkwargs = torch_args(sample, dtype)
        got = [_on(o, device) for o in outputs(info.op(*args, **kwargs), info.output)]
        want = outputs(fn(*targs, **tkwargs), info.output)
        rtol, atol = tolerance(dtype, info.tol)
        for k, (g, w) in enumerate(zip(got, want)):
            assert_close(g, w, rtol=rtol, atol=atol, what=f"{info.name} {sample} output {k}")


@pytest.mark.parametrize("info,dtype", GRAD_CASES)
def test_grads_against_torch(info, dtype, device):
    if torch is None:
        pytest.skip("torch not installed")
    fn = info.torch_fn()
    if fn is None or info.skip_torch_grad:
        pytest.skip("no torch gradient to compare")
    rng = _rng(info, dtype)
    for sample in info.samples(rng, dtype):
        args, kwargs = _dev_args(sample, dtype, device, requires_grad=True, info=info)
        targs, tkwargs = torch_args(sample, dtype, requires_grad=True)
        got = [o for o in outputs(info.op(*args, **kwargs), info.output)
               if isinstance(o, tx.Tensor) and o.requires_grad]
        want = [o for o in outputs(fn(*targs, **tkwargs), info.output)
                if isinstance(o, torch.Tensor) and o.requires_grad]
        if not got:
            continue
        seeds = [rng.standard_normal(tuple(o.shape)) for o in got]
        tx_leaves = [a for a in args if isinstance(a, tx.Tensor) and a.requires_grad]
        t_leaves = [a for a in targs if isinstance(a, torch.Tensor) and a.requires_grad]
        gx = tx.autograd.grad(got, tx_leaves, [tx.tensor(s, dtype=o.dtype, device=device)
                                               for s, o in zip(seeds, got)], allow_unused=True)
        gt = torch.autograd.grad(want, t_leaves, [torch.tensor(s).to(o.dtype) for s, o in
                                                  zip(seeds, want)], allow_unused=True)
        rtol, atol = tolerance(dtype, info.tol)
        for k, (a, b) in enumerate(zip(gx, gt)):
            if b is None:
                assert a is None or not np.any(a.cpu().numpy()), f"{info.name}: grad {k} is not 0"
                continue
            assert a is not None, f"{info.name} {sample}: grad of input {k} missing"
            _on(a, device)
            assert_close(a, b, rtol=rtol * 4, atol=atol * 4,
                         what=f"{info.name} {sample} grad of input {k}")


@pytest.mark.parametrize("info", F64_CASES)
def test_numerical_gradcheck(info):
    for sample in info.samples(_rng(info), tx.float64):
        args, kwargs = tx_args(sample, tx.float64, requires_grad=True)
        gradcheck(lambda *a: info.op(*a, **kwargs), args, name=f"{info.name} {sample}")


@pytest.mark.parametrize("info", GG_CASES)
def test_second_order_gradcheck(info):
    for sample in info.samples(_rng(info), tx.float64)[:2]:
        args, kwargs = tx_args(sample, tx.float64, requires_grad=True)
        gradgradcheck(lambda *a: info.op(*a, **kwargs), args, name=f"{info.name} {sample}")


def test_nn_functional_families_have_entries():
    """nn.functional's losses, convolutions, pooling, normalization, attention, embeddings and
    linear maps are rows of this matrix (opinfo/nn_functional.py), or exempt with a reason."""
    from tensorix.nn.functional import _attention, _conv, _loss, _norm, _pool

    names = [n for m in (_loss, _conv, _pool, _norm, _attention) for n in m.__all__]
    names += ["nll_loss", "cross_entropy", "embedding", "embedding_bag", "linear", "bilinear",
              "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
              "feature_alpha_dropout"]
    covered = {a for i in INFOS for a in (i.name, *i.aliases)} | set(EXEMPT)
    missing = [n for n in names if f"nn.functional.{n}" not in covered and n not in covered]
    assert not missing, f"nn.functional ops without an OpInfo entry or exemption: {missing}"


def test_numerics_ops_have_entries():
    """numerics' public functions are rows of this matrix (opinfo/numerics.py), with
    references written from the formats' fields, or exempt with a reason."""
    import inspect

    from tensorix import numerics

    names = [f"numerics.{n}" for n in numerics.__all__
             if inspect.isfunction(getattr(numerics, n))]
    covered = {a for i in INFOS for a in (i.name, *i.aliases)} | set(EXEMPT)
    missing = [n for n in names if n not in covered]
    assert not missing, f"numerics ops without an OpInfo entry or exemption: {missing}"
