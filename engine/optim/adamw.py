"""``AdamW``: Adam with decoupled weight decay (torch.optim.AdamW)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    """Implements AdamW: ``p *= 1 - lr * weight_decay`` before the Adam update, so weight decay
    never enters the moments. Same arguments as ``Adam`` (``weight_decay`` defaults to 1e-2).

    Example::

        >>> opt = engine.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
