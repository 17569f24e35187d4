"""``NAdam`` (torch.optim.NAdam): Adam with Nesterov momentum and a momentum-decay schedule."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import engine.optim._functional as F

from .._tensor import Tensor
from .optimizer import (
    Optimizer,
    check_betas,
    check_lr,
    check_unsupported_flags,
    new_step,
    tensor_steps,
    use_grad_for_differentiable,
)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """Implements NAdam, as torch.optim.NAdam.

    With ``mu_t = beta1 * (1 - 0.5 * 0.96**(t * momentum_decay))`` and ``mu_product`` their running
    product (kept per parameter as a 0-d tensor, as torch does), the step mixes the current
    gradient and the Nesterov-corrected first moment, both divided by
    ``sqrt(v / (1 - beta2**t)) + eps``. State per parameter: ``step``, ``mu_product``,
    ``exp_avg``, ``exp_avg_sq``.

    Args:
        params: parameters or parameter groups (see ``Optimizer``).
        lr: learning rate (default 2e-3).
        betas: running-average coefficients (default (0.9, 0.999)).
        eps: added to the denominator (default 1e-8).
        weight_decay: L2 penalty (default 0).
        momentum_decay: the momentum schedule's decay (default 4e-3).
        decoupled_weight_decay: multiply ``p`` by ``1 - lr * weight_decay`` (AdamW style) instead.
        foreach: accepted for torch compatibility; there is one implementation.
        maximize: ascend instead of descend.

    Example::

        >>> opt = engine.optim.NAdam(model.parameters(), lr=2e-3)
    """

    def __init__(self, params: Iterable[Any], lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        check_unsupported_flags(differentiable, capturable)
        defaults = {
            "lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize, "foreach": foreach,
            "capturable": capturable, "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0 and not isinstance(p_state["mu_product"], Tensor):
                    mu_product = new_step()
                    mu_product._data[...] = p_state["mu_product"]
                    p_state["mu_product"] = mu_product
        tensor_steps(self)

    @use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform a single optimisation step; returns what ``closure`` (re-evaluated with grad
        enabled) returned, or None. Parameters without a gradient are skipped."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            beta1, beta2 = (float(b) for b in group["betas"])
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = new_step()
                    state["mu_product"] = new_step()
                    state["mu_product"]._data[...] = 1.0
                    state["exp_avg"] = Tensor._wrap(np.zeros_like(p._data))
                    state["exp_avg_sq"] = Tensor._wrap(np.zeros_like(p._data))
                step_t = state["step"]
                step_t._data += 1
                F.nadam(p._data, p.grad._data, state["exp_avg"]._data, state["exp_avg_sq"]._data,
                        state["mu_product"]._data, float(step_t._data), lr=float(group["lr"]), beta1=beta1,
                        beta2=beta2, eps=group["eps"], weight_decay=group["weight_decay"],
                        momentum_decay=group["momentum_decay"],
                        decoupled_weight_decay=group["decoupled_weight_decay"], maximize=group["maximize"])
                for t in (p, step_t, state["mu_product"], state["exp_avg"], state["exp_avg_sq"]):
                    t._version_counter[0] += 1
        return loss
