"""``Rprop`` (torch.optim.Rprop): resilient backpropagation, steps from gradient signs only."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import engine.optim._functional as F

from .._tensor import Tensor
from .optimizer import Optimizer, check_lr, check_unsupported_flags, use_grad_for_differentiable

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Implements the resilient backpropagation algorithm, as torch.optim.Rprop.

    Each element has its own step size (starting at ``lr``): multiplied by ``etas[1]`` when the
    gradient kept its sign since the last step, by ``etas[0]`` when it flipped (that element then
    does not move, and its gradient is remembered as 0), clamped to ``step_sizes``. The update is
    ``p -= sign(g) * step_size``. State per parameter: ``step``, ``prev``, ``step_size``.

    Args:
        params: parameters or parameter groups (see ``Optimizer``).
        lr: the initial step size (default 1e-2).
        etas: (decrease, increase) factors, ``0 < etaminus < 1 < etaplus`` (default (0.5, 1.2)).
        step_sizes: (min, max) step size (default (1e-6, 50)).
        foreach: accepted for torch compatibility; there is one implementation.
        maximize: ascend instead of descend.

    Example::

        >>> opt = engine.optim.Rprop(model.parameters())
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        check_unsupported_flags(differentiable, capturable)
        defaults = {
            "lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach, "maximize": maximize,
            "differentiable": differentiable, "capturable": capturable,
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
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            def init(p: Tensor, state: dict[str, Any], lr: float = float(group["lr"])) -> None:
                state["prev"] = Tensor._wrap(np.zeros_like(p._data))
                state["step_size"] = Tensor._wrap(np.full_like(p.grad._data, lr))

            for p, state, _ in self._with_grads(group, init):
                F.rprop(p._data, p.grad._data, state["prev"]._data, state["step_size"]._data, etaminus=etaminus,
                        etaplus=etaplus, step_size_min=step_size_min, step_size_max=step_size_max,
                        maximize=group["maximize"])
        return loss
