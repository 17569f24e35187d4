"""Gradient clipping: ``clip_grad_norm_``, ``clip_grad_value_`` (and ``get_total_norm``,
``clip_grads_with_norm_``), with torch.nn.utils' numbers.

The norm follows torch's recipe: one norm per gradient (kept in its dtype), then the norm of
those norms. Each norm is accumulated in float64 and rounded once, so it is within an ulp of
torch's. The scale is ``min(max_norm / (total_norm + 1e-6), 1)`` computed in the norm's dtype
(``max_norm / x`` as torch's ``x.reciprocal() * max_norm``) and every gradient is multiplied by
it, also when it is 1.
"""

from __future__ import annotations

import math
import types
import warnings
from collections.abc import Iterable

import numpy as np

from ..._tensor import Tensor

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]

TensorOrTensors = Tensor | Iterable[Tensor]


def _vector_norm(x: np.ndarray, norm_type: float) -> np.float64:
    """``torch.linalg.vector_norm(x, norm_type)`` in float64."""
    a = np.abs(x.astype(np.float64, copy=False)).ravel()
    if norm_type == math.inf:
        return a.max(initial=0.0)
    if norm_type == -math.inf:
        return a.min() if a.size else np.float64(math.inf)
    if norm_type == 0:
        return np.float64(np.count_nonzero(a))
    if norm_type == 1:
        return a.sum()
    if norm_type == 2:
        return np.sqrt(np.dot(a, a))
    return (a**norm_type).sum() ** (1.0 / norm_type)


def get_total_norm(tensors: TensorOrTensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """The ``norm_type``-norm of ``tensors`` viewed as one vector (0-d tensor; ``tensor(0.)``
    for no tensors).

    Raises:
        RuntimeError: ``error_if_nonfinite`` and the norm is nan or inf.
    """
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return Tensor._wrap(np.array(0.0, dtype=np.float32))
    dtype = np.result_type(*(t._data.dtype for t in tensors))
    norms = np.array([t._data.dtype.type(_vector_norm(t._data, norm_type)) for t in tensors], dtype=dtype)
    total = Tensor._wrap(np.asarray(_vector_norm(norms, norm_type), dtype=dtype))
    if error_if_nonfinite and not np.isfinite(total._data):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from "
            "`parameters` is non-finite, so it cannot be clipped. To disable "
            "this error and scale the gradients by the non-finite norm anyway, "
            "set `error_if_nonfinite=False`"
        )
    return total


def clip_grads_with_norm_(parameters: TensorOrTensors, max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    """Scale the gradients of ``parameters`` in place by ``min(max_norm / (total_norm + 1e-6), 1)``."""
    parameters = [parameters] if isinstance(parameters, Tensor) else parameters
    grads = [p.grad for p in parameters if p.grad is not None]
    if len(grads) == 0:
        return
    tn = total_norm._data
    one = tn.dtype.type(1)
    coef = (one / (tn + tn.dtype.type(1e-6))) * tn.dtype.type(float(max_norm))
    coef = np.minimum(coef, one)
    for g in grads:
        g._data *= coef.astype(g._data.dtype)
        g._version_counter[0] += 1


def clip_grad_norm_(parameters: TensorOrTensors, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Clip the gradient norm of ``parameters`` (all gradients viewed as one vector) to
    ``max_norm``, in place; returns the total norm before clipping (a 0-d tensor).

    Args:
        parameters: a tensor or an iterable of tensors whose ``.grad`` is clipped (tensors
            without a gradient are ignored).
        max_norm: the largest allowed norm.
        norm_type: the p of the p-norm; ``inf`` for the max-norm.
        error_if_nonfinite: raise if the total norm is nan or inf (default: scale anyway).

    Example::

        >>> loss.backward()
        >>> engine.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and len(parameters) == 0:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters: TensorOrTensors, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Deprecated alias of ``clip_grad_norm_`` (warns, as torch)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: TensorOrTensors, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient of ``parameters`` into ``[-clip_value, clip_value]`` in place (nan
    stays nan)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    clip_value = float(clip_value)
    for p in parameters:
        g = p.grad
        if g is not None:
            np.clip(g._data, -clip_value, clip_value, out=g._data)
            g._version_counter[0] += 1
