"""``Identity`` and ``Linear`` (torch's default initialisation and extra_repr)."""

from __future__ import annotations

import math
import warnings
from typing import Any

import engine.autograd.grad_mode as grad_mode
import engine.nn.functional as F

from ..._creation import empty
from ..._tensor import Tensor
from ..parameter import Parameter
from .module import Module

__all__ = ["Bilinear", "Identity", "Linear"]


class Identity(Module):
    """Returns its input unchanged; accepts (and ignores) any constructor arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input


class Linear(Module):
    """``y = x @ weight.T + bias`` over the last dimension of ``x``.

    ``weight`` has shape ``(out_features, in_features)``; both it and ``bias`` start as
    ``U(-1/sqrt(in_features), 1/sqrt(in_features))`` (torch's ``kaiming_uniform_(a=sqrt(5))``).
    An input whose last dimension is not ``in_features`` raises a ``RuntimeError`` naming the
    layer and both shapes.

    Example::

        >>> fc = engine.nn.Linear(20, 30)
        >>> fc(engine.randn(128, 20)).shape
        engine.Size([128, 30])
    """

    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw ``weight`` and ``bias`` from torch's default distributions."""
        _kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = _calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            with grad_mode.no_grad():
                self.bias.uniform_(-bound, bound)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        out_features, in_features = self.weight.shape  # may differ from the attributes after surgery
        if input.ndim == 0 or input.shape[-1] != in_features:
            rows = math.prod(input.shape[:-1]) if input.ndim > 1 else 1
            last = input.shape[-1] if input.ndim else 1
            raise RuntimeError(
                f"mat1 and mat2 shapes cannot be multiplied ({rows}x{last} and {in_features}x{out_features}): "
                f"{self!r} expects input of shape (*, {in_features}) but got input of shape {list(input.shape)}"
            )
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """torch.nn.init's fan computation: dims 1 and 0 times the receptive field size."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field_size = math.prod(tensor.shape[2:]) if tensor.dim() > 2 else 1
    return tensor.size(1) * receptive_field_size, tensor.size(0) * receptive_field_size


def _kaiming_uniform_(tensor: Tensor, a: float) -> Tensor:
    """``kaiming_uniform_(tensor, a, mode='fan_in', nonlinearity='leaky_relu')``: Linear's
    default. Kept private here; ``engine.nn.init`` is the public home of initialisers."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return tensor
    fan_in, _ = _calculate_fan_in_and_fan_out(tensor)
    gain = math.sqrt(2.0 / (1 + a**2))
    bound = math.sqrt(3.0) * gain / math.sqrt(fan_in)
    with grad_mode.no_grad():
        return tensor.uniform_(-bound, bound)


class Bilinear(Module):
    """``y = x1ᵀ A x2 + b``: ``weight`` (out, in1, in2) and ``bias`` (out) both start as
    ``U(-1/sqrt(in1_features), 1/sqrt(in1_features))``, as in torch."""

    __constants__ = ["in1_features", "in2_features", "out_features"]

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(empty((out_features, in1_features, in2_features), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.size(1))
        with grad_mode.no_grad():
            self.weight.uniform_(-bound, bound)
            if self.bias is not None:
                self.bias.uniform_(-bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
