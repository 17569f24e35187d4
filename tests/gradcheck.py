"""Finite-difference gradient checking for engine ops (float64, central differences).

``gradcheck(fn, *inputs)`` compares the analytic gradient of ``sum(fn(*inputs) * w)`` for a fixed
random ``w`` against central differences of the same scalar, for every input that requires
grad. A random ``w`` (not ones) catches backward formulas that are wrong only off the diagonal.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import engine


def _scalar(fn: Callable, inputs: list[engine.Tensor], weights: list[np.ndarray] | None) -> tuple:
    out = fn(*inputs)
    outs = out if isinstance(out, tuple | list) else (out,)
    outs = [o for o in outs if isinstance(o, engine.Tensor) and o.is_floating_point()]
    if weights is None:
        rng = np.random.default_rng(1234)
        weights = [rng.standard_normal(o.shape) for o in outs]
    total = sum((o * engine.tensor(w, dtype=o.dtype)).sum() for o, w in zip(outs, weights))
    return total, weights


def gradcheck(fn: Callable, *inputs: engine.Tensor, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-4) -> None:
    """Raise AssertionError naming the input and worst element when gradients disagree."""
    tensors = [t for t in inputs if isinstance(t, engine.Tensor) and t.requires_grad]
    assert tensors, "gradcheck needs at least one input that requires grad"
    for t in tensors:
        assert t.dtype == engine.float64, "gradcheck runs in float64"
        t.grad = None
    total, weights = _scalar(fn, list(inputs), None)
    total.backward()
    for k, t in enumerate(tensors):
        analytic = np.zeros(t.shape) if t.grad is None else t.grad.numpy().copy()
        numeric = np.zeros(t.shape)
        flat = t.detach().numpy().reshape(-1)  # shares memory with t
        for i in range(flat.size):
            orig = flat[i]
            flat[i] = orig + eps
            with engine.no_grad():
                plus = _scalar(fn, list(inputs), weights)[0].item()
            flat[i] = orig - eps
            with engine.no_grad():
                minus = _scalar(fn, list(inputs), weights)[0].item()
            flat[i] = orig
            numeric.reshape(-1)[i] = (plus - minus) / (2 * eps)
        if not np.allclose(analytic, numeric, atol=atol, rtol=rtol):
            worst = np.unravel_index(np.argmax(np.abs(analytic - numeric)), t.shape)
            raise AssertionError(
                f"gradient mismatch for input {k} (shape {tuple(t.shape)}) at {worst}: "
                f"analytic {analytic[worst]:.6g} vs numeric {numeric[worst]:.6g}"
            )


def rand(*shape: int, low: float = -1.0, high: float = 1.0, seed: int = 0,
         requires_grad: bool = True) -> engine.Tensor:
    data = np.random.default_rng(seed).uniform(low, high, size=shape)
    return engine.tensor(data, dtype=engine.float64, requires_grad=requires_grad)
