"""Turning results of the same code on engine and on torch into comparable plain data."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np


def _is_tensor(x: Any) -> bool:
    return type(x).__module__.split(".")[0] in ("engine", "torch") and hasattr(x, "requires_grad") \
        and hasattr(x, "shape")


def normalise(s: str) -> str:
    """torch's names in messages and reprs become engine's (``torch.FloatTensor``...)."""
    return s.replace("torch", "engine")


def plain(x: Any) -> Any:
    """Tensors become ``(kind, shape, dtype, requires_grad, values)``; containers recurse (an
    OrderedDict keeps its order as a list of items); strings are normalised."""
    if _is_tensor(x):
        values = np.round(x.detach().numpy().astype(np.float64), 4).tolist()
        return (type(x).__name__, tuple(x.shape), str(x.dtype).split(".")[-1], bool(x.requires_grad), values)
    if hasattr(x, "_get_name") and hasattr(x, "_modules"):  # a Module
        return ("Module", normalise(repr(x)))
    if isinstance(x, OrderedDict):
        return ("OrderedDict", [(plain(k), plain(v)) for k, v in x.items()])
    if isinstance(x, dict):
        return {plain(k): plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return type(x)(plain(v) for v in x) if type(x) in (list, tuple) else tuple(plain(v) for v in x)
    if isinstance(x, str):
        return normalise(x)
    if isinstance(x, BaseException):
        return (type(x).__name__, normalise(str(x)))
    return x


def outcome(fn: Callable[[], Any]) -> Any:
    """The result of ``fn()``, or the exception it raised (for ``plain``)."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the exception is the result under test
        return e


def fill_params(model: Any, lib: Any, seed: int = 0) -> Any:
    """Give every parameter and floating buffer the same values on both libraries."""
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for t in [*model.parameters(), *model.buffers()]:
            if t.is_floating_point():
                t.copy_(lib.tensor(rng.standard_normal(tuple(t.shape)).astype(np.float32)))
    return model


def ramp(lib: Any, *shape: int, requires_grad: bool = False) -> Any:
    """A deterministic float32 tensor (the same on both libraries)."""
    n = int(np.prod(shape))
    data = (np.arange(n, dtype=np.float32).reshape(shape) - n / 2) / max(n, 1)
    return lib.tensor(data, requires_grad=requires_grad)
