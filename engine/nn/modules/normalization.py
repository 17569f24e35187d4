"""LayerNorm (over the trailing ``normalized_shape`` dims of each sample), GroupNorm, InstanceNorm1d/2d
and LocalResponseNorm, with torch's parameters, buffers and reprs."""

from __future__ import annotations

import warnings
from typing import Any

import engine.nn.functional as F
import engine.nn.init as init

from ..._creation import empty
from ..._tensor import Tensor
from .._functional._utils import layer_error
from ..parameter import Parameter
from .batchnorm import _NormBase
from .module import Module

__all__ = ["GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LayerNorm", "LocalResponseNorm",
           "RMSNorm"]


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


class GroupNorm(Module):
    """Normalises each sample over groups of ``num_channels / num_groups`` channels, then scales
    and shifts per channel (``weight`` 1, ``bias`` 0 when ``affine``).

    Example::

        >>> engine.nn.GroupNorm(2, 4)(engine.randn(3, 4, 5, 5)).shape
        engine.Size([3, 4, 5, 5])
    """

    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: Any = None, dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(empty(num_channels, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(empty(num_channels, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """``weight`` to 1, ``bias`` to 0."""
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return "{num_groups}, {num_channels}, eps={eps}, affine={affine}, bias={use_bias}".format(
            **self.__dict__, use_bias=self.bias is not None)


class _InstanceNorm(_NormBase):
    """Per-sample, per-channel normalisation over the spatial dims; by default no affine
    parameters and no running statistics (torch's defaults)."""

    _no_batch_dim = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device=device, dtype=dtype,
                         bias=bias)

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        lo, hi = self._no_batch_dim, self._no_batch_dim + 1
        if input.dim() not in (lo, hi):
            raise ValueError(f"expected {lo}D or {hi}D input (got {input.dim()}D input)")

    def _apply_instance_norm(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        self._check_input_dim(input)
        feature_dim = input.dim() - self._no_batch_dim
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.size(feature_dim)}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=2)
        if input.dim() == self._no_batch_dim:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or (C, L) input."""


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or (C, H, W) input."""

    _no_batch_dim = 3


class LocalResponseNorm(Module):
    """``x / (k + alpha/size · Σ x²)^beta`` over ``size`` neighbouring channels."""

    __constants__ = ["size", "alpha", "beta", "k"]

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or (C, D, H, W) input."""

    _no_batch_dim = 4


class RMSNorm(Module):
    """``x / sqrt(mean(x²) + eps) * weight`` over the last ``len(normalized_shape)`` dims;
    ``eps=None`` is the dtype's machine epsilon (torch 2.4+)."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape: Any, eps: float | None = None, elementwise_affine: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)
