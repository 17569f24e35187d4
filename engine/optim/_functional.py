"""The update rules, on NumPy arrays, in place, in torch's order of operations.

Each function mirrors torch's single-tensor implementation (``_single_tensor_sgd`` ...) step for
step, with every Python scalar cast to the parameter's dtype where torch casts it. torch's CPU
kernels compute ``add(alpha=)``, ``addcmul`` and ``lerp`` as fused multiply-adds (one rounding);
for float32 ``fma_`` reproduces that exactly by computing in float64 (the product of two float32
is exact there) and rounding once. What remains different is torch's vectorised ``sqrt``, which
is not always correctly rounded: Adam and RMSprop can differ by an ulp where they take a root.

A rule reads and writes each value a dozen times (one NumPy pass per step of torch's formula,
float64 temporaries for the fused ones). On a large parameter those passes stream megabytes
through memory each, so the element-wise rules run block by block (``blocks``): every pass over
a 32,768-value block stays in the cache. Each value's arithmetic is the same either way.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

# values per block: a block's float64 temporaries (256 KiB each) fit in a core's L2 cache
BLOCK = 32768


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
    np.add(wide, c, out=out, casting="same_kind")  # added in float64, rounded once into ``out``
    return out


def blocks(*arrays: np.ndarray | None) -> Iterator[tuple[np.ndarray | None, ...]]:
    """``arrays`` (one shape; ``None`` passes through) as aligned flat blocks of ``BLOCK`` values,
    for a rule that updates them element by element; small or non-contiguous ones in one piece.
    ``arrays[0]`` is the parameter. Arrays written in place must be C-contiguous for blocks
    (their flat blocks are views); a read-only gradient in another layout is copied once."""
    p = arrays[0]
    if p.size <= BLOCK or not p.flags.c_contiguous or any(
            a is not None and (a.shape != p.shape or a.dtype != p.dtype) for a in arrays):
        yield arrays
        return
    flat = []
    for i, a in enumerate(arrays):
        if a is None:
            flat.append(None)
        elif a.flags.c_contiguous:
            flat.append(a.reshape(-1))
        elif i == 1:  # the gradient, only read
            flat.append(np.ascontiguousarray(a).reshape(-1))
        else:
            yield arrays
            return
    for start in range(0, p.size, BLOCK):
        yield tuple(None if a is None else a[start:start + BLOCK] for a in flat)


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
    first = momentum != 0 and buf is None
    if first:  # the first step's buffer is the (decayed) gradient itself: filled block by block
        buf = np.empty(p.shape, p.dtype)
    for pb, gb, bb in blocks(p, grad, buf):
        _sgd(pb, gb, bb, first, lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
             nesterov=nesterov, maximize=maximize)
    return buf


def _sgd(p: np.ndarray, grad: np.ndarray, buf: np.ndarray | None, first: bool, *, lr: float, momentum: float,
         dampening: float, weight_decay: float, nesterov: bool, maximize: bool) -> None:
    g = -grad if maximize else grad
    if weight_decay != 0:
        g = add_scaled(g, p, weight_decay)
    if momentum != 0:
        if first:
            np.copyto(buf, g)
        else:
            buf *= scalar(momentum, buf)
            add_scaled_(buf, g, 1 - dampening)
        g = add_scaled(g, buf, momentum) if nesterov else buf
    add_scaled_(p, g, -lr)


def adam(p: np.ndarray, grad: np.ndarray, exp_avg: np.ndarray, exp_avg_sq: np.ndarray,
         max_exp_avg_sq: np.ndarray | None, step: float, *, lr: float, beta1: float, beta2: float, eps: float,
         weight_decay: float, maximize: bool, decoupled_weight_decay: bool) -> None:
    """One Adam/AdamW update of ``p`` and its moments in place (``step`` already incremented)."""
    for block in blocks(p, grad, exp_avg, exp_avg_sq, max_exp_avg_sq):
        _adam(*block, step, lr=lr, beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay,
              maximize=maximize, decoupled_weight_decay=decoupled_weight_decay)


def _adam(p: np.ndarray, grad: np.ndarray, exp_avg: np.ndarray, exp_avg_sq: np.ndarray,
          max_exp_avg_sq: np.ndarray | None, step: float, *, lr: float, beta1: float, beta2: float, eps: float,
          weight_decay: float, maximize: bool, decoupled_weight_decay: bool) -> None:
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
    for block in blocks(p, grad, square_avg, grad_avg, momentum_buffer):
        _rmsprop(*block, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                 maximize=maximize)


def _rmsprop(p: np.ndarray, grad: np.ndarray, square_avg: np.ndarray, grad_avg: np.ndarray | None,
             momentum_buffer: np.ndarray | None, *, lr: float, alpha: float, eps: float, weight_decay: float,
             momentum: float, maximize: bool) -> None:
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


def adadelta(p: np.ndarray, grad: np.ndarray, square_avg: np.ndarray, acc_delta: np.ndarray, *, lr: float,
             rho: float, eps: float, weight_decay: float, maximize: bool) -> None:
    """One Adadelta update of ``p``, ``square_avg`` and ``acc_delta`` in place."""
    for block in blocks(p, grad, square_avg, acc_delta):
        _adadelta(*block, lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)


def _adadelta(p: np.ndarray, grad: np.ndarray, square_avg: np.ndarray, acc_delta: np.ndarray, *, lr: float,
              rho: float, eps: float, weight_decay: float, maximize: bool) -> None:
    g = -grad if maximize else grad
    if weight_decay != 0:
        g = add_scaled(g, p, weight_decay)
    square_avg *= scalar(rho, square_avg)
    addcmul_(square_avg, g, g, 1 - rho)
    std = square_avg + scalar(eps, square_avg)
    np.sqrt(std, out=std)  # in place: one temporary less per parameter (the fc layers' are megabytes)
    delta = acc_delta + scalar(eps, acc_delta)
    np.sqrt(delta, out=delta)
    delta /= std
    delta *= g
    acc_delta *= scalar(rho, acc_delta)
    addcmul_(acc_delta, delta, delta, 1 - rho)
    add_scaled_(p, delta, -lr)


def adagrad(p: np.ndarray, grad: np.ndarray, state_sum: np.ndarray, step: float, *, lr: float, lr_decay: float,
            weight_decay: float, eps: float, maximize: bool) -> None:
    """One Adagrad update of ``p`` and ``state_sum`` in place (``step`` already incremented)."""
    for block in blocks(p, grad, state_sum):
        _adagrad(*block, step, lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps, maximize=maximize)


def _adagrad(p: np.ndarray, grad: np.ndarray, state_sum: np.ndarray, step: float, *, lr: float, lr_decay: float,
             weight_decay: float, eps: float, maximize: bool) -> None:
    g = -grad if maximize else grad
    if weight_decay != 0:
        g = add_scaled(g, p, weight_decay)
    clr = lr / (1 + (step - 1) * lr_decay)
    addcmul_(state_sum, g, g, 1)
    std = np.sqrt(state_sum)
    std += scalar(eps, std)
    addcdiv_(p, g, std, -clr)


def adamax(p: np.ndarray, grad: np.ndarray, exp_avg: np.ndarray, exp_inf: np.ndarray, step: float, *, lr: float,
           beta1: float, beta2: float, eps: float, weight_decay: float, maximize: bool) -> None:
    """One Adamax update of ``p``, ``exp_avg`` and ``exp_inf`` (the decayed infinity norm) in place."""
    for block in blocks(p, grad, exp_avg, exp_inf):
        _adamax(*block, step, lr=lr, beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay,
                maximize=maximize)


def _adamax(p: np.ndarray, grad: np.ndarray, exp_avg: np.ndarray, exp_inf: np.ndarray, step: float, *, lr: float,
            beta1: float, beta2: float, eps: float, weight_decay: float, maximize: bool) -> None:
    g = -grad if maximize else grad
    if weight_decay != 0:
        g = add_scaled(g, p, weight_decay)
    lerp_(exp_avg, g, 1 - beta1)
    exp_inf *= scalar(beta2, exp_inf)
    norm = np.abs(g)
    norm += scalar(eps, norm)
    np.maximum(exp_inf, norm, out=exp_inf)
    clr = lr / (1 - beta1**step)
    addcdiv_(p, exp_avg, exp_inf, -clr)


def nadam(p: np.ndarray, grad: np.ndarray, exp_avg: np.ndarray, exp_avg_sq: np.ndarray, mu_product: np.ndarray,
          step: float, *, lr: float, beta1: float, beta2: float, eps: float, weight_decay: float,
          momentum_decay: float, decoupled_weight_decay: bool, maximize: bool) -> None:
    """One NAdam update of ``p``, its moments and the 0-d ``mu_product`` in place."""
    g = -grad if maximize else grad
    bias_correction2 = 1 - beta2**step
    if weight_decay != 0:
        if decoupled_weight_decay:
            p *= scalar(1 - lr * weight_decay, p)
        else:
            g = add_scaled(g, p, weight_decay)
    mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
    mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
    mu_product *= scalar(mu, mu_product)  # a 0-d tensor times a Python float: rounded to its dtype
    lerp_(exp_avg, g, 1 - beta1)
    exp_avg_sq *= scalar(beta2, exp_avg_sq)
    addcmul_(exp_avg_sq, g, g, 1 - beta2)
    denom = np.sqrt(exp_avg_sq / scalar(bias_correction2, exp_avg_sq))
    denom += scalar(eps, denom)
    mu_prod = float(mu_product)  # torch reads it back with .item()
    addcdiv_(p, g, denom, -lr * (1.0 - mu) / (1.0 - mu_prod))
    addcdiv_(p, exp_avg, denom, (-lr * mu_next) / (1.0 - mu_prod * mu_next))


def radam(p: np.ndarray, grad: np.ndarray, exp_avg: np.ndarray, exp_avg_sq: np.ndarray, step: float, *, lr: float,
          beta1: float, beta2: float, eps: float, weight_decay: float, decoupled_weight_decay: bool,
          maximize: bool) -> None:
    """One RAdam update of ``p`` and its moments in place: the rectified adaptive step once the
    variance estimate is tractable (``rho_t > 5``), plain momentum SGD before."""
    for block in blocks(p, grad, exp_avg, exp_avg_sq):
        _radam(*block, step, lr=lr, beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay,
               decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)


def _radam(p: np.ndarray, grad: np.ndarray, exp_avg: np.ndarray, exp_avg_sq: np.ndarray, step: float, *, lr: float,
           beta1: float, beta2: float, eps: float, weight_decay: float, decoupled_weight_decay: bool,
           maximize: bool) -> None:
    g = -grad if maximize else grad
    if weight_decay != 0:
        if decoupled_weight_decay:
            p *= scalar(1 - lr * weight_decay, p)
        else:
            g = add_scaled(g, p, weight_decay)
    lerp_(exp_avg, g, 1 - beta1)
    exp_avg_sq *= scalar(beta2, exp_avg_sq)
    addcmul_(exp_avg_sq, g, g, 1 - beta2)
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    update = exp_avg / scalar(bias_correction1, exp_avg)
    update *= scalar(lr, update)
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
    if rho_t > 5.0:
        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
        root = np.sqrt(exp_avg_sq)
        root += scalar(eps, root)
        # torch's ``float / tensor`` is ``tensor.reciprocal() * float``
        adaptive = np.reciprocal(root)
        adaptive *= scalar(bias_correction2**0.5, adaptive)
        update *= adaptive
        update *= scalar(rect, update)
    p -= update


def rprop(p: np.ndarray, grad: np.ndarray, prev: np.ndarray, step_size: np.ndarray, *, etaminus: float,
          etaplus: float, step_size_min: float, step_size_max: float, maximize: bool) -> None:
    """One Rprop update of ``p``, ``prev`` (the last gradient used) and the per-element
    ``step_size`` in place: sizes grow by ``etaplus`` where the gradient kept its sign, shrink by
    ``etaminus`` where it flipped (and that element skips this step)."""
    g = -grad if maximize else grad
    product_sign = np.sign(g * prev)
    factor = np.where(product_sign > 0, scalar(etaplus, p),
                      np.where(product_sign < 0, scalar(etaminus, p), p.dtype.type(1)))
    factor[np.isnan(product_sign)] = np.nan  # torch leaves NaN signs as they are
    step_size *= factor
    np.clip(step_size, scalar(step_size_min, p), scalar(step_size_max, p), out=step_size)
    g = np.where(product_sign < 0, p.dtype.type(0), g)
    p -= np.sign(g) * step_size
    prev[...] = g


def asgd(p: np.ndarray, grad: np.ndarray, ax: np.ndarray, eta: np.ndarray, mu: np.ndarray, step: float, *,
         lr: float, lambd: float, alpha: float, t0: float, weight_decay: float, maximize: bool) -> None:
    """One ASGD update of ``p``, its running average ``ax`` and the 0-d ``eta``/``mu`` in place
    (``step`` already incremented)."""
    g = -grad if maximize else grad
    if weight_decay != 0:
        g = add_scaled(g, p, weight_decay)
    eta_value = float(eta)  # torch reads it back with .item()
    p *= scalar(1 - lambd * eta_value, p)
    add_scaled_(p, g, -eta_value)
    if float(mu) != 1:
        diff = p - ax
        diff *= mu
        ax += diff
    else:
        ax[...] = p
    eta[...] = lr / ((1 + lambd * lr * step) ** alpha)
    mu[...] = 1 / max(1, step - t0)
