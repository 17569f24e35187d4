"""``Adam`` (and the decoupled-weight-decay switch ``AdamW`` uses), as torch.optim.Adam."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import engine.optim._functional as F

from .._tensor import Tensor
from .optimizer import Optimizer, check_unsupported_flags, new_step, tensor_steps, use_grad_for_differentiable

__all__ = ["Adam"]


def check_adam_args(lr: Any, betas: Any, eps: float, weight_decay: float) -> tuple[float, float]:
    """torch's argument checks for Adam/AdamW; returns the betas as floats."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    both_floats = isinstance(betas[0], float) and isinstance(betas[1], float)
    both_tensors = isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor)
    if not (both_floats or both_tensors):
        raise ValueError("betas must be either both floats or both Tensors")
    for i, b in enumerate(betas):
        if isinstance(b, Tensor) and b.numel() != 1:
            raise ValueError(f"Tensor betas[{i}] must be 1-element")
    return float(betas[0]), float(betas[1])


class Adam(Optimizer):
    """Implements Adam (torch.optim.Adam), optionally AMSGrad and decoupled weight decay.

    Per step ``t``: ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 * v + (1 - beta2) * g * g``, and
    ``p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)`` (``v`` replaced by its
    running maximum with ``amsgrad``). ``weight_decay`` adds ``wd * p`` to ``g``, or, with
    ``decoupled_weight_decay`` (AdamW), multiplies ``p`` by ``1 - lr * wd`` first.

    Args:
        params: parameters or parameter groups (see ``Optimizer``).
        lr: learning rate (default 1e-3).
        betas: running-average coefficients (default (0.9, 0.999)).
        eps: added to the denominator (default 1e-8).
        weight_decay: L2 penalty (default 0).
        amsgrad: use the AMSGrad variant.
        maximize: ascend instead of descend.
        foreach, fused: accepted for torch compatibility; there is one implementation.
        decoupled_weight_decay: AdamW's weight decay.

    Example::

        >>> opt = engine.optim.Adam(model.parameters(), lr=1e-3)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        betas = check_adam_args(lr, betas, eps, weight_decay)
        check_unsupported_flags(differentiable, capturable)
        defaults = {
            "lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
            "maximize": maximize, "foreach": foreach, "capturable": capturable, "differentiable": differentiable,
            "fused": fused, "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("fused", None)
        tensor_steps(self)

    def _state_for(self, p: Tensor, amsgrad: bool) -> dict[str, Any]:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = new_step()
            state["exp_avg"] = Tensor._wrap(np.zeros_like(p._data))
            state["exp_avg_sq"] = Tensor._wrap(np.zeros_like(p._data))
            if amsgrad:
                state["max_exp_avg_sq"] = Tensor._wrap(np.zeros_like(p._data))
        return state

    @use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform a single optimisation step; returns what ``closure`` (re-evaluated with grad
        enabled) returned, or None. Parameters without a gradient are skipped."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            beta1, beta2 = (float(b) for b in group["betas"])
            amsgrad = group["amsgrad"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self._state_for(p, amsgrad)
                step_t = state["step"]
                step_t._data += 1
                step_t._version_counter[0] += 1
                moments = [state["exp_avg"], state["exp_avg_sq"]] + ([state["max_exp_avg_sq"]] if amsgrad else [])
                F.adam(p._data, p.grad._data, moments[0]._data, moments[1]._data,
                       moments[2]._data if amsgrad else None, float(step_t._data),
                       lr=float(group["lr"]), beta1=beta1, beta2=beta2, eps=group["eps"],
                       weight_decay=group["weight_decay"], maximize=group["maximize"],
                       decoupled_weight_decay=group["decoupled_weight_decay"])
                for t in (p, *moments):
                    t._version_counter[0] += 1
        return loss
