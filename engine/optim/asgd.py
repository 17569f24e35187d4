"""``ASGD`` (torch.optim.ASGD): averaged stochastic gradient descent."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import engine.optim._functional as F

from .._tensor import Tensor
from .optimizer import Optimizer, check_lr, check_unsupported_flags, new_step, tensor_steps, use_grad_for_differentiable

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """Implements averaged SGD, as torch.optim.ASGD.

    ``p *= 1 - lambd * eta``; ``p -= eta * g``; the average ``ax`` follows ``p`` (a plain copy
    until step ``t0``, then ``ax += mu * (p - ax)``). After each step
    ``eta = lr / (1 + lambd * lr * t)**alpha`` and ``mu = 1 / max(1, t - t0)``. State per
    parameter: ``step``, ``eta``, ``mu`` (0-d tensors) and ``ax``.

    Args:
        params: parameters or parameter groups (see ``Optimizer``).
        lr: learning rate (default 1e-2).
        lambd: decay term (default 1e-4).
        alpha: power for the eta update (default 0.75).
        t0: the step at which averaging starts (default 1e6).
        weight_decay: L2 penalty (default 0).
        foreach: accepted for torch compatibility; there is one implementation.
        maximize: ascend instead of descend.

    Example::

        >>> opt = engine.optim.ASGD(model.parameters(), lr=1e-2)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        check_unsupported_flags(differentiable, capturable)
        defaults = {
            "lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay, "foreach": foreach,
            "maximize": maximize, "differentiable": differentiable, "capturable": capturable,
        }
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
            for p in group["params"]:
                p_state = self.state.get(p, [])
                for key in ("eta", "mu"):
                    if len(p_state) != 0 and not isinstance(p_state[key], Tensor):
                        value = new_step()
                        value._data[...] = p_state[key]
                        p_state[key] = value
        tensor_steps(self)

    @use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform a single optimisation step; returns what ``closure`` (re-evaluated with grad
        enabled) returned, or None. Parameters without a gradient are skipped."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = new_step()
                    state["eta"] = new_step()
                    state["eta"]._data[...] = float(group["lr"])
                    state["mu"] = new_step()
                    state["mu"]._data[...] = 1.0
                    state["ax"] = Tensor._wrap(np.zeros_like(p._data))
                step_t = state["step"]
                step_t._data += 1
                F.asgd(p._data, p.grad._data, state["ax"]._data, state["eta"]._data, state["mu"]._data,
                       float(step_t._data), lr=float(group["lr"]), lambd=group["lambd"], alpha=group["alpha"],
                       t0=group["t0"], weight_decay=group["weight_decay"], maximize=group["maximize"])
                for t in (p, step_t, state["eta"], state["mu"], state["ax"]):
                    t._version_counter[0] += 1
        return loss
