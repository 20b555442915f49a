"""Tensor completion: low-rank models fitted to the observed entries only, ``min 1/2 ||mask *
(X - model)||^2``. CP by weighted optimisation (CP-WOPT, Acar, Dunlavy, Kolda & Morup 2011:
L-BFGS on the factors through autograd); tensor trains by alternating least squares over the
observed entries (Grasedyck, Kluge & Kramer 2015). Missing entries are never imputed, so the
fit is judged on held-out entries (see ``docs/decomp.md``).
"""

from __future__ import annotations

from ..autograd import enable_grad, no_grad
from ..optim import LBFGS
from ..tensor import _make
from ._base import _fro, check_tensor, make_generator, masked_input, random_like
from ._cp import CPTensor, _check_rank, _initialize
from ._tt import TTTensor, _sweep
from ._tt import _check_rank as _check_tt_rank

__all__ = ["cp_wopt", "tt_completion"]


def _observed(op, tensor, mask, full_fit):
    """``masked_input`` for the completion fits, which need a mask (``full_fit`` is the fit to
    use without one)."""
    if mask is None:
        raise ValueError(f"{op}: mask is required (a Tensor of the tensor's shape, 1 = "
                         f"observed); use {full_fit} for fully observed tensors")
    return masked_input(op, tensor, mask)


def _wopt(work, observed, params, build, n_iter_max, tol):
    """L-BFGS (strong Wolfe line search) on ``params`` for the masked squared error of
    ``build(params)``; returns the relative error on the observed entries per evaluation."""
    norm_obs = max(_fro((work * observed)._data), 1e-300)
    errors = []
    opt = LBFGS(params, lr=1, max_iter=n_iter_max, max_eval=2 * n_iter_max,
                tolerance_grad=0.0, tolerance_change=tol, history_size=30,
                line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        residual = (work - build(params)) * observed
        loss = 0.5 * (residual * residual).sum()
        loss.backward()
        errors.append(float(loss.detach()) ** 0.5 * 2 ** 0.5 / norm_obs)
        return loss

    with enable_grad():
        opt.step(closure)
    return errors


def cp_wopt(tensor, rank, mask, n_iter_max=500, init="random", tol=1e-12, random_state=None,
            return_errors=False):
    """CP completion (CP-WOPT): the rank-``rank`` CP model of ``tensor (I_0, ..., I_{N-1})``
    fitted to the entries where ``mask`` (same shape, 1 = observed) is non-zero, by L-BFGS on
    the factors; missing entries may hold anything, nan included.

    ``init``: 'random' (Acar et al.'s choice; uniform, seeded by ``random_state``), 'svd' (of
    the zero-filled tensor scaled by the observed fraction, which started the fit in a swamp
    in our tests) or a :class:`CPTensor`. Returns a :class:`CPTensor` whose ``to_tensor()``
    predicts the missing entries (and the relative error on the observed entries per function
    evaluation with ``return_errors``). A mask with no observed entry is an error.

    Example: ``cp = cp_wopt(X, 3, mask); pred = cp.to_tensor()[mask == 0]``.
    """
    op = "cp_wopt"
    check_tensor(op, tensor, min_ndim=2)
    _check_rank(op, tensor, rank)
    work, observed = _observed(op, tensor, mask, "parafac")
    gen = make_generator(random_state)
    with no_grad():
        fraction = float(observed.mean())
        weights, *factors = _initialize(op, work / fraction, rank, init, "truncated_svd", gen,
                                        False)
        factors[0] = factors[0] * weights
    params = [f.detach().clone().requires_grad_() for f in factors]
    errors = _wopt(work, observed, params, lambda p: CPTensor((None, p)).to_tensor(),
                   n_iter_max, tol)
    result = CPTensor((None, [p.detach().to(tensor.dtype) for p in params]))
    return (result, errors) if return_errors else result


def tt_completion(tensor, rank, mask, n_iter_max=50, init="svd", tol=1e-10, ridge=1e-10,
                  random_state=None, return_errors=False):
    """Tensor-train completion by alternating least squares (Grasedyck, Kluge & Kramer
    2015): TT cores ``(r_k, I_k, r_{k+1})`` fitted to the entries where ``mask`` is non-zero.

    Each sweep visits the cores left to right then right to left; a core's slices
    ``G_k[:, i, :]`` are each an exact least-squares fit (with a tiny ``ridge`` relative to the
    normal matrix, for slices with few observations) to the observed entries with ``i_k = i``,
    given the contracted left and right parts. ``rank``: an int bound per bond (capped where
    the dims are smaller) or ``N + 1`` ints; ``init``: 'svd' (TT-SVD of the zero-filled
    tensor scaled by the observed fraction) or 'random'. Stops when the relative error on the
    observed entries changes by less than ``tol``. Returns a :class:`TTTensor` (and the
    errors per sweep with ``return_errors``). A mask with no observed entry is an error.

    Example: ``tt = tt_completion(X, 4, mask); pred = tt.to_tensor()[mask == 0]``.
    """
    op = "tt_completion"
    check_tensor(op, tensor, min_ndim=2)
    shape = tuple(tensor.shape)
    ranks = _check_tt_rank(op, shape, rank, ring=False)
    work, observed = _observed(op, tensor, mask, "tensor_train")
    gen = make_generator(random_state)
    with no_grad():
        if init == "svd":
            start = (work / float(observed.mean()))._data
            cores, last = _sweep(op, start, shape, ranks, 0, "truncated_svd", gen, False)
            cores = cores + [last.reshape(last.shape[0], shape[-1], 1)]
        elif init == "random":
            cores = [random_like((ranks[k], s, ranks[k + 1]), work, gen)._data
                     for k, s in enumerate(shape)]
        else:
            raise ValueError(f"{op}: init must be 'svd' or 'random', got {init!r}")
    # raw arrays from here: the observed entries as index columns and values
    xp = work.xp
    flat = xp.nonzero(observed._data.reshape(-1))[0]
    idx = xp.stack(xp.unravel_index(flat, shape), 1)
    values = work._data.reshape(-1)[flat]
    norm_obs, errors = max(float(xp.linalg.norm(values)), 1e-300), []
    order = list(range(len(shape))) + list(range(len(shape) - 2, 0, -1))
    for _ in range(n_iter_max):
        for k in order:
            cores[k] = _als_core(xp, cores, k, idx, values, ridge)
        errors.append(float(xp.linalg.norm(_entries(xp, cores, idx) - values)) / norm_obs)
        if len(errors) > 1 and abs(errors[-2] - errors[-1]) < tol:
            break
    result = TTTensor([_make(c).to(tensor.dtype) for c in cores])
    return (result, errors) if return_errors else result


def _interfaces(xp, cores, idx, k):
    """Left ``(n, r_k)`` and right ``(n, r_{k+1})`` parts of each observed entry: the cores
    before and after ``k`` contracted at the entry's indices."""
    n = idx.shape[0]
    left = xp.ones((n, 1), dtype=cores[0].dtype)
    for j in range(k):
        left = xp.einsum("na,anb->nb", left, cores[j][:, idx[:, j]])
    right = xp.ones((n, 1), dtype=cores[0].dtype)
    for j in range(len(cores) - 1, k, -1):
        right = xp.einsum("anb,nb->na", cores[j][:, idx[:, j]], right)
    return left, right


def _als_core(xp, cores, k, idx, values, ridge):
    """Core ``k`` by least squares, one slice ``i`` at a time over the entries with
    ``i_k = i``; a slice with no observation keeps its values."""
    left, right = _interfaces(xp, cores, idx, k)
    r0, size, r1 = cores[k].shape
    design = (left[:, :, None] * right[:, None, :]).reshape(-1, r0 * r1)
    core = cores[k].copy()
    slot = idx[:, k]
    for i in range(size):
        rows = slot == i
        if not bool(rows.any()):
            continue
        d = design[rows]
        gram = d.T @ d
        gram = gram + ridge * (float(xp.trace(gram)) / gram.shape[0] + 1e-300) * xp.eye(
            gram.shape[0], dtype=gram.dtype)
        core[:, i, :] = xp.linalg.solve(gram, d.T @ values[rows]).reshape(r0, r1)
    return core


def _entries(xp, cores, idx):
    left, _ = _interfaces(xp, cores + [xp.ones((1, 1, 1), dtype=cores[0].dtype)], idx,
                          len(cores))
    return left[:, 0]
