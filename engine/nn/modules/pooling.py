"""MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d, AdaptiveMaxPool2d (torch's attributes and repr)."""

from __future__ import annotations

from typing import Any

import engine.nn.functional as F

from ..._tensor import Tensor
from .._functional._utils import layer_error
from .module import Module

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AvgPool1d",
           "AvgPool2d", "AvgPool3d", "MaxPool1d", "MaxPool2d", "MaxPool3d"]

_EXPECTED = "(N, C, H, W) or (C, H, W)"


def _shape_ok(input: Tensor) -> bool:  # noqa: A002
    return input.ndim in (3, 4) and all(n > 0 for n in input.shape[-3:])


def _call(layer: Module, fn, input: Tensor, *args: Any) -> Any:  # noqa: A002
    """Run the functional op; a wrong input shape re-raises torch's error naming the layer."""
    try:
        return fn(input, *args)
    except RuntimeError as err:
        if _shape_ok(input):
            raise
        raise layer_error(err, layer, _EXPECTED, input.shape) from None


class MaxPool2d(Module):
    """Max over ``kernel_size`` windows (``stride`` defaults to ``kernel_size``); with
    ``return_indices`` the forward also returns the flat index of each maximum.

    Example::

        >>> engine.nn.MaxPool2d(2)(engine.randn(1, 1, 4, 4)).shape
        engine.Size([1, 1, 2, 2])
    """

    __constants__ = ["kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode"]

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return ("kernel_size={kernel_size}, stride={stride}, padding={padding}, dilation={dilation}, "
                "ceil_mode={ceil_mode}".format(**self.__dict__))

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return _call(self, F.max_pool2d, input, self.kernel_size, self.stride, self.padding, self.dilation,
                     self.ceil_mode, self.return_indices)


class AvgPool2d(Module):
    """Mean over ``kernel_size`` windows, with torch's ``count_include_pad``/``divisor_override``.

    Example::

        >>> engine.nn.AvgPool2d(2)(engine.ones(1, 1, 4, 4)).shape
        engine.Size([1, 1, 2, 2])
    """

    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"]

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return _call(self, F.avg_pool2d, input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                     self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool2d(Module):
    """Average pooling to a fixed ``output_size`` (an int, or a pair where None keeps the input's
    size).

    Example::

        >>> engine.nn.AdaptiveAvgPool2d((5, 7))(engine.randn(1, 64, 8, 9)).shape
        engine.Size([1, 64, 5, 7])
    """

    __constants__ = ["output_size"]

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return _call(self, F.adaptive_avg_pool2d, input, self.output_size)


def _single(value: Any) -> tuple:
    """torch's ``_single``: an iterable as a tuple, an int as a 1-tuple."""
    return tuple(value) if isinstance(value, tuple | list) else (value,)


class MaxPool1d(MaxPool2d):
    """Max over ``kernel_size`` windows of (N, C, L) or (C, L) input."""

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class AvgPool1d(Module):
    """Mean over ``kernel_size`` windows of (N, C, L) or (C, L) input (sizes stored as 1-tuples,
    as torch stores them)."""

    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"]

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AdaptiveAvgPool1d(AdaptiveAvgPool2d):
    """Average pooling of (N, C, L) or (C, L) input to ``output_size`` positions."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveMaxPool2d(Module):
    """Max pooling to a fixed ``output_size``; with ``return_indices`` also the flat indices."""

    __constants__ = ["output_size", "return_indices"]

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(AdaptiveMaxPool2d):
    """Max pooling of (N, C, L) or (C, L) input to ``output_size`` positions."""

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class MaxPool3d(MaxPool2d):
    """Max over ``kernel_size`` windows of (N, C, D, H, W) or (C, D, H, W) input."""

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class AvgPool3d(Module):
    """Average over ``kernel_size`` windows of (N, C, D, H, W) or (C, D, H, W) input."""

    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"]

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)
