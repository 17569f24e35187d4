"""Conv1d/2d/3d and ConvTranspose1d/2d/3d (torch's constructor checks, attributes, default
initialisation, repr and padding modes)."""

from __future__ import annotations

import math
from typing import Any

import engine.nn.functional as F
import engine.nn.init as init

from ..._creation import empty
from ..._tensor import Tensor
from .._functional._utils import layer_error
from .._functional.conv import _mode_pad
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_STRINGS = {"same", "valid"}
_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


def _ntuple(value: Any, n: int) -> tuple:
    if isinstance(value, int):
        return (value,) * n
    return tuple(value)


def _reversed_padding(padding: Any, kernel_size: tuple, dilation: tuple) -> list[int] | tuple[int, ...]:
    """F.pad's argument for this padding (last dim first, each side), as torch stores it (a
    tuple for int padding, a list for a padding string)."""
    if not isinstance(padding, str):
        return tuple(p for p in reversed(padding) for _ in range(2))
    out = [0, 0] * len(kernel_size)
    if padding == "same":
        for i, (d, k) in enumerate(zip(reversed(dilation), reversed(kernel_size))):
            total = d * (k - 1)
            out[2 * i], out[2 * i + 1] = total // 2, total - total // 2
    return out


class _ConvNd(Module):
    """Shared by the Conv and ConvTranspose layers. ``weight`` is (out_channels,
    in_channels/groups, *kernel_size) ((in_channels, out_channels/groups, *kernel_size) when
    transposed), ``bias`` (out_channels); both start as torch's defaults
    (``kaiming_uniform_(a=√5)`` and ``U(-1/√fan_in, 1/√fan_in)``)."""

    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding",
                     "in_channels", "out_channels", "kernel_size"]
    _nd: int
    _fname: str

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        self._init_conv(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups, bias,
                        padding_mode, device, dtype)

    def _init_conv(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any, padding: Any,
                   dilation: Any, transposed: bool, output_padding: Any, groups: int, bias: bool,
                   padding_mode: str, device: Any, dtype: Any) -> None:
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
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
        self.transposed, self.output_padding = transposed, _ntuple(output_padding, nd)
        self.groups, self.padding_mode = groups, padding_mode
        self._reversed_padding_repeated_twice = _reversed_padding(padding, kernel_size, dilation)
        shape = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        self.weight = Parameter(empty((*shape, *kernel_size), device=device, dtype=dtype))
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
        conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[self._nd]
        try:
            if self.padding_mode != "zeros":  # as torch: pad by the mode, then convolve unpadded
                padded = _mode_pad(input, self._reversed_padding_repeated_twice, self.padding_mode)
                return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
            return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)
        except RuntimeError as err:
            if self._input_shape_ok(input):
                raise
            raise layer_error(err, self, self._expected_shape(), input.shape) from None

    def _input_shape_ok(self, input: Tensor) -> bool:  # noqa: A002
        nd = self._nd
        return input.ndim in (nd + 1, nd + 2) and input.shape[-nd - 1] == self.in_channels

    def _expected_shape(self) -> str:
        spatial = {1: "L", 2: "H, W", 3: "D, H, W"}[self._nd]
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


class Conv3d(_ConvNd):
    """3-D convolution over (N, C_in, D, H, W) or (C_in, D, H, W) input.

    Example::

        >>> m = engine.nn.Conv3d(16, 33, 3, stride=2)
        >>> m(engine.randn(20, 16, 10, 50, 100)).shape
        engine.Size([20, 33, 4, 24, 49])
    """

    _nd = 3


class _ConvTransposeNd(_ConvNd):
    """Shared by ConvTranspose1d/2d/3d: torch's arguments (``output_padding`` before
    ``groups``; ``dilation`` last), 'zeros' padding only, and ``forward(input, output_size)``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        self._init_conv(in_channels, out_channels, kernel_size, stride, padding, dilation, True, output_padding,
                        groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple:  # noqa: A002
        """``output_padding``, or the one that makes the output ``output_size`` (torch's checks)."""
        nd = self._nd
        if output_size is None:
            return self.output_padding
        non_spatial = 2 if input.ndim == nd + 2 else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + nd:
            output_size = output_size[non_spatial:]
        if len(output_size) != nd:
            raise ValueError(
                f"ConvTranspose{nd}D: for {input.ndim}D input, output_size must have {nd} or {non_spatial + nd} "
                f"elements (got {len(output_size)})"
            )
        min_sizes = [(input.shape[d + non_spatial] - 1) * self.stride[d] - 2 * self.padding[d]
                     + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(nd)]
        max_sizes = [lo + s - 1 for lo, s in zip(min_sizes, self.stride)]
        for size, lo, hi in zip(output_size, min_sizes, max_sizes):
            if size < lo or size > hi:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range from {min_sizes} to "
                    f"{max_sizes} (for an input of {input.shape[non_spatial:]!r})"
                )
        return tuple(size - lo for size, lo in zip(output_size, min_sizes))

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:  # noqa: A002
        if not isinstance(self.padding, tuple):
            raise AssertionError("self.padding must be a tuple")
        output_padding = self._output_padding(input, output_size)
        fn = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[self._nd]
        try:
            return fn(input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups,
                      self.dilation)
        except RuntimeError as err:
            if self._input_shape_ok(input):
                raise
            raise layer_error(err, self, self._expected_shape(), input.shape) from None


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over (N, C_in, L) or (C_in, L) input: the gradient of Conv1d
    with respect to its input, with ``output_padding`` / ``output_size`` choosing among the
    output lengths a stride allows.

    Example::

        >>> m = engine.nn.ConvTranspose1d(16, 33, 3, stride=2)
        >>> m(engine.randn(20, 16, 50)).shape
        engine.Size([20, 33, 101])
    """

    _nd = 1


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution over (N, C_in, H, W) or (C_in, H, W) input.

    Example::

        >>> m = engine.nn.ConvTranspose2d(16, 33, 3, stride=2)
        >>> m(engine.randn(20, 16, 50, 100)).shape
        engine.Size([20, 33, 101, 201])
    """

    _nd = 2


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution over (N, C_in, D, H, W) or (C_in, D, H, W) input."""

    _nd = 3
