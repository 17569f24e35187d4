"""MaxUnpool1d/2d/3d, AdaptiveAvgPool3d, AdaptiveMaxPool3d, LPPool1d/2d/3d, FractionalMaxPool2d/3d
(torch's attributes, defaults and repr)."""

from __future__ import annotations

from typing import Any

import engine.nn.functional as F

from ..._tensor import Tensor
from .module import Module
from .pooling import AdaptiveAvgPool2d, AdaptiveMaxPool2d

__all__ = ["AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "FractionalMaxPool2d", "FractionalMaxPool3d", "LPPool1d",
           "LPPool2d", "LPPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]


def _ntuple(value: Any, n: int) -> tuple:
    """torch's ``_pair``/``_triple``: an iterable as a tuple, anything else repeated ``n`` times."""
    return tuple(value) if isinstance(value, tuple | list) else (value,) * n


class _MaxUnpoolNd(Module):
    _n = 2
    _fn: Any = None

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self._n)
        self.stride = _ntuple(stride if stride is not None else kernel_size, self._n)
        self.padding = _ntuple(padding, self._n)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:  # noqa: A002
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool1d``: values back at their indices, zeros elsewhere.

    Example::

        >>> y, i = engine.nn.MaxPool1d(2, return_indices=True)(engine.arange(8.).view(1, 1, 8))
        >>> engine.nn.MaxUnpool1d(2)(y, i)
        tensor([[[0., 1., 0., 3., 0., 5., 0., 7.]]])
    """

    _n = 1
    _fn = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool2d``; ``output_size`` resolves ambiguous sizes."""

    _n = 2
    _fn = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool3d``."""

    _n = 3
    _fn = staticmethod(F.max_unpool3d)


class AdaptiveAvgPool3d(AdaptiveAvgPool2d):
    """Average pooling of (N, C, D, H, W) or (C, D, H, W) to a fixed ``output_size``."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(AdaptiveMaxPool2d):
    """Max pooling of (N, C, D, H, W) or (C, D, H, W) to a fixed ``output_size``."""

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _LPPoolNd(Module):
    __constants__ = ["norm_type", "kernel_size", "stride", "ceil_mode"]
    _fn: Any = None

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return ("norm_type={norm_type}, kernel_size={kernel_size}, stride={stride}, "
                "ceil_mode={ceil_mode}".format(**self.__dict__))

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool1d(_LPPoolNd):
    """Power-average pooling ``(Σ x^p)^(1/p)`` over windows of (N, C, L) or (C, L)."""

    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """Power-average pooling over windows of (N, C, H, W) or (C, H, W)."""

    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """Power-average pooling over windows of (N, C, D, H, W) or (C, D, H, W)."""

    _fn = staticmethod(F.lp_pool3d)


class _FractionalMaxPoolNd(Module):
    _n = 2
    _fn: Any = None

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Tensor | None = None) -> None:
        super().__init__()
        name = type(self).__name__
        self.kernel_size = _ntuple(kernel_size, self._n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, self._n) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, self._n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return type(self)._fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                              _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Max pooling at pseudo-random fractional strides (Graham 2014) to ``output_size`` or
    ``output_ratio`` of the input's (H, W); a fixed ``_random_samples`` (N, C, 2) fixes them."""

    _n = 2
    _fn = staticmethod(F.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-D fractional max pooling of (N, C, D, H, W) or (C, D, H, W); samples (N, C, 3)."""

    _n = 3
    _fn = staticmethod(F.fractional_max_pool3d)
