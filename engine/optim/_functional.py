"""The update rules, on NumPy arrays, in place, in torch's order of operations.

Each function mirrors torch's single-tensor implementation (``_single_tensor_sgd`` ...) step for
step, with every Python scalar cast to float32 where torch casts it (scalar arguments of
``add``/``mul``/``lerp``/``addcmul``/``addcdiv`` on a float32 tensor). What remains different is
rounding inside torch's kernels (fused multiply-adds, a vectorised ``sqrt`` that is not always
correctly rounded): a few float32 ulps per step.
"""

from __future__ import annotations

import numpy as np


def scalar(value: float, like: np.ndarray) -> np.generic:
    """A Python hyper-parameter as the array's dtype (torch casts scalar arguments to it)."""
    return like.dtype.type(value)


def lerp_(start: np.ndarray, end: np.ndarray, weight: float) -> None:
    """``start.lerp_(end, weight)`` with torch's two formulas (chosen by ``|weight| < 0.5``)."""
    w = scalar(weight, start)
    diff = end - start
    if abs(w) < 0.5:
        diff *= w
        start += diff
    else:
        diff *= w - start.dtype.type(1)
        np.add(end, diff, out=start)


def addcmul_(out: np.ndarray, t1: np.ndarray, t2: np.ndarray, value: float) -> None:
    """``out.addcmul_(t1, t2, value=value)``: ``out + (value * t1) * t2``."""
    prod = scalar(value, out) * t1
    prod *= t2
    out += prod


def addcdiv_(out: np.ndarray, t1: np.ndarray, t2: np.ndarray, value: float) -> None:
    """``out.addcdiv_(t1, t2, value=value)``: ``out + (value * t1) / t2``."""
    q = scalar(value, out) * t1
    q /= t2
    out += q


def add_scaled(a: np.ndarray, b: np.ndarray, alpha: float) -> np.ndarray:
    """``a.add(b, alpha=alpha)`` as a new array."""
    return a + scalar(alpha, a) * b


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
            buf += scalar(1 - dampening, buf) * g
        g = add_scaled(g, buf, momentum) if nesterov else buf
    p += scalar(-lr, p) * g
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
        p += scalar(-lr, p) * momentum_buffer
    else:
        addcdiv_(p, g, avg, -lr)
