"""Padding layers: ReflectionPad1d/2d/3d, ReplicationPad1d/2d/3d, ZeroPad1d/2d/3d,
ConstantPad1d/2d/3d, CircularPad1d/2d/3d (torch's ``padding`` tuples and reprs), each a call of
``F.pad``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import engine.nn.functional as F

from ..._tensor import Tensor
from .module import Module

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]


def _ntuple(value: Any, n: int) -> tuple:
    """torch's ``_ntuple``: an iterable as a tuple, anything else repeated ``n`` times."""
    return tuple(value) if isinstance(value, Iterable) else (value,) * n


class _PadNd(Module):
    __constants__ = ["padding"]
    _mode = "reflect"
    _dims = 1

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _ntuple(padding, 2 * self._dims)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Pads the last dim by mirroring (without repeating the edge)."""


class ReflectionPad2d(_PadNd):
    """Pads the last 2 dims by mirroring; ``padding`` is (left, right, top, bottom)."""

    _dims = 2


class ReflectionPad3d(_PadNd):
    """Pads the last 3 dims by mirroring."""

    _dims = 3


class ReplicationPad1d(_PadNd):
    """Pads the last dim by repeating the edge value."""

    _mode = "replicate"


class ReplicationPad2d(_PadNd):
    """Pads the last 2 dims by repeating the edge values."""

    _mode, _dims = "replicate", 2


class ReplicationPad3d(_PadNd):
    """Pads the last 3 dims by repeating the edge values."""

    _mode, _dims = "replicate", 3


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        if input.dim() not in (self._dims + 1, self._dims + 2):
            raise ValueError(f"expected {self._dims + 1}D or {self._dims + 2}D input (got {input.dim()}D input)")
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pads the last dim by wrapping around."""


class CircularPad2d(_CircularPadNd):
    """Pads the last 2 dims by wrapping around."""

    _dims = 2


class CircularPad3d(_CircularPadNd):
    """Pads the last 3 dims by wrapping around."""

    _dims = 3


class _ConstantPadNd(Module):
    __constants__ = ["padding", "value"]
    _dims = 1

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__()
        self.value = value
        self.padding = _ntuple(padding, 2 * self._dims)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with ``value``."""


class ConstantPad2d(_ConstantPadNd):
    """Pads the last 2 dims with ``value``."""

    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last 3 dims with ``value``."""

    _dims = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pads the last dim with zeros."""


class ZeroPad2d(_ZeroPadNd):
    """Pads the last 2 dims with zeros; ``padding`` is (left, right, top, bottom)."""

    _dims = 2


class ZeroPad3d(_ZeroPadNd):
    """Pads the last 3 dims with zeros."""

    _dims = 3
