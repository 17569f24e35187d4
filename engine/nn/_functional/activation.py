"""Activations: relu, leaky_relu, gelu (exact and tanh), tanh, sigmoid, softmax, log_softmax."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..._ops import pointwise, reduction
from ..._ops._core import result
from ._erf import TWO_OVER_SQRT_PI, erf
from ._utils import legacy_type_name

tanh = pointwise.tanh
sigmoid = pointwise.sigmoid


def _float_only(x: np.ndarray, kernel: str) -> None:
    if x.dtype.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{legacy_type_name(x.dtype)}\'')


def relu(input, inplace: bool = False):  # noqa: A002 - torch's name
    """max(x, 0); ``inplace`` overwrites ``input`` (``ReluBackward0`` either way)."""
    return input.relu_() if inplace else pointwise.relu(input)


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):  # noqa: A002
    """x for x > 0 else ``negative_slope · x``; the gradient at 0 is ``negative_slope``, as in torch."""
    _float_only(input._data, "leaky_relu_cpu")
    slope = float(negative_slope)

    def compute(a, name: str = "LeakyReluBackward0"):
        x = a._data
        out = np.where(x > 0, x, x * slope).astype(x.dtype, copy=False)
        # LeakyReluBackward0 reads the input, LeakyReluBackward1 (in place) the output: same sign.
        ref = x if name == "LeakyReluBackward0" else out

        def backward(g):
            return (np.where(ref > 0, g, g * slope).astype(g.dtype, copy=False),)

        if name == "LeakyReluBackward0":
            return result(out, name, (a,), backward, saved=(a,))
        return result(out, name, (a,), backward, save_output=True)

    if not inplace:
        return compute(input)

    def fast():
        x = input._data
        np.multiply(x, slope, out=x, where=x <= 0)

    return input._inplace(lambda old: compute(old, "LeakyReluBackward1"), fast)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_TANH_C = 0.044715


def gelu(input, approximate: str = "none"):  # noqa: A002
    """x · Φ(x) with the exact normal CDF (``approximate='none'``, via ``erf``) or torch's tanh
    approximation (``'tanh'``). Computed in float64, returned in the input's dtype."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    x = input._data
    _float_only(x, "GeluKernelImpl")
    xd = x.astype(np.float64, copy=False)
    if approximate == "none":
        cdf = 0.5 * (1.0 + erf(xd * (1.0 / math.sqrt(2.0))))
        out = (xd * cdf).astype(x.dtype, copy=False)

        def backward(g):
            pdf = (0.5 * TWO_OVER_SQRT_PI / math.sqrt(2.0)) * np.exp(-0.5 * xd * xd)
            return ((g * (cdf + xd * pdf)).astype(g.dtype, copy=False),)
    else:
        inner = _SQRT_2_OVER_PI * (xd + _GELU_TANH_C * xd ** 3)
        t = np.tanh(inner)
        out = (0.5 * xd * (1.0 + t)).astype(x.dtype, copy=False)

        def backward(g):
            d_inner = _SQRT_2_OVER_PI * (1.0 + 3.0 * _GELU_TANH_C * xd * xd)
            grad = 0.5 * (1.0 + t) + 0.5 * xd * (1.0 - t * t) * d_inner
            return ((g * grad).astype(g.dtype, copy=False),)

    return result(out, "GeluBackward0", (input,), backward, saved=(input,))


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
        "as an argument.",
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim: int | None = None, _stacklevel: int = 3, dtype=None):  # noqa: A002
    """exp(x) / sum(exp(x)) along ``dim`` (torch's legacy implicit dim when None, with its warning)."""
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim, _stacklevel)
    return reduction.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim: int | None = None, _stacklevel: int = 3, dtype=None):  # noqa: A002
    """log(softmax(x)) along ``dim``, computed stably."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim, _stacklevel)
    return reduction.log_softmax(input, dim, dtype=dtype)
