"""Conv1d and Conv2d (torch's constructor checks, attributes, default initialisation and repr)."""

from __future__ import annotations

import math
from typing import Any

from ..._creation import empty
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from .._functional._utils import layer_error
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d"]

_PADDING_STRINGS = {"same", "valid"}
_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


def _ntuple(value: Any, n: int) -> tuple:
    if isinstance(value, int):
        return (value,) * n
    return tuple(value)


def _reversed_padding(padding: Any, kernel_size: tuple, dilation: tuple) -> list[int]:
    """F.pad's argument for this padding (last dim first, each side), as torch stores it."""
    if not isinstance(padding, str):
        return [p for p in reversed(padding) for _ in range(2)]
    out = [0, 0] * len(kernel_size)
    if padding == "same":
        for i, (d, k) in enumerate(zip(reversed(dilation), reversed(kernel_size))):
            total = d * (k - 1)
            out[2 * i], out[2 * i + 1] = total // 2, total - total // 2
    return out


class _ConvNd(Module):
    """Shared by Conv1d/Conv2d. ``weight`` is (out_channels, in_channels/groups, *kernel_size),
    ``bias`` (out_channels); both start as torch's defaults (``kaiming_uniform_(a=√5)`` and
    ``U(-1/√fan_in, 1/√fan_in)``)."""

    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding",
                     "in_channels", "out_channels", "kernel_size"]
    _nd: int
    _fname: str

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        nd = self._nd
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        kernel_size, stride, dilation = _ntuple(kernel_size, nd), _ntuple(stride, nd), _ntuple(dilation, nd)
        if isinstance(padding, str):
            if padding not in _PADDING_STRINGS:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {_PADDING_STRINGS}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = _ntuple(padding, nd)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got padding_mode='{padding_mode}'")
        if padding_mode != "zeros":
            raise NotImplementedError(
                f"padding_mode='{padding_mode}' is not implemented in engine (F.pad supports 'constant' only)"
            )
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
        self.transposed, self.output_padding = False, (0,) * nd
        self.groups, self.padding_mode = groups, padding_mode
        self._reversed_padding_repeated_twice = _reversed_padding(padding, kernel_size, dilation)
        self.weight = Parameter(empty((out_channels, in_channels // groups, *kernel_size), device=device,
                                      dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw ``weight`` and ``bias`` from torch's default distributions."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:  # noqa: A002
        conv = F.conv2d if self._nd == 2 else F.conv1d
        try:
            return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)
        except RuntimeError as err:
            if self._input_shape_ok(input):
                raise
            raise layer_error(err, self, self._expected_shape(), input.shape) from None

    def _input_shape_ok(self, input: Tensor) -> bool:  # noqa: A002
        nd = self._nd
        return input.ndim in (nd + 1, nd + 2) and input.shape[-nd - 1] == self.in_channels

    def _expected_shape(self) -> str:
        spatial = "H, W" if self._nd == 2 else "L"
        return f"(N, {self.in_channels}, {spatial}) or ({self.in_channels}, {spatial})"

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvNd):
    """1-D convolution over (N, C_in, L) or (C_in, L) input.

    Example::

        >>> m = engine.nn.Conv1d(16, 33, 3, stride=2)
        >>> m(engine.randn(20, 16, 50)).shape
        engine.Size([20, 33, 24])
    """

    _nd = 1


class Conv2d(_ConvNd):
    """2-D convolution over (N, C_in, H, W) or (C_in, H, W) input, with ``stride``, ``padding``
    (ints or 'valid'/'same'), ``dilation`` and ``groups``. A wrong input shape raises a
    RuntimeError naming the layer and both shapes.

    Example::

        >>> m = engine.nn.Conv2d(1, 10, kernel_size=5)
        >>> m(engine.randn(64, 1, 28, 28)).shape
        engine.Size([64, 10, 24, 24])
    """

    _nd = 2
