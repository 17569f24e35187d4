"""Comparing what an expression gives under the engine and under torch: its value in a plain,
comparable form, or the error it raised (type and message)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import engine


def plain(v: Any, torch: Any) -> Any:
    """Tensors as ``("tensor", dtype name, shape, values)``, dtypes and devices by name, sizes as
    tuples, sequences element-wise; anything else as it is."""
    if isinstance(v, tuple | list):
        return [plain(x, torch) for x in v]
    if isinstance(v, engine.Tensor | torch.Tensor):
        return ("tensor", str(v.dtype).split(".")[-1], tuple(v.shape), v.detach().numpy().tolist())
    if isinstance(v, engine.Size | torch.Size):
        return tuple(v)
    if isinstance(v, engine.dtype | torch.dtype):
        return ("dtype", str(v).split(".")[-1])
    if isinstance(v, engine.device | torch.device):
        return ("device", str(v))
    return v


def outcome(lib: Any, fn: Callable[[Any], Any], torch: Any) -> tuple:
    """``("ok", plain value)`` or ``("err", type name, message)``, the engine's message worded
    with ``torch.`` where it says ``engine.``."""
    try:
        return ("ok", plain(fn(lib), torch))
    except Exception as e:  # noqa: BLE001 - the error itself is what is compared
        return ("err", type(e).__name__, str(e).replace("engine.", "torch."))


def same(a: tuple, b: tuple) -> bool:
    """Two outcomes agree: the same error, or values equal up to float tolerances."""
    if a[0] != b[0] or a[0] == "err":
        return a == b
    return _close(a[1], b[1])


def _close(x: Any, y: Any) -> bool:
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(_close(p, q) for p, q in zip(x, y))
    if isinstance(x, tuple) and x and x[0] == "tensor":
        return x[:3] == y[:3] and np.allclose(np.array(x[3], dtype=float), np.array(y[3], dtype=float),
                                              rtol=1e-5, atol=1e-6, equal_nan=True)
    return x == y


def assert_as_torch(name: str, fn: Callable[[Any], Any], torch: Any) -> None:
    """``fn`` gives the same outcome under the engine as under torch (``name`` in the message)."""
    got, want = outcome(engine, fn, torch), outcome(torch, fn, torch)
    assert same(got, want), f"{name}: engine {got} != torch {want}"
