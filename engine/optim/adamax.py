"""``Adamax`` (torch.optim.Adamax): Adam with the infinity norm in place of the second moment."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import engine.optim._functional as F

from .optimizer import (
    Optimizer,
    _zeros,
    check_betas,
    check_lr,
    check_unsupported_flags,
    use_grad_for_differentiable,
)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Implements Adamax, as torch.optim.Adamax.

    ``m = lerp(m, g, 1 - beta1)``; ``u = max(beta2 * u, |g| + eps)``;
    ``p -= lr / (1 - beta1**t) * m / u``. State per parameter: ``step``, ``exp_avg``, ``exp_inf``.

    Args:
        params: parameters or parameter groups (see ``Optimizer``).
        lr: learning rate (default 2e-3).
        betas: running-average coefficients (default (0.9, 0.999)).
        eps: added to the norm (default 1e-8).
        weight_decay: L2 penalty (default 0).
        foreach: accepted for torch compatibility; there is one implementation.
        maximize: ascend instead of descend.

    Example::

        >>> opt = engine.optim.Adamax(model.parameters())
    """

    def __init__(self, params: Iterable[Any], lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, capturable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        check_unsupported_flags(differentiable, capturable)
        defaults = {
            "lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
            "maximize": maximize, "differentiable": differentiable, "capturable": capturable,
        }
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._group_defaults(foreach=None, maximize=False, differentiable=False, capturable=False)

    @use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform a single optimisation step; returns what ``closure`` (re-evaluated with grad
        enabled) returned, or None. Parameters without a gradient are skipped."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            beta1, beta2 = (float(b) for b in group["betas"])
            for p, state, step in self._with_grads(group, _zeros("exp_avg", "exp_inf")):
                F.adamax(p._data, p.grad._data, state["exp_avg"]._data, state["exp_inf"]._data, step,
                         lr=float(group["lr"]), beta1=beta1, beta2=beta2, eps=group["eps"],
                         weight_decay=group["weight_decay"], maximize=group["maximize"])
        return loss
