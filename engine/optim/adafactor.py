"""``Adafactor`` (torch.optim.Adafactor, torch 2.5+): Adam-like steps with a factored second moment."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import engine.optim._functional as F

from .._tensor import Tensor
from .optimizer import Optimizer, use_grad_for_differentiable

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Implements Adafactor as torch.optim.Adafactor (Shazeer & Stern 2018, torch's variant).

    A parameter with two or more dims keeps only a row and a column mean of the squared gradient
    (``row_var`` (..., R, 1), ``col_var`` (..., 1, C)) and estimates the second moment as their
    outer product over the row mean; a vector keeps a full ``variance``. Per step ``t``: the
    averages move towards the new means by ``t ** beta2_decay``; the update ``g / sqrt(v)`` is
    scaled down to RMS ``d`` when larger, and the step size is
    ``max(eps2, RMS(p)) * min(lr, 1/sqrt(t))``. ``weight_decay`` multiplies ``p`` by
    ``1 - lr * weight_decay`` first (decoupled).

    Args:
        params: parameters or parameter groups (see ``Optimizer``).
        lr: the cap on the relative step size (default 1e-2).
        beta2_decay: exponent of the second-moment decay (default -0.8, must be <= 0).
        eps: (eps1, eps2): eps1 bounds the variance from below (None: the dtype's machine
            epsilon); eps2 bounds the parameter RMS from below (default (None, 1e-3)).
        d: the clipping threshold on the update's RMS (default 1.0, must be >= 1).
        weight_decay: decoupled weight decay (default 0).
        foreach: accepted for torch compatibility; there is one implementation.
        maximize: ascend instead of descend.

    Example::

        >>> opt = engine.optim.Adafactor(model.parameters(), lr=1e-2)
    """

    def __init__(self, params: Iterable[Any], lr: float | Tensor = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach: bool | None = None, maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._group_defaults(foreach=None)

    @staticmethod
    def _init(p: Tensor, state: dict[str, Any]) -> None:
        g = p.grad._data
        if g.ndim > 1:
            state["row_var"] = Tensor._wrap(np.zeros(g.shape[:-1] + (1,), g.dtype))
            state["col_var"] = Tensor._wrap(np.zeros(g.shape[:-2] + (1, g.shape[-1]), g.dtype))
        else:
            state["variance"] = Tensor._wrap(np.zeros_like(g))

    @use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform a single optimisation step; returns what ``closure`` (re-evaluated with grad
        enabled) returned, or None. Parameters without a gradient are skipped."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            eps1, eps2 = group["eps"]
            for p in group["params"]:
                if p.grad is not None and p.grad._data.dtype.kind == "c":
                    raise RuntimeError("Adafactor does not support complex parameters")
            for p, state, step in self._with_grads(group, self._init):
                if eps1 is None:  # torch fixes it from the first parameter's dtype, for the group
                    eps1 = float(np.finfo(p._data.dtype).eps)
                _adafactor(p._data, p.grad._data, state, step, lr=float(group["lr"]),
                           beta2_decay=group["beta2_decay"], eps1=eps1, eps2=eps2, d=group["d"],
                           weight_decay=group["weight_decay"], maximize=group["maximize"])
        return loss


def _norm(a: np.ndarray, axis: int | None = None, keepdims: bool = False) -> np.ndarray:
    return np.sqrt(np.sum(a * a, axis=axis, keepdims=keepdims))


def _adafactor(p: np.ndarray, grad: np.ndarray, state: dict[str, Any], step: float, *, lr: float,
               beta2_decay: float, eps1: float, eps2: float, d: float, weight_decay: float, maximize: bool) -> None:
    """torch's ``_single_tensor_adafactor`` for one parameter, in its order of operations."""
    grad = -grad if maximize else grad
    one_minus_beta2_t = step ** beta2_decay
    rho_t = min(lr, 1 / (step ** 0.5))
    alpha = max(eps2, float(_norm(p)) / (p.size ** 0.5)) * rho_t
    if weight_decay != 0:
        p *= F.scalar(1 - lr * weight_decay, p)
    if grad.ndim > 1:
        row_var, col_var = state["row_var"]._data, state["col_var"]._data
        F.lerp_(row_var, np.square(_norm(grad, -1, True)) / F.scalar(grad.shape[-1], grad), one_minus_beta2_t)
        F.lerp_(col_var, np.square(_norm(grad, -2, True)) / F.scalar(grad.shape[-2], grad), one_minus_beta2_t)
        var_estimate = row_var @ col_var
        var_estimate /= np.maximum(row_var.mean(axis=-2, keepdims=True), F.scalar(eps1, p))
    else:
        variance = state["variance"]._data
        F.lerp_(variance, grad * grad, one_minus_beta2_t)
        var_estimate = variance.copy()
    update = 1 / np.sqrt(np.maximum(var_estimate, F.scalar(eps1 * eps1, p)))
    update *= grad
    denom = max(1.0, float(_norm(update)) / ((update.size ** 0.5) * d))
    F.add_scaled_(p, update, -alpha / denom)
