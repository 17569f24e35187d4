"""``Adadelta`` (torch.optim.Adadelta): per-parameter steps scaled by the ratio of two running RMS values."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import engine.optim._functional as F

from .optimizer import (
    Optimizer,
    _zeros,
    check_lr,
    check_unsupported_flags,
    use_grad_for_differentiable,
)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Implements Adadelta, as torch.optim.Adadelta.

    ``v = rho * v + (1 - rho) * g * g``; ``delta = sqrt(u + eps) / sqrt(v + eps) * g``;
    ``u = rho * u + (1 - rho) * delta * delta``; ``p -= lr * delta``. State per parameter:
    ``step``, ``square_avg`` (``v``), ``acc_delta`` (``u``).

    Args:
        params: parameters or parameter groups (see ``Optimizer``).
        lr: coefficient of delta before it is applied (default 1.0).
        rho: running-average coefficient (default 0.9).
        eps: added for numerical stability (default 1e-6).
        weight_decay: L2 penalty (default 0).
        foreach: accepted for torch compatibility; there is one implementation.
        maximize: ascend instead of descend.

    Example::

        >>> opt = engine.optim.Adadelta(model.parameters())
    """

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        check_unsupported_flags(differentiable, capturable)
        defaults = {
            "lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
            "capturable": capturable, "foreach": foreach, "differentiable": differentiable,
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
            for p, state, _ in self._with_grads(group, _zeros("square_avg", "acc_delta")):
                F.adadelta(p._data, p.grad._data, state["square_avg"]._data, state["acc_delta"]._data,
                           lr=float(group["lr"]), rho=group["rho"], eps=group["eps"],
                           weight_decay=group["weight_decay"], maximize=group["maximize"])
        return loss
