"""``Muon`` (torch.optim.Muon, torch 2.9+): momentum SGD for 2-D weights whose update is
orthogonalised by a quintic Newton-Schulz iteration."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import engine.optim._functional as F

from .._tensor import Tensor
from .optimizer import Optimizer, use_grad_for_differentiable

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _bf16(a: np.ndarray | np.floating) -> np.ndarray:
    """Round float32 values to bfloat16 (round to nearest, ties to even), kept as float32:
    torch runs the Newton-Schulz iteration in bfloat16, and each of its ops rounds there."""
    bits = np.asarray(a, np.float32).view(np.uint32)
    lsb = (bits >> np.uint32(16)) & np.uint32(1)
    return ((bits + np.uint32(0x7FFF) + lsb) & np.uint32(0xFFFF0000)).view(np.float32)


def _zeropower_via_newtonschulz(grad: np.ndarray, ns_coefficients: tuple[float, float, float], ns_steps: int,
                                eps: float) -> np.ndarray:
    """torch's ``_zeropower_via_newtonschulz``: ``ns_steps`` quintic iterations towards ``U Vᵀ``
    of ``grad`` (wide orientation, spectral norm scaled to at most 1), in bfloat16 precision."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = (np.float32(v) for v in ns_coefficients)
    x = _bf16(grad)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    norm = _bf16(np.sqrt(np.sum(x * x, dtype=np.float32)))
    x = _bf16(x / max(norm, _bf16(np.float32(eps))))
    for _ in range(ns_steps):
        gram = _bf16(x @ x.T)
        gram_update = _bf16(b * gram + c * (gram @ gram))
        x = _bf16(a * x + gram_update @ x)
    return np.ascontiguousarray(x.T) if tall else x


def _adjust_lr(lr: float, adjust_lr_fn: str | None, shape: tuple[int, ...]) -> float:
    """torch's learning-rate scaling by the matrix shape (A, B): ``sqrt(max(1, A/B))`` for
    "original" (the default), ``0.2·sqrt(max(A, B))`` for "match_rms_adamw"."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """Implements Muon as torch.optim.Muon, for 2-D parameters only (use AdamW for the rest).

    Per step: ``B = lerp(B, g, 1 - momentum)``; the update is ``lerp(g, B, momentum)``
    (``nesterov``) or ``B``, orthogonalised by ``ns_steps`` Newton-Schulz iterations with
    coefficients ``ns_coefficients``; then ``p *= 1 - lr·weight_decay`` and
    ``p -= adjusted_lr · update``. State per parameter: ``momentum_buffer``.

    Args:
        params: parameters or parameter groups (see ``Optimizer``); each must be 2-D.
        lr: learning rate (default 1e-3).
        weight_decay: decoupled weight decay (default 0.1).
        momentum: momentum factor (default 0.95).
        nesterov: use Nesterov momentum (default True).
        ns_coefficients: (a, b, c) of the quintic iteration (default (3.4445, -4.7750, 2.0315)).
        eps: lower bound of the norm the update is divided by (default 1e-7).
        ns_steps: Newton-Schulz iterations (default 5, must be < 100).
        adjust_lr_fn: "original" (default) or "match_rms_adamw".

    Example::

        >>> opt = engine.optim.Muon([p for p in model.parameters() if p.ndim == 2], lr=0.02)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, weight_decay: float = 0.1, momentum: float = 0.95,
                 nesterov: bool = True, ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B, DEFAULT_C),
                 eps: float = EPS, ns_steps: int = DEFAULT_NS_STEPS, adjust_lr_fn: str | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum, "nesterov": nesterov,
                    "ns_coefficients": ns_coefficients, "eps": eps, "ns_steps": ns_steps,
                    "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    @use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform a single optimisation step; returns what ``closure`` (re-evaluated with grad
        enabled) returned, or None. Parameters without a gradient are skipped."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, momentum = float(group["lr"]), group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad._data.dtype.kind == "c":
                    raise RuntimeError("Muon does not support complex parameters")
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = Tensor._wrap(np.zeros_like(p.grad._data))
                buf, grad = state["momentum_buffer"], p.grad._data
                F.lerp_(buf._data, grad, 1 - momentum)
                if group["nesterov"]:
                    update = grad.copy()
                    F.lerp_(update, buf._data, momentum)
                else:
                    update = buf._data
                update = _zeropower_via_newtonschulz(update, group["ns_coefficients"], group["ns_steps"],
                                                     group["eps"])
                adjusted = _adjust_lr(lr, group["adjust_lr_fn"], tuple(p.shape))
                p._data *= F.scalar(1 - lr * group["weight_decay"], p._data)
                F.add_scaled_(p._data, update.astype(p._data.dtype, copy=False), -adjusted)
                p._version_counter[0] += 1
                buf._version_counter[0] += 1
        return loss
