"""Loss layers: MSELoss, L1Loss, NLLLoss, CrossEntropyLoss, BCELoss, BCEWithLogitsLoss.

Each wraps its ``F.*`` function with the settings given at construction. Class weights are
buffers (``weight``, ``pos_weight``), as in torch. Errors from a bad input/target pair are
torch's, extended with the layer and both shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._tensor import Tensor
from .. import functional as F
from .._functional._utils import check_reduction, shape_str
from .._functional.loss import legacy_get_string
from .module import Module

__all__ = ["BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "L1Loss", "MSELoss", "NLLLoss"]


class _Loss(Module):
    reduction: str

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            self.reduction = legacy_get_string(size_average, reduce)
        else:
            self.reduction = reduction

    def _call(self, fn: Callable[..., Tensor], input: Tensor, target: Tensor, **kwargs: Any) -> Tensor:  # noqa: A002
        check_reduction(self.reduction)  # a bad setting is not a shape problem: torch's message as is
        try:
            return fn(input, target, reduction=self.reduction, **kwargs)
        except (RuntimeError, ValueError, IndexError) as err:
            raise type(err)(
                f"{err}: {self!r} got input of shape {shape_str(input.shape)} and target of shape "
                f"{shape_str(target.shape)}"
            ) from None


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """Mean (or sum, or per-element) absolute difference between input and target."""

    __constants__ = ["reduction"]

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return self._call(F.l1_loss, input, target)


class MSELoss(_Loss):
    """Mean (or sum, or per-element) squared difference between input and target."""

    __constants__ = ["reduction"]

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return self._call(F.mse_loss, input, target)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class-index targets under log-probability inputs."""

    __constants__ = ["ignore_index", "reduction"]

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None, ignore_index: int = -100,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return self._call(F.nll_loss, input, target, weight=self.weight, ignore_index=self.ignore_index)


class CrossEntropyLoss(_WeightedLoss):
    """``log_softmax`` + NLL over raw scores, for class indices (with ``ignore_index``,
    ``label_smoothing`` and class ``weight``) or class probabilities.

    Example::

        >>> loss = engine.nn.CrossEntropyLoss()
        >>> loss(engine.randn(3, 5, requires_grad=True), engine.tensor([1, 0, 4])).grad_fn
        <NllLossBackward0 object at ...>
    """

    __constants__ = ["ignore_index", "reduction", "label_smoothing"]

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None, ignore_index: int = -100,
                 reduce: bool | None = None, reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return self._call(F.cross_entropy, input, target, weight=self.weight, ignore_index=self.ignore_index,
                          label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """Binary cross entropy between probabilities ``input`` and targets in [0, 1]."""

    __constants__ = ["reduction"]

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return self._call(F.binary_cross_entropy, input, target, weight=self.weight)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid + binary cross entropy in one numerically stable step, with optional ``weight``
    and per-class ``pos_weight`` (both buffers)."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean", pos_weight: Tensor | None = None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return self._call(F.binary_cross_entropy_with_logits, input, target, weight=self.weight,
                          pos_weight=self.pos_weight)
