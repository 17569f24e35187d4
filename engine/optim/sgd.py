"""``SGD``: stochastic gradient descent with momentum, dampening, Nesterov, weight decay (torch.optim.SGD)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import engine.optim._functional as F

from .._tensor import Tensor
from .optimizer import Optimizer, check_unsupported_flags, use_grad_for_differentiable

__all__ = ["SGD"]


class SGD(Optimizer):
    """Implements stochastic gradient descent (optionally with momentum), as torch.optim.SGD.

    With ``g`` the gradient (negated when ``maximize``) plus ``weight_decay * p``: the momentum
    buffer starts as ``g`` and then becomes ``momentum * buf + (1 - dampening) * g``; the update
    is ``p -= lr * (g + momentum * buf if nesterov else buf)``.

    Args:
        params: parameters or parameter groups (see ``Optimizer``).
        lr: learning rate (default 1e-3).
        momentum, dampening, weight_decay: as above (default 0).
        nesterov: Nesterov momentum (needs ``momentum > 0`` and ``dampening == 0``).
        maximize: ascend instead of descend.
        foreach, fused: accepted for torch compatibility; there is one implementation.

    Example::

        >>> opt = engine.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        check_unsupported_flags(differentiable)
        defaults = {
            "lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
            "nesterov": nesterov, "maximize": maximize, "foreach": foreach, "differentiable": differentiable,
            "fused": fused,
        }
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    @use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform a single optimisation step; returns what ``closure`` (re-evaluated with grad
        enabled) returned, or None. Parameters without a gradient are skipped."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            momentum = group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                # torch touches self.state[p] only when there is momentum (state stays empty otherwise)
                state = self.state[p] if momentum != 0 else None
                buf = state.get("momentum_buffer") if state is not None else None
                new_buf = F.sgd(p._data, p.grad._data, None if buf is None else buf._data,
                                lr=float(group["lr"]), momentum=momentum, dampening=group["dampening"],
                                weight_decay=group["weight_decay"], nesterov=group["nesterov"],
                                maximize=group["maximize"])
                p._version_counter[0] += 1
                if state is not None:
                    if buf is None:
                        state["momentum_buffer"] = Tensor._wrap(new_buf)
                    else:
                        buf._version_counter[0] += 1
        return loss
