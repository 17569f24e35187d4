"""``Adagrad`` (torch.optim.Adagrad): steps divided by the root of the summed squared gradients."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import engine.optim._functional as F

from .._tensor import Tensor
from .optimizer import Optimizer, check_lr, check_unsupported_flags, new_step, use_grad_for_differentiable

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Implements Adagrad, as torch.optim.Adagrad.

    ``s += g * g``; ``p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)``. As in torch,
    the state (``step`` at 0 and ``sum`` filled with ``initial_accumulator_value``) exists from
    construction on, for every parameter.

    Args:
        params: parameters or parameter groups (see ``Optimizer``).
        lr: learning rate (default 1e-2).
        lr_decay: learning-rate decay per step (default 0).
        weight_decay: L2 penalty (default 0).
        initial_accumulator_value: the starting value of ``sum`` (default 0).
        eps: added to the denominator (default 1e-10).
        foreach, fused: accepted for torch compatibility; there is one implementation.
        maximize: ascend instead of descend.

    Example::

        >>> opt = engine.optim.Adagrad(model.parameters(), lr=1e-2)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        check_lr(lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_unsupported_flags(differentiable)
        defaults = {
            "lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value, "foreach": foreach, "maximize": maximize,
            "differentiable": differentiable, "fused": fused,
        }
        super().__init__(params, defaults)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p: Tensor) -> dict[str, Any]:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = new_step()
            state["sum"] = Tensor._wrap(np.full_like(p._data, self.defaults["initial_accumulator_value"]))
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._group_defaults(foreach=None, maximize=False, differentiable=False, fused=None)

    @use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform a single optimisation step; returns what ``closure`` (re-evaluated with grad
        enabled) returned, or None. Parameters without a gradient are skipped."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self._init_state(p)
                step_t = state["step"]
                step_t._data += 1
                F.adagrad(p._data, p.grad._data, state["sum"]._data, float(step_t._data), lr=float(group["lr"]),
                          lr_decay=group["lr_decay"], weight_decay=group["weight_decay"], eps=group["eps"],
                          maximize=group["maximize"])
                for t in (p, step_t, state["sum"]):
                    t._version_counter[0] += 1
        return loss
