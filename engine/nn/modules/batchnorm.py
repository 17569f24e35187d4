"""BatchNorm1d and BatchNorm2d: batch statistics in training, running statistics in evaluation.

The running estimates are buffers (``running_mean``, ``running_var``, ``num_batches_tracked``)
updated in place by ``F.batch_norm`` in training mode with ``momentum`` (or a cumulative average
when ``momentum is None``), exactly as torch's ``_BatchNorm.forward`` does.
"""

from __future__ import annotations

from typing import Any

import engine.nn.functional as F
import engine.nn.init as init

from ... import _dtype
from ..._creation import empty, ones, tensor, zeros
from ..._tensor import Tensor
from .._functional._utils import layer_error
from ..parameter import Parameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]


class _NormBase(Module):
    """Parameters (``weight`` = 1, ``bias`` = 0 when ``affine``; ``bias=False`` drops the shift)
    and running-stat buffers."""

    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(empty(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(empty(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=_dtype.long))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batches tracked."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset the running statistics and set ``weight`` to 1 and ``bias`` to 0."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        raise NotImplementedError

    def extra_repr(self) -> str:
        return ("{num_features}, eps={eps}, momentum={momentum}, affine={affine}, bias={use_bias}, "
                "track_running_stats={track_running_stats}".format(**self.__dict__, use_bias=self.bias is not None))

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        """State dicts from before ``num_batches_tracked`` existed (version < 2) load with it at 0."""
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked is not None
                                   else tensor(0, dtype=_dtype.long))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    _dims: tuple[int, ...]
    _expected: str

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.dim() not in self._dims:
            wanted = " or ".join(f"{d}D" for d in self._dims)
            err = ValueError(f"expected {wanted} input (got {input.dim()}D input)")
            raise layer_error(err, self, self._expected.format(c=self.num_features), input.shape)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        # Evaluation uses batch statistics only when there are no running ones.
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_running = not self.training or self.track_running_stats
        try:
            return F.batch_norm(input, self.running_mean if use_running else None,
                                self.running_var if use_running else None, self.weight, self.bias,
                                bn_training, factor, self.eps)
        except RuntimeError as err:
            if input.shape[1] == self.num_features:
                raise
            raise layer_error(err, self, self._expected.format(c=self.num_features), input.shape) from None


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L) input, per channel C.

    Example::

        >>> bn = engine.nn.BatchNorm1d(100)
        >>> bn(engine.randn(20, 100)).shape
        engine.Size([20, 100])
    """

    _dims = (2, 3)
    _expected = "(N, {c}) or (N, {c}, L)"


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W) input, per channel C.

    Example::

        >>> bn = engine.nn.BatchNorm2d(16)
        >>> bn(engine.randn(4, 16, 8, 8)).shape
        engine.Size([4, 16, 8, 8])
    """

    _dims = (4,)
    _expected = "(N, {c}, H, W)"


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over (N, C, D, H, W) input, per channel C."""

    _dims = (5,)
    _expected = "(N, {c}, D, H, W)"
