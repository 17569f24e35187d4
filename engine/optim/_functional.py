"""The update rules, on NumPy arrays, in place, in torch's order of operations.

Each function mirrors torch's single-tensor implementation (``_single_tensor_sgd`` ...) step for
step, with every Python scalar cast to the parameter's dtype where torch casts it. torch's CPU
kernels compute ``add(alpha=)``, ``addcmul`` and ``lerp`` as fused multiply-adds (one rounding);
for float32 ``fma_`` reproduces that exactly by computing in float64 (the product of two float32
is exact there) and rounding once. What remains different is torch's vectorised ``sqrt``, which
is not always correctly rounded: Adam and RMSprop can differ by an ulp where they take a root.
"""

from __future__ import annotations

import numpy as np


def scalar(value: float, like: np.ndarray) -> np.generic:
    """A Python hyper-parameter as the array's dtype (torch casts scalar arguments to it)."""
    return like.dtype.type(value)


def fma_(out: np.ndarray, a: np.ndarray | np.generic, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``out = a * b + c`` rounded once, like a fused multiply-add (float32 via float64;
    other dtypes round twice)."""
    if out.dtype != np.float32:
        np.add(np.multiply(a, b), c, out=out)
        return out
    wide = np.multiply(a, b, dtype=np.float64)
    wide += c
    np.copyto(out, wide, casting="same_kind")
    return out


def lerp_(start: np.ndarray, end: np.ndarray, weight: float) -> None:
    """``start.lerp_(end, weight)``: ``start + w * (end - start)`` for ``|w| < 0.5``, else
    ``end + (w - 1) * (end - start)`` (torch's vectorised formulas, fused)."""
    w = scalar(weight, start)
    diff = end - start
    if abs(w) < 0.5:
        fma_(start, w, diff, start)
    else:
        fma_(start, w - start.dtype.type(1), diff, end)


def addcmul_(out: np.ndarray, t1: np.ndarray, t2: np.ndarray, value: float) -> None:
    """``out.addcmul_(t1, t2, value=value)``: ``(value * t1) * t2 + out``, the last two fused."""
    fma_(out, scalar(value, out) * t1, t2, out)


def addcdiv_(out: np.ndarray, t1: np.ndarray, t2: np.ndarray, value: float) -> None:
    """``out.addcdiv_(t1, t2, value=value)``: ``out + (value * t1) / t2`` (no fusion possible)."""
    q = scalar(value, out) * t1
    q /= t2
    out += q


def add_scaled(a: np.ndarray, b: np.ndarray, alpha: float) -> np.ndarray:
    """``a.add(b, alpha=alpha)`` as a new array (fused)."""
    return fma_(np.empty_like(a), scalar(alpha, a), b, a)


def add_scaled_(a: np.ndarray, b: np.ndarray, alpha: float) -> None:
    """``a.add_(b, alpha=alpha)`` in place (fused)."""
    fma_(a, scalar(alpha, a), b, a)


def sgd(p: np.ndarray, grad: np.ndarray, buf: np.ndarray | None, *, lr: float, momentum: float, dampening: float,
        weight_decay: float, nesterov: bool, maximize: bool) -> np.ndarray | None:
    """One SGD update of ``p`` in place; returns the momentum buffer (new on the first step)."""
    g = -grad if maximize else grad
    if weight_decay != 0:
        g = add_scaled(g, p, weight_decay)
    if momentum != 0:
        if buf is None:
            buf = g.copy()
        else:
            buf *= scalar(momentum, buf)
            add_scaled_(buf, g, 1 - dampening)
        g = add_scaled(g, buf, momentum) if nesterov else buf
    add_scaled_(p, g, -lr)
    return buf


def adam(p: np.ndarray, grad: np.ndarray, exp_avg: np.ndarray, exp_avg_sq: np.ndarray,
         max_exp_avg_sq: np.ndarray | None, step: float, *, lr: float, beta1: float, beta2: float, eps: float,
         weight_decay: float, maximize: bool, decoupled_weight_decay: bool) -> None:
    """One Adam/AdamW update of ``p`` and its moments in place (``step`` already incremented)."""
    g = -grad if maximize else grad
    if weight_decay != 0:
        if decoupled_weight_decay:
            p *= scalar(1 - lr * weight_decay, p)
        else:
            g = add_scaled(g, p, weight_decay)
    lerp_(exp_avg, g, 1 - beta1)
    exp_avg_sq *= scalar(beta2, exp_avg_sq)
    addcmul_(exp_avg_sq, g, g, 1 - beta2)

    # bias corrections in Python floats (double), as torch computes them from step.item()
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    step_size = lr / bias_correction1
    bias_correction2_sqrt = bias_correction2**0.5
    if max_exp_avg_sq is not None:
        np.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
        denom = np.sqrt(max_exp_avg_sq)
    else:
        denom = np.sqrt(exp_avg_sq)
    denom /= scalar(bias_correction2_sqrt, denom)
    denom += scalar(eps, denom)
    addcdiv_(p, exp_avg, denom, -step_size)


def rmsprop(p: np.ndarray, grad: np.ndarray, square_avg: np.ndarray, grad_avg: np.ndarray | None,
            momentum_buffer: np.ndarray | None, *, lr: float, alpha: float, eps: float, weight_decay: float,
            momentum: float, maximize: bool) -> None:
    """One RMSprop update of ``p`` and its averages in place (centered when ``grad_avg`` is given)."""
    g = -grad if maximize else grad
    if weight_decay != 0:
        g = add_scaled(g, p, weight_decay)
    square_avg *= scalar(alpha, square_avg)
    addcmul_(square_avg, g, g, 1 - alpha)
    if grad_avg is not None:
        lerp_(grad_avg, g, 1 - alpha)
        avg = square_avg.copy()
        addcmul_(avg, grad_avg, grad_avg, -1)
        np.sqrt(avg, out=avg)
    else:
        avg = np.sqrt(square_avg)
    avg += scalar(eps, avg)
    if momentum > 0:
        momentum_buffer *= scalar(momentum, momentum_buffer)
        addcdiv_(momentum_buffer, g, avg, 1)
        add_scaled_(p, momentum_buffer, -lr)
    else:
        addcdiv_(p, g, avg, -lr)
