"""L-BFGS with torch's algorithm, step for step (``torch.optim.LBFGS``, after minFunc).

All parameters form one flat vector ``x`` (complex ones as interleaved real pairs). Each
``step(closure)`` runs up to ``max_iter`` iterations: the two-loop recursion over the last
``history_size`` curvature pairs ``(s, y)`` gives the direction ``d``; the step along it is the
fixed ``lr`` (the first iteration scaled by ``1 / |g|_1``) or, with
``line_search_fn="strong_wolfe"``, a bracketing cubic-interpolation search for a point that
meets the strong Wolfe conditions. The arithmetic runs on raw backend arrays in the
parameters' dtype, in torch's order, so float64 iterates agree with torch's to rounding.

Example::

    opt = tensorix.optim.LBFGS(model.parameters(), lr=1, line_search_fn="strong_wolfe")
    def closure():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        return loss
    for _ in range(10):
        opt.step(closure)
"""

from __future__ import annotations

import math

from ..autograd.grad_mode import enable_grad, no_grad
from ..tensor import Tensor, _make
from .optimizer import Optimizer, as_real, check_hparam

__all__ = ["LBFGS"]

# state entries that are flat vectors (kept as Tensors between steps, so that state_dict
# saves them like any optimizer state) and lists of them
_VECTORS = ("d", "prev_flat_grad")
_LISTS = ("old_dirs", "old_stps")


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clipped to
    ``bounds`` (default: the interval between x1 and x2); the midpoint where the cubic has no
    real minimiser."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = math.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _zoom(obj_func, f, gtd, d_norm, br, ls_iter, c1, c2, tolerance_change, max_ls):
    """The second phase of the strong-Wolfe search: shrink the bracket ``br`` (lists ``t``,
    ``f``, ``g``, ``gtd`` of its two ends) by cubic interpolation until a point meets the
    conditions; returns (f, g, t, evaluations)."""
    evals, done, insuf_progress = 0, False, False
    low, high = (0, 1) if br["f"][0] <= br["f"][-1] else (1, 0)
    while not done and ls_iter < max_ls:
        ts = br["t"]
        if abs(ts[1] - ts[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(ts[0], br["f"][0], br["gtd"][0], ts[1], br["f"][1], br["gtd"][1])
        # keep t away from the bracket's ends unless the last step made too little progress
        eps = 0.1 * (max(ts) - min(ts))
        if min(max(ts) - t, t - min(ts)) < eps:
            if insuf_progress or t >= max(ts) or t <= min(ts):
                t = max(ts) - eps if abs(t - max(ts)) < abs(t - min(ts)) else min(ts) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(t)
        evals += 1
        ls_iter += 1
        gtd_new = g_new.dot(obj_func.d)
        if f_new > (f + c1 * t * gtd) or f_new >= br["f"][low]:
            pos = high
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (ts[high] - ts[low]) >= 0:
                for k in br:
                    br[k][high] = br[k][low]
            pos = low
        br["t"][pos], br["f"][pos], br["g"][pos], br["gtd"][pos] = t, f_new, g_new.copy(), gtd_new
        if pos == high:
            low, high = (0, 1) if br["f"][0] <= br["f"][1] else (1, 0)
    return br["f"][low], br["g"][low], br["t"][low], evals


def _strong_wolfe(obj_func, t, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A step ``t`` along ``obj_func.d`` meeting the strong Wolfe conditions (sufficient
    decrease with ``c1``, curvature with ``c2``): widen until a bracket is found, then zoom.
    ``obj_func(t)`` is (loss, flat gradient) at x + t d. Returns (f, g, t, evaluations)."""
    d = obj_func.d
    d_norm = abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(t)
    evals, ls_iter = 1, 0
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    br = None
    while ls_iter < max_ls:
        # in torch's order: no sufficient decrease, then the curvature condition, then an
        # uphill slope (a point can be both curved enough and uphill: it is accepted)
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            br = {"t": [t_prev, t], "f": [f_prev, f_new], "g": [g_prev, g_new.copy()],
                  "gtd": [gtd_prev, gtd_new]}
            break
        if abs(gtd_new) <= -c2 * gtd:
            return f_new, g_new, t, evals
        if gtd_new >= 0:
            br = {"t": [t_prev, t], "f": [f_prev, f_new], "g": [g_prev, g_new.copy()],
                  "gtd": [gtd_prev, gtd_new]}
            break
        # extrapolate, at least 1% beyond t and at most 10 t
        t_prev, t = t, _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                                          bounds=(t + 0.01 * (t - t_prev), t * 10))
        f_prev, g_prev, gtd_prev = f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(t)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if br is None:  # out of evaluations before a bracket: [0, t], and no zooming
        br = {"t": [0, t], "f": [f, f_new], "g": [g, g_new], "gtd": [None, None]}
    f_new, g_new, t, more = _zoom(obj_func, f, gtd, d_norm, br, ls_iter, c1, c2,
                                  tolerance_change, max_ls)
    return f_new, g_new, t, evals + more


def _two_loop(flat_grad, old_dirs, old_stps, ro, h_diag, al):
    """The L-BFGS direction ``-H g`` by the two-loop recursion over the curvature pairs."""
    q = -flat_grad
    for i in range(len(old_dirs) - 1, -1, -1):
        al[i] = old_stps[i].dot(q) * ro[i]
        q += -al[i] * old_dirs[i]
    r = q * h_diag
    for i in range(len(old_dirs)):
        be_i = old_dirs[i].dot(r) * ro[i]
        r += (al[i] - be_i) * old_stps[i]
    return r


class LBFGS(Optimizer):
    """Limited-memory BFGS (torch's ``LBFGS``): one parameter group; ``step(closure)`` needs
    a closure that zeroes the gradients, computes the loss, calls ``backward()`` and returns
    the loss, and returns the loss of its first evaluation.

    ``max_eval`` defaults to ``max_iter * 5 // 4``; iterations stop when the largest gradient
    entry is at most ``tolerance_grad`` or a step changes the loss or the parameters by less
    than ``tolerance_change``. ``line_search_fn`` is None or ``"strong_wolfe"``. Memory:
    ``2 * history_size + 2`` flat copies of the parameters.

    Example: ``opt = LBFGS([w], lr=1, line_search_fn="strong_wolfe"); opt.step(closure)``.
    """

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if isinstance(lr, Tensor):
            if lr.numel() != 1:
                raise ValueError("LBFGS: Tensor lr must be 1-element")
            lr = float(lr.item())
        check_hparam("LBFGS", "lr", lr, lr >= 0.0, ">= 0")
        check_hparam("LBFGS", "max_iter", max_iter, max_iter >= 1, ">= 1")
        check_hparam("LBFGS", "history_size", history_size, history_size >= 1, ">= 1")
        check_hparam("LBFGS", "line_search_fn", line_search_fn,
                     line_search_fn in (None, "strong_wolfe"), "None or 'strong_wolfe'")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size, line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS: doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # -- the flat vector view of the parameters ---------------------------------------------
    def _gather_flat_grad(self):
        xp = self._params[0].xp
        views = [xp.zeros(as_real(p._data).size, as_real(p._data).dtype) if p.grad is None
                 else as_real(p.grad._data).reshape(-1) for p in self._params]
        return xp.concatenate(views)

    def _add_grad(self, step_size, update):
        offset = 0
        for p in self._params:
            data = as_real(p._data)
            n = data.size
            data += step_size * update[offset:offset + n].reshape(data.shape)
            p._version[0] += 1
            offset += n

    def _set_param(self, values):
        for p, v in zip(self._params, values):
            p._data[...] = v
            p._version[0] += 1

    def _evaluate(self, closure):
        with enable_grad():
            loss = closure()
        return float(loss), self._gather_flat_grad()

    @no_grad()
    def step(self, closure):
        """Run up to ``max_iter`` L-BFGS iterations; returns the closure's first loss."""
        if closure is None:
            raise RuntimeError("LBFGS.step: requires a closure that re-evaluates the model "
                               "and returns the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if abs(flat_grad).max() <= tol_grad:  # already optimal
            return orig_loss

        st = _unpack(state)
        d, t, prev_flat_grad = st.get("d"), st.get("t"), st.get("prev_flat_grad")
        old_dirs, old_stps, ro = st.get("old_dirs"), st.get("old_stps"), st.get("ro")
        h_diag, prev_loss = st.get("H_diag"), st.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:  # steepest descent, empty history
                d = -flat_grad
                old_dirs, old_stps, ro, h_diag = [], [], [], 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:  # keep the pair only where the curvature is positive
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / y.dot(y)
                if "al" not in state:
                    state["al"] = [None] * history_size
                d = _two_loop(flat_grad, old_dirs, old_stps, ro, h_diag, state["al"])
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            t = min(1.0, 1.0 / abs(flat_grad).sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tol_change:  # not a descent direction
                break

            ls_func_evals = 0
            if group["line_search_fn"] == "strong_wolfe":
                x_init = [p._data.copy() for p in self._params]
                obj_func = _Directional(self, closure, x_init, d)
                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, t, loss, flat_grad, gtd, max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = abs(flat_grad).max() <= tol_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:  # re-evaluate unless this is the last iteration
                    loss, flat_grad = self._evaluate(closure)
                    opt_cond = abs(flat_grad).max() <= tol_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if (n_iter == max_iter or current_evals >= max_eval or opt_cond
                    or abs(d * t).max() <= tol_change or abs(loss - prev_loss) < tol_change):
                break

        state.update(_pack(dict(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro,
                                H_diag=h_diag, prev_flat_grad=prev_flat_grad,
                                prev_loss=prev_loss)))
        return orig_loss


class _Directional:
    """``t -> (loss, flat gradient)`` at ``x_init + t d``, the parameters restored after each
    evaluation (the line search's objective)."""

    def __init__(self, opt, closure, x_init, d):
        self.opt, self.closure, self.x_init, self.d = opt, closure, x_init, d

    def __call__(self, t):
        self.opt._add_grad(t, self.d)
        out = self.opt._evaluate(self.closure)
        self.opt._set_param(self.x_init)
        return out


def _pack(st):
    """The iteration state with its arrays as Tensors (how optimizer state is stored)."""
    out = dict(st)
    for k in _VECTORS:
        if out.get(k) is not None:
            out[k] = _make(out[k])
    for k in _LISTS:
        if out.get(k) is not None:
            out[k] = [_make(v) for v in out[k]]
    return out


def _unpack(state):
    """The stored state with its Tensors as raw arrays again (copies of the lists, so that
    a step never edits a state_dict taken earlier)."""
    out = dict(state)
    for k in _VECTORS:
        if isinstance(out.get(k), Tensor):
            out[k] = out[k]._data
    for k in _LISTS:
        if out.get(k) is not None:
            out[k] = [v._data for v in out[k]]
    if out.get("ro") is not None:
        out["ro"] = list(out["ro"])
    return out
