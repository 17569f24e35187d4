"""``RMSprop`` (torch.optim.RMSprop): optional momentum and centering."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import engine.optim._functional as F

from .._tensor import Tensor
from .optimizer import Optimizer, check_unsupported_flags, new_step, tensor_steps, use_grad_for_differentiable

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """Implements RMSprop, as torch.optim.RMSprop.

    ``v = alpha * v + (1 - alpha) * g * g``; the denominator is ``sqrt(v) + eps`` (with
    ``centered``, ``sqrt(v - gbar**2) + eps`` where ``gbar`` is the running mean of ``g``). Without
    momentum ``p -= lr * g / denom``; with it ``buf = momentum * buf + g / denom`` and
    ``p -= lr * buf``.

    Args:
        params: parameters or parameter groups (see ``Optimizer``).
        lr: learning rate (default 1e-2).
        alpha: smoothing constant (default 0.99).
        eps: added to the denominator (default 1e-8).
        weight_decay: L2 penalty (default 0).
        momentum: momentum factor (default 0).
        centered: normalise by the estimated variance of the gradient.
        maximize: ascend instead of descend.
        foreach: accepted for torch compatibility; there is one implementation.

    Example::

        >>> opt = engine.optim.RMSprop(model.parameters(), lr=1e-2, momentum=0.9)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        check_unsupported_flags(differentiable, capturable)
        defaults = {
            "lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
            "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach, "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
        tensor_steps(self)

    def _state_for(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = new_step()
            state["square_avg"] = Tensor._wrap(np.zeros_like(p._data))
            if group["momentum"] > 0:
                state["momentum_buffer"] = Tensor._wrap(np.zeros_like(p._data))
            if group["centered"]:
                state["grad_avg"] = Tensor._wrap(np.zeros_like(p._data))
        return state

    @use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform a single optimisation step; returns what ``closure`` (re-evaluated with grad
        enabled) returned, or None. Parameters without a gradient are skipped."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self._state_for(p, group)
                state["step"]._data += 1
                touched = [p, state["step"], state["square_avg"]]
                grad_avg = state["grad_avg"] if group["centered"] else None
                buf = state["momentum_buffer"] if group["momentum"] > 0 else None
                touched += [t for t in (grad_avg, buf) if t is not None]
                F.rmsprop(p._data, p.grad._data, state["square_avg"]._data,
                          None if grad_avg is None else grad_avg._data, None if buf is None else buf._data,
                          lr=float(group["lr"]), alpha=group["alpha"], eps=group["eps"],
                          weight_decay=group["weight_decay"], momentum=group["momentum"],
                          maximize=group["maximize"])
                for t in touched:
                    t._version_counter[0] += 1
        return loss
