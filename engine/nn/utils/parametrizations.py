"""``torch.nn.utils.parametrizations.weight_norm``: weight normalisation as a parametrization
(``parametrizations.weight.original0`` = g, ``original1`` = v)."""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor
from ..modules.module import Module
from . import parametrize
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["weight_norm"]


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Any, name: str = "weight", dim: int | None = 0) -> Any:
    """``module.<name>`` recomputed as ``g · v / ‖v‖`` on every access."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module
