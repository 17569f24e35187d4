"""engine.nn.init: fill tensors in place with torch's initialisation schemes.

Every function runs under ``no_grad`` (so it works on leaf parameters that require grad) and
returns the tensor it filled. Random draws come from the engine's generator (``engine.manual_seed``
or the ``generator`` argument), so values differ from torch's while the distributions match.
"""

from __future__ import annotations

import math
import warnings
from typing import Literal

import numpy as np

import engine.autograd.grad_mode as grad_mode

from .._ops._erf import erf
from .._ops.special import _erfinv_array
from .._random import Generator, normal_array, uniform_array
from .._tensor import Tensor

__all__ = [
    "calculate_gain", "constant_", "kaiming_normal_", "kaiming_uniform_", "normal_", "ones_",
    "uniform_", "xavier_normal_", "xavier_uniform_", "zeros_",
    "dirac_", "eye_", "orthogonal_", "sparse_", "trunc_normal_",
]

_LINEAR_FNS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
               "conv_transpose3d")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for ``nonlinearity`` (torch's table: linear/conv/sigmoid 1, tanh 5/3,
    relu √2, leaky_relu √(2/(1+slope²)) with slope ``param`` (default 0.01), selu 3/4)."""
    if nonlinearity in _LINEAR_FNS or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, int | float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill with draws from U(a, b)."""
    with grad_mode.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill with draws from N(mean, std²)."""
    with grad_mode.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    with grad_mode.no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with 0."""
    with grad_mode.no_grad():
        return tensor.zero_()


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out): dims 1 and 0 times the receptive field (the product of dims 2+)."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field_size = math.prod(tensor.shape[2:])
    return tensor.size(1) * receptive_field_size, tensor.size(0) * receptive_field_size


def _calculate_correct_fan(tensor: Tensor, mode: Literal["fan_in", "fan_out"]) -> int:
    mode = mode.lower()  # type: ignore[assignment]
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Glorot uniform: U(-a, a) with ``a = gain·√(6/(fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -math.sqrt(3.0) * std, math.sqrt(3.0) * std, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Glorot normal: N(0, std²) with ``std = gain·√(2/(fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    fan = _calculate_correct_fan(tensor, mode)  # type: ignore[arg-type]
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator: Generator | None = None) -> Tensor:
    """He uniform: U(-b, b) with ``b = gain·√(3/fan)``; ``a`` is leaky_relu's slope. A tensor
    with a zero-sized dim is left alone, with torch's warning."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator: Generator | None = None) -> Tensor:
    """He normal: N(0, std²) with ``std = gain/√fan``."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


# --- trunc_normal_, orthogonal_, sparse_, eye_, dirac_ ------------------------------------------

def _filled(tensor: Tensor, values) -> Tensor:
    """Copy the array ``values`` into ``tensor`` in place (under no_grad), in its dtype."""
    with grad_mode.no_grad():
        return tensor.copy_(Tensor._wrap(np.asarray(values, dtype=tensor._data.dtype).reshape(tensor.shape)))


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator: Generator | None = None) -> Tensor:
    """Fill with draws from N(mean, std²) truncated to ``[a, b]`` (torch's inverse-CDF method;
    it warns, as here, when ``mean`` is more than 2 std outside the interval)."""
    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values "
                      "may be incorrect.", stacklevel=2)
    # torch's method: uniform between the CDF values of a and b, through the inverse CDF

    def cdf(x: float) -> float:
        return float((1.0 + erf(np.asarray(x / math.sqrt(2.0)))) / 2.0)

    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)
    u = uniform_array((int(tensor.numel()),), 2 * lo - 1, 2 * hi - 1, np.float64, generator)
    out = np.clip(_erfinv_array(u) * std * math.sqrt(2.0) + mean, a, b)
    return _filled(tensor, out)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Generator | None = None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix (the Q of a QR decomposition of a Gaussian matrix,
    signs fixed by R's diagonal), flattened over the trailing dims, times ``gain``."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    flat = normal_array((rows, cols), 0.0, 1.0, np.float64, generator)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _filled(tensor, q * gain)


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Generator | None = None) -> Tensor:
    """Fill a 2-D tensor from N(0, std²), then zero ``ceil(sparsity · rows)`` random rows of each
    column."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    values = normal_array((rows, cols), 0.0, std, np.float64, generator)
    order = np.argsort(uniform_array((rows, cols), 0.0, 1.0, np.float64, generator), axis=0)
    np.put_along_axis(values, order[:num_zeros], 0.0, axis=0)  # a random permutation per column
    return _filled(tensor, values)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity (ones on the diagonal)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _filled(tensor, np.eye(*tensor.shape))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-D (convolution) weight with the Dirac delta: the convolution then
    preserves the input channels (per group)."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = sizes[0] // groups
    min_dim = min(per_group, sizes[1])
    out = np.zeros(sizes)
    g, d = np.meshgrid(np.arange(groups), np.arange(min_dim), indexing="ij")
    centre = tuple(s // 2 for s in sizes[2:])
    out[(g * per_group + d).ravel(), d.ravel(), *centre] = 1
    return _filled(tensor, out)
