"""LayerNorm: normalisation over the trailing ``normalized_shape`` dims of each sample."""

from __future__ import annotations

from typing import Any

from ..._creation import empty
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from .._functional._utils import layer_error
from ..parameter import Parameter
from .module import Module

__all__ = ["LayerNorm"]


class LayerNorm(Module):
    """``(x - E[x]) / sqrt(Var[x] + eps) * weight + bias`` over the last ``len(normalized_shape)``
    dims. ``weight`` starts at 1 and ``bias`` at 0 (each of shape ``normalized_shape``) when
    ``elementwise_affine``; ``bias=False`` drops the shift.

    Example::

        >>> ln = engine.nn.LayerNorm(10)
        >>> ln(engine.randn(20, 5, 10)).shape
        engine.Size([20, 5, 10])
    """

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(empty(self.normalized_shape, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """``weight`` to 1, ``bias`` to 0."""
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        try:
            return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)
        except RuntimeError as err:
            n = len(self.normalized_shape)
            if tuple(input.shape[input.ndim - n:]) == self.normalized_shape and input.ndim >= n:
                raise
            expected = f"(*, {', '.join(map(str, self.normalized_shape))})"
            raise layer_error(err, self, expected, input.shape) from None

    def extra_repr(self) -> str:
        return ("{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}, bias={use_bias}"
                .format(**self.__dict__, use_bias=self.bias is not None))
