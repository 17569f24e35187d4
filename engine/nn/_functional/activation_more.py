"""The remaining activations: prelu, rrelu, threshold, hardshrink, softshrink, softmin; one node
each under torch's names (``PreluKernelBackward0``, ``RreluWithNoiseBackward0``, ...)."""

from __future__ import annotations

import numpy as np

import engine._ops.pointwise as pointwise
import engine._ops.shape as shape_ops

from ... import _random
from ..._ops._core import result, unbroadcast
from ._utils import legacy_type_name
from .activation import _elementwise, _softmax_dim, softmax


def prelu(input, weight):  # noqa: A002
    """``x`` for x > 0, ``w·x`` otherwise, with one ``w`` per channel (dim 1) or one in all."""
    n, dims = weight._data.size, input.ndim
    if n != 1 and weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    if n != 1:
        if dims == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if dims > 1 else 1
        if channels != n:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{n} and channel size = {channels}.")
    # torch views the weight to broadcast over (N, C, *) (ViewBackward0 on the weight's edge)
    w = shape_ops.view(weight, (1, n) + (1,) * (dims - 2)) if dims >= 2 else weight
    x, wd = input._data, w._data
    out = np.where(x > 0, x, wd * x).astype(x.dtype, copy=False)

    def backward(g):
        gx = np.where(x > 0, g, wd * g).astype(g.dtype, copy=False)
        gw = unbroadcast(np.where(x > 0, 0, x * g), wd.shape).astype(g.dtype, copy=False)
        return gx, gw

    return result(out, "PreluKernelBackward0", (input, w), backward, saved=(input, w))


def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,  # noqa: A002
          inplace: bool = False):
    """Randomised leaky ReLU: in training each negative element is scaled by a slope drawn
    uniformly from ``[lower, upper]``; in evaluation by the fixed ``(lower + upper) / 2``."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    x = input._data
    if x.dtype.kind != "f":
        raise NotImplementedError(f'"rrelu_with_noise_cpu" not implemented for \'{legacy_type_name(x.dtype)}\'')
    if training:
        slopes = _random.uniform_array(x.shape, float(lower), float(upper), x.dtype)
    else:
        slopes = np.asarray((lower + upper) / 2, x.dtype)
    noise = np.where(x > 0, np.asarray(1, x.dtype), slopes).astype(x.dtype, copy=False)
    if inplace:
        return input.mul_(input.new_tensor(noise)) if training else \
            input.copy_(input.new_tensor(x * noise))

    def backward(g):
        return ((g * noise).astype(g.dtype, copy=False),)

    return result(x * noise, "RreluWithNoiseBackward0", (input,), backward, saved=(input,))


def threshold(input, threshold: float, value: float, inplace: bool = False):  # noqa: A002
    """``x`` where ``x > threshold``, else ``value``."""
    return _elementwise(input, "ThresholdBackward0", None,
                        lambda x: np.where(x > threshold, x, np.asarray(value).astype(x.dtype)),
                        lambda x, _: x > threshold, inplace, "ThresholdBackward1")


def _check_lambd(x: np.ndarray, lambd: float) -> None:
    if lambd < 0:
        hi = float(np.finfo(x.dtype).max) if x.dtype.kind == "f" else 0
        raise RuntimeError(f"lambda must be in range [0, {hi:g}] for input dtype {legacy_type_name(x.dtype)}, "
                           f"but found {lambd:g}")


def hardshrink(input, lambd: float = 0.5):  # noqa: A002
    """``x`` where ``|x| > lambd``, else 0."""
    return _elementwise(input, "HardshrinkBackward0", "hardshrink_cpu",
                        lambda x: np.where((x < -lambd) | (x > lambd), x, 0), lambda x, _: (x < -lambd) | (x > lambd))


def softshrink(input, lambd: float = 0.5):  # noqa: A002
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between."""
    _check_lambd(input._data, lambd)
    return _elementwise(input, "SoftshrinkBackward0", "softshrink_cpu",
                        lambda x: np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, 0)),
                        lambda x, _: (x < -lambd) | (x > lambd))


def softmin(input, dim: int | None = None, _stacklevel: int = 3, dtype=None):  # noqa: A002
    """``softmax(-x)`` along ``dim`` (``SoftmaxBackward0`` over ``NegBackward0``)."""
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim, _stacklevel)
    return softmax(pointwise.neg(input), dim, dtype=dtype)
