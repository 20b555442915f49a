"""Random low-rank test tensors for the decomposition tests (NumPy arrays, float64)."""

import numpy as np


def cp_tensor(rng, shape, rank):
    factors = [rng.standard_normal((s, rank)) for s in shape]
    letters = "abcdefgh"[:len(shape)]
    spec = ",".join(f"{c}r" for c in letters) + "->" + letters
    return np.einsum(spec, *factors), factors


def tucker_tensor(rng, shape, rank):
    core = rng.standard_normal(rank)
    factors = [rng.standard_normal((s, r)) for s, r in zip(shape, rank)]
    full = core
    for mode, f in enumerate(factors):
        full = np.moveaxis(np.tensordot(f, full, axes=([1], [mode])), 0, mode)
    return full, core, factors


def chain(cores, ring=False):
    """Contract TT (or, with ``ring``, TR) cores ``(r_k, I_k, r_k+1)`` into the full tensor."""
    full = cores[0]
    for c in cores[1:]:
        full = np.tensordot(full, c, axes=([-1], [0]))
    full = np.trace(full, axis1=0, axis2=-1) if ring else full[0, ..., 0]
    return full


def rel_err(approx, exact):
    approx = approx.detach().numpy() if hasattr(approx, "detach") else approx
    return np.linalg.norm(approx - exact) / np.linalg.norm(exact)


def module_gradcheck(module, *inputs, name=None):
    """Float64 gradcheck of ``module(*inputs)`` with respect to its float inputs and all its
    trainable parameters (passed through ``func.functional_call``, since gradcheck perturbs
    copies of its arguments)."""
    from tensorix.func import functional_call
    from tensorix.testing import gradcheck

    names = [n for n, p in module.named_parameters() if p.requires_grad]
    params = [p.detach().requires_grad_() for n, p in module.named_parameters()
              if p.requires_grad]
    k = len(inputs)

    def fn(*args):
        return functional_call(module, dict(zip(names, args[k:])), tuple(args[:k]))

    return gradcheck(fn, [*inputs, *params], name=name or type(module).__name__)


def assert_same_on_device(module, *inputs, device):
    """``module`` on ``device`` gives the CPU module's output and gradients (the CPU one being
    checked against its oracles): a backward of a fixed random weighting of the output."""
    import copy

    import tensorix as tx
    from tensorix.testing import assert_close

    results = []
    for dev in ("cpu", device):
        m = copy.deepcopy(module).to(dev)
        args = [x.to(dev) for x in inputs]
        out = m(*args)
        w = tx.tensor(np.random.default_rng(0).standard_normal(tuple(out.shape)),
                      dtype=out.dtype).to(dev)
        (out * w).sum().backward()
        assert out.device.type == dev
        results.append((out, [p.grad for p in m.parameters() if p.requires_grad]))
    (out_cpu, g_cpu), (out_dev, g_dev) = results
    assert_close(out_dev.cpu(), out_cpu.detach().numpy())
    for a, b in zip(g_cpu, g_dev):
        assert_close(b.cpu(), a.numpy())
