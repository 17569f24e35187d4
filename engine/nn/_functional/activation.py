"""Activations: relu, leaky_relu, gelu (exact and tanh), tanh, sigmoid, softmax, log_softmax, and
the element-wise family (silu, softplus, mish, hard*, elu/selu/celu, logsigmoid, softsign, tanhshrink,
glu), gumbel_softmax, and prelu, rrelu, threshold, hardshrink, softshrink, softmin; one node each
under torch's names (``PreluKernelBackward0``, ``RreluWithNoiseBackward0``, ...)."""

from __future__ import annotations

import math
import warnings

import numpy as np

import engine._ops.pointwise as pointwise
import engine._ops.reduction as red
import engine._ops.reduction as reduction
import engine._ops.shape as shape_ops

from ... import _random
from ..._errstate import quiet
from ..._ops._core import result, unbroadcast, wrap_dim
from ..._ops._erf import TWO_OVER_SQRT_PI, erf
from ..._tensor import Tensor
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


# --- element-wise activations with one node each -----------------------------------------------

def _elementwise(input, name: str, kernel: str | None, fwd, grad, inplace: bool = False,  # noqa: A002
                 inplace_name: str | None = None):
    """One node ``name`` for ``out = fwd(x)`` with ``d out/dx = grad(x, out)``, both computed on
    arrays in the input's dtype. ``kernel`` names torch's CPU kernel in its integer-input error
    (None: integers are accepted, as torch's hardtanh does). ``inplace`` writes into ``input``
    (the node then is ``inplace_name``, torch's name for the in-place variant)."""
    if kernel is not None:
        _float_only(input._data, kernel)

    def compute(a, node: str = name):
        x = a._data
        out = np.asarray(fwd(x)).astype(x.dtype, copy=False)

        def backward(g):
            return ((g * grad(x, out)).astype(g.dtype, copy=False),)

        return result(out, node, (a,), backward, saved=(a,))

    if not inplace:
        return compute(input)

    def fast():
        x = input._data
        x[...] = fwd(x)

    return input._inplace(lambda old: compute(old, inplace_name or name), fast)


def _stable_sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)); exp overflows to inf for very negative x, which gives the right 0."""
    with quiet():
        e = np.exp(-x)
    e += 1
    return np.reciprocal(e, out=e)


def _softplus_array(x: np.ndarray) -> np.ndarray:
    """log(1 + exp(x)) without overflow."""
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def silu(input, inplace: bool = False):  # noqa: A002
    """``x · sigmoid(x)`` (swish)."""
    def grad(x, _):
        s = _stable_sigmoid(x)
        return s * (1 + x * (1 - s))

    return _elementwise(input, "SiluBackward0", "silu_cpu", lambda x: x * _stable_sigmoid(x), grad, inplace)


def softplus(input, beta: float = 1.0, threshold: float = 20.0):  # noqa: A002
    """``log(1 + exp(beta·x)) / beta``, and ``x`` itself where ``beta·x > threshold`` (torch's
    linear region, where the gradient is 1)."""
    beta, threshold = float(beta), float(threshold)

    def fwd(x):
        bx = x * beta
        return np.where(bx > threshold, x, _softplus_array(bx) / beta)

    def grad(x, _):
        bx = x * beta
        return np.where(bx > threshold, 1.0, _stable_sigmoid(bx))

    return _elementwise(input, "SoftplusBackward0", "softplus_cpu", fwd, grad)


def mish(input, inplace: bool = False):  # noqa: A002
    """``x · tanh(softplus(x))``."""
    def grad(x, _):
        t = np.tanh(_softplus_array(x))
        return t + x * _stable_sigmoid(x) * (1 - t * t)

    return _elementwise(input, "MishBackward0", "mish_cpu", lambda x: x * np.tanh(_softplus_array(x)), grad,
                        inplace)


def hardsigmoid(input, inplace: bool = False):  # noqa: A002
    """``clamp(x/6 + 1/2, 0, 1)``; gradient 1/6 strictly inside (-3, 3), 0 elsewhere (torch)."""
    return _elementwise(input, "HardsigmoidBackward0", "hardsigmoid_cpu",
                        lambda x: np.clip(x / 6 + 0.5, 0, 1),
                        lambda x, _: np.where((x > -3) & (x < 3), 1 / 6, 0.0), inplace)


def hardswish(input, inplace: bool = False):  # noqa: A002
    """``x · relu6(x + 3) / 6``; torch's gradient: 0 up to -3, ``x/3 + 1/2`` strictly between -3
    and 3, 1 from 3 on."""
    def grad(x, _):
        return np.where(x <= -3, 0.0, np.where(x < 3, x / 3 + 0.5, 1.0))

    return _elementwise(input, "HardswishBackward0", "hardswish_cpu",
                        lambda x: x * np.clip(x + 3, 0, 6) / 6, grad, inplace)


def _elu_op(input, alpha: float, scale: float, input_scale: float, inplace: bool, name: str,  # noqa: A002
            inplace_name: str):
    """torch's elu kernel: ``scale·x`` for x > 0, ``scale·alpha·(exp(input_scale·x) - 1)`` else."""
    def fwd(x):
        neg = np.minimum(x, 0)  # exp of non-positive numbers only
        return np.where(x > 0, scale * x, scale * alpha * np.expm1(neg * input_scale))

    def grad(x, _):
        neg = np.minimum(x, 0)
        return np.where(x > 0, scale, scale * alpha * input_scale * np.exp(neg * input_scale))

    return _elementwise(input, name, "elu_cpu", fwd, grad, inplace, inplace_name)


def elu(input, alpha: float = 1.0, inplace: bool = False):  # noqa: A002
    """``x`` for x > 0, ``alpha·(exp(x) - 1)`` otherwise."""
    return _elu_op(input, float(alpha), 1.0, 1.0, inplace, "EluBackward0", "EluBackward1")


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace: bool = False):  # noqa: A002
    """``scale·elu(x, alpha)`` with the self-normalising constants (recorded as ``EluBackward0``,
    as torch records it)."""
    return _elu_op(input, _SELU_ALPHA, _SELU_SCALE, 1.0, inplace, "EluBackward0", "EluBackward1")


def celu(input, alpha: float = 1.0, inplace: bool = False):  # noqa: A002
    """``max(0, x) + min(0, alpha·(exp(x/alpha) - 1))``."""
    alpha = float(alpha)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _elu_op(input, alpha, 1.0, 1.0 / alpha, inplace, "CeluBackward0", "CeluBackward1")


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):  # noqa: A002
    """``clamp(x, min_val, max_val)``; gradient 1 strictly inside the range (torch), else 0.
    Integer inputs are clamped too, as in torch."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")

    def grad(x, _):
        return (x > min_val) & (x < max_val)

    return _elementwise(input, "HardtanhBackward0", None, lambda x: np.clip(x, min_val, max_val), grad, inplace)


def relu6(input, inplace: bool = False):  # noqa: A002
    """``min(max(0, x), 6)`` (torch's ``hardtanh(x, 0, 6)``: ``HardtanhBackward0``)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def logsigmoid(input):  # noqa: A002
    """``log(sigmoid(x)) = -softplus(-x)``, computed without overflow."""
    return _elementwise(input, "LogSigmoidBackward0", "log_sigmoid_cpu", lambda x: -_softplus_array(-x),
                        lambda x, _: 1 - _stable_sigmoid(x))


def softsign(input):  # noqa: A002
    """``x / (1 + |x|)``, recorded as torch composes it (``DivBackward0`` over ``AddBackward0``
    over ``AbsBackward0``)."""
    return input / (input.abs() + 1)


def tanhshrink(input):  # noqa: A002
    """``x - tanh(x)`` (``SubBackward0`` over ``TanhBackward0``, as torch)."""
    return input - input.tanh()


def glu(input, dim: int = -1):  # noqa: A002
    """``a · sigmoid(b)`` where ``a`` and ``b`` are the two halves of ``input`` along ``dim``."""
    x = input._data
    if x.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    _float_only(x, "glu_cpu")
    d = wrap_dim(dim, x.ndim)
    n = x.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = np.split(x, 2, axis=d)
    s = _stable_sigmoid(b).astype(x.dtype, copy=False)
    out = a * s

    def backward(g):
        return (np.concatenate([g * s, g * a * s * (1 - s)], axis=d),)

    return result(out, "GluBackward0", (input,), backward, saved=(input,))


def gumbel_softmax(logits, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1):
    """A sample from the Gumbel-softmax distribution: ``softmax((logits + g) / tau)`` with
    ``g ~ Gumbel(0, 1)``; ``hard`` returns the one-hot of the sample's argmax with the soft
    sample's gradient (straight-through: ``y_hard - y_soft.detach() + y_soft``)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    x = logits._data
    u = _random.uniform_array(x.shape, 0.0, 1.0, np.float64)
    gumbels = Tensor._wrap((-np.log(-np.log1p(-u))).astype(x.dtype))  # -log(Exp(1))
    y_soft = red.softmax(pointwise.div(pointwise.add(logits, gumbels), tau), dim)
    if not hard:
        return y_soft
    d = wrap_dim(dim, x.ndim)
    hot = np.zeros_like(x)
    np.put_along_axis(hot, np.expand_dims(y_soft._data.argmax(axis=d), d), 1.0, axis=d)
    return pointwise.add(pointwise.sub(Tensor._wrap(hot), y_soft.detach()), y_soft)


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
