"""``LBFGS``, as torch.optim.LBFGS: the same iterations, line search, state and numbers.

The algorithm is torch's line for line (itself a port of minFunc / torch7's ``lbfgs.lua``),
run on one flat NumPy vector of all parameters. Scalars that torch keeps as 0-d tensors
(``t`` after the first step, ``ys``, ``ro``, ``H_diag``, the directional derivatives) are NumPy
scalars of the parameters' dtype here, so that mixing them with Python floats promotes as in
torch (a float32 problem stays float32). The state saved between steps holds engine Tensors
where torch holds tensors, so ``state_dict``/``load_state_dict`` round trip as torch's do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import engine.autograd.grad_mode as grad_mode

from .._tensor import Tensor
from .optimizer import Optimizer

__all__ = ["LBFGS"]

# the state keys that hold one value (tensor or number) or a list of them, as torch names them
_SCALAR_KEYS = ("d", "t", "H_diag", "prev_flat_grad", "prev_loss")
_LIST_KEYS = ("old_dirs", "old_stps", "ro", "al")


def _cubic_interpolate(x1: Any, f1: Any, g1: Any, x2: Any, f2: Any, g2: Any,
                       bounds: tuple[Any, Any] | None = None) -> Any:
    """The minimiser of the cubic through two points with values and slopes, clamped to
    ``bounds`` (default: the interval between the points); their midpoint when the cubic has
    no real minimiser (torch's ``_cubic_interpolate``)."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


class _Bracket:
    """The line search's bracket: step sizes, values, gradients and slopes at its ends."""

    def __init__(self, t: list, f: list, g: list, gtd: list | None) -> None:
        self.t, self.f, self.g, self.gtd = t, f, g, gtd

    def set(self, pos: int, t: Any, f: Any, g: np.ndarray, gtd: Any) -> None:
        self.t[pos], self.f[pos], self.g[pos], self.gtd[pos] = t, f, g, gtd  # type: ignore[index]

    def low_high(self) -> tuple[int, int]:
        return (0, 1) if self.f[0] <= self.f[-1] else (1, 0)


def _bracket_phase(obj_func: Callable, x: list, t: Any, d: np.ndarray, f: float, g: np.ndarray, gtd: Any,
                   c1: float, c2: float, max_ls: int) -> tuple[_Bracket, bool, int, int]:
    """Grow the step until an interval holding a strong-Wolfe point is found (or the point
    itself: ``done``). Returns the bracket, done, the evaluations and the iterations made."""
    f_new, g_new = obj_func(x, t, d)
    evals, gtd_new = 1, g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    ls_iter = 0
    while ls_iter < max_ls:
        if abs(gtd_new) <= -c2 * gtd and not (f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev)):
            return _Bracket([t], [f_new], [g_new], None), True, evals, ls_iter
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev) or gtd_new >= 0:
            pair = _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new.copy()], [gtd_prev, gtd_new])
            return pair, False, evals, ls_iter
        min_step, max_step, tmp = t + 0.01 * (t - t_prev), t * 10, t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    # max_ls reached: torch's bracket keeps no slopes, so the zoom phase is skipped (ls_iter == max_ls)
    return _Bracket([0, t], [f, f_new], [g, g_new], None), False, evals, ls_iter


def _zoom_trial(b: _Bracket, insuf_progress: bool) -> tuple[Any, bool]:
    """The next trial step inside the bracket: the cubic's minimiser, moved 10% of the bracket
    away from an end it comes too close to (twice in a row, or beyond it)."""
    t = _cubic_interpolate(b.t[0], b.f[0], b.gtd[0], b.t[1], b.f[1], b.gtd[1])  # type: ignore[index]
    hi, lo = max(b.t), min(b.t)
    eps = 0.1 * (hi - lo)
    if min(hi - t, t - lo) < eps:
        if insuf_progress or t >= hi or t <= lo:
            t = hi - eps if abs(t - hi) < abs(t - lo) else lo + eps
            return t, False
        return t, True
    return t, False


def _strong_wolfe(obj_func: Callable, x: list, t: Any, d: np.ndarray, f: float, g: np.ndarray, gtd: Any,
                  c1: float = 1e-4, c2: float = 0.9, tolerance_change: float = 1e-9,
                  max_ls: int = 25) -> tuple[float, np.ndarray, Any, int]:
    """torch's ``_strong_wolfe`` line search: ``(f_new, g_new, t, evaluations)``."""
    d_norm = np.abs(d).max()
    b, done, evals, ls_iter = _bracket_phase(obj_func, x, t, d, f, g.copy(), gtd, c1, c2, max_ls)
    insuf_progress = False
    low_pos, high_pos = b.low_high()
    while not done and ls_iter < max_ls:
        if abs(b.t[1] - b.t[0]) * d_norm < tolerance_change:
            break
        t, insuf_progress = _zoom_trial(b, insuf_progress)
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= b.f[low_pos]:
            b.set(high_pos, t, f_new, g_new.copy(), gtd_new)
            low_pos, high_pos = (0, 1) if b.f[0] <= b.f[1] else (1, 0)
            continue
        if abs(gtd_new) <= -c2 * gtd:
            done = True
        elif gtd_new * (b.t[high_pos] - b.t[low_pos]) >= 0:
            b.set(high_pos, b.t[low_pos], b.f[low_pos], b.g[low_pos], b.gtd[low_pos])  # type: ignore[index]
        b.set(low_pos, t, f_new, g_new.copy(), gtd_new)
    return b.f[low_pos], b.g[low_pos], b.t[low_pos], evals


def _to_state(value: Any) -> Any:
    """A working value as torch stores it: arrays and NumPy scalars become engine Tensors."""
    if isinstance(value, np.ndarray | np.generic):
        return Tensor._wrap(np.array(value))
    if isinstance(value, list):
        return [_to_state(v) for v in value]
    return value


def _from_state(value: Any) -> Any:
    """A stored value back to a working one: 0-d Tensors to NumPy scalars, others to arrays."""
    if isinstance(value, Tensor):
        data = value._data
        return data[()] if data.ndim == 0 else data.copy()
    if isinstance(value, list):
        return [_from_state(v) for v in value]
    return value


class LBFGS(Optimizer):
    """Implements L-BFGS (torch.optim.LBFGS), optionally with a strong-Wolfe line search.

    ``step(closure)`` runs up to ``max_iter`` iterations (and ``max_eval`` closure calls), each
    a quasi-Newton direction from the last ``history_size`` curvature pairs and a step along
    it; it returns the loss the closure returned on its first call. All its state is global;
    as in torch it lives under the first parameter (``state[params[0]]``): ``func_evals``,
    ``n_iter``, ``d``, ``t``, ``old_dirs``, ``old_stps``, ``ro``, ``H_diag``,
    ``prev_flat_grad``, ``prev_loss`` (and ``al`` once the history is used).

    Args:
        params: parameters (one group only).
        lr: learning rate (default 1).
        max_iter: iterations per ``step`` (default 20).
        max_eval: closure evaluations per ``step`` (default ``max_iter * 5 // 4``).
        tolerance_grad: stop when every gradient entry is at most this in size (default 1e-7).
        tolerance_change: stop when the loss or the parameters change less (default 1e-9).
        history_size: curvature pairs kept (default 100).
        line_search_fn: ``None`` (fixed steps) or ``"strong_wolfe"``.

    Raises:
        ValueError: a negative or several-element ``lr``; more than one parameter group.

    Example::

        >>> opt = engine.optim.LBFGS(model.parameters(), line_search_fn="strong_wolfe")
        >>> def closure():
        ...     opt.zero_grad(); loss = loss_fn(model(x), y); loss.backward(); return loss
        >>> opt.step(closure)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {
            "lr": lr, "max_iter": max_iter, "max_eval": max_eval, "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change, "history_size": history_size, "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params: list[Tensor] = self.param_groups[0]["params"]
        self._numel_cache: int | None = None

    def _numel(self) -> int:
        if self._numel_cache is None:
            self._numel_cache = sum(p.numel() for p in self._params)
        return self._numel_cache

    def _gather_flat_grad(self) -> np.ndarray:
        """All gradients as one new flat array (zeros for parameters without one)."""
        views = [np.zeros(p._data.size, p._data.dtype) if p.grad is None else p.grad._data.reshape(-1)
                 for p in self._params]
        return np.concatenate(views, 0)

    def _add_grad(self, step_size: Any, update: np.ndarray) -> None:
        """``p += step_size * update`` over the parameters' slices of the flat ``update``."""
        offset = 0
        for p in self._params:
            numel = p._data.size
            p._data += step_size * update[offset:offset + numel].reshape(p._data.shape)
            p._version_counter[0] += 1
            offset += numel

    def _clone_param(self) -> list[np.ndarray]:
        return [p._data.copy() for p in self._params]

    def _set_param(self, params_data: list[np.ndarray]) -> None:
        for p, pdata in zip(self._params, params_data, strict=True):
            p._data[...] = pdata
            p._version_counter[0] += 1

    def _evaluate_loss(self, closure: Callable[[], Any]) -> Any:
        with grad_mode.enable_grad():
            return closure()

    def _directional_evaluate(self, closure: Callable[[], Any], x: list[np.ndarray], t: Any,
                              d: np.ndarray) -> tuple[float, np.ndarray]:
        """Loss and flat gradient at ``x + t * d``; the parameters are put back to ``x``."""
        self._add_grad(t, d)
        loss = float(self._evaluate_loss(closure))
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Run up to ``max_iter`` L-BFGS iterations; returns the closure's first result.

        The closure (re-evaluated with grad enabled) must clear the gradients, compute the
        loss, call ``backward`` and return the loss. It returns at once, without a move, when
        the gradient is already within ``tolerance_grad``.
        """
        prev = grad_mode._state.enabled
        grad_mode._state.enabled = False
        try:
            return self._step(closure)
        finally:
            grad_mode._state.enabled = prev

    def _direction(self, state: dict[str, Any], w: dict[str, Any], flat_grad: np.ndarray,
                   history_size: int) -> None:
        """The new search direction ``w['d']``: the steepest descent on the first iteration,
        after it the two-loop recursion over the curvature pairs (updated with the last step's)."""
        if state["n_iter"] == 1:
            w.update(d=-flat_grad, old_dirs=[], old_stps=[], ro=[], H_diag=1)
            return
        y = flat_grad - w["prev_flat_grad"]
        s = w["d"] * w["t"]
        ys = y.dot(s)
        if ys > 1e-10:
            if len(w["old_dirs"]) == history_size:
                for key in ("old_dirs", "old_stps", "ro"):
                    w[key].pop(0)
            w["old_dirs"].append(y)
            w["old_stps"].append(s)
            w["ro"].append(1.0 / ys)
            w["H_diag"] = ys / y.dot(y)
        old_dirs, old_stps, ro = w["old_dirs"], w["old_stps"], w["ro"]
        if "al" not in w:
            w["al"] = [None] * history_size
        al = w["al"]
        q = -flat_grad
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q += -al[i] * old_dirs[i]
        r = q * w["H_diag"]
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r += (al[i] - be_i) * old_stps[i]
        w["d"] = r

    def _step(self, closure: Callable[[], Any]) -> Any:
        group = self.param_groups[0]
        lr = group["lr"]._data.reshape(())[()] if isinstance(group["lr"], Tensor) else group["lr"]
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = self._evaluate_loss(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if np.abs(flat_grad).max() <= tolerance_grad:
            return orig_loss

        # the working copy of the saved state (arrays and NumPy scalars, not Tensors)
        w = {k: _from_state(state.get(k)) for k in _SCALAR_KEYS + _LIST_KEYS if k != "al" or k in state}
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            self._direction(state, w, flat_grad, history_size)
            d = w["d"]
            w["prev_flat_grad"] = flat_grad.copy()
            w["prev_loss"] = loss

            t = w["t"] = min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_param()

                def obj_func(x: list, t: Any, d: np.ndarray) -> tuple[float, np.ndarray]:
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals)
                w["t"] = t
                self._add_grad(t, d)
                opt_cond = np.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:
                    # torch re-evaluates only between iterations (no use after the last one)
                    loss = float(self._evaluate_loss(closure))
                    flat_grad = self._gather_flat_grad()
                    opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if np.abs(d * t).max() <= tolerance_change:
                break
            if abs(loss - w["prev_loss"]) < tolerance_change:
                break
        for key, value in w.items():
            state[key] = _to_state(value)
        return orig_loss
