"""``engine.autograd``: reverse-mode differentiation with torch's API.

- ``backward``/``grad``: run the graph (``differentiate.py``, ``executor.py``);
- ``Function``: custom ops (``function.py``);
- ``gradcheck``/``gradgradcheck``: finite differences against backward (``gradcheck.py``);
- ``functional``: jacobian, hessian, vjp, jvp, hvp, vhp by reverse mode (``functional.py``);
- ``create_graph=True``: double backward through each node's tensor backward (``executor.py``);
- ``no_grad``/``enable_grad``/``set_grad_enabled``: grad mode (``grad_mode.py``);
- ``detect_anomaly``/``set_detect_anomaly``: anomaly detection (``anomaly_mode.py``);
- ``graph.Node``: what ``tensor.grad_fn`` is (``graph.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

import engine.autograd.anomaly_mode as anomaly_mode
import engine.autograd.functional as functional
import engine.autograd.graph as graph

from .._tensor import Size, Tensor
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .differentiate import backward, grad
from .executor import queue_callback
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = [
    "Function", "FunctionCtx", "GradcheckError", "Variable", "anomaly_mode", "backward", "detect_anomaly",
    "enable_grad",
    "functional", "grad", "gradcheck", "gradgradcheck", "graph", "inference_mode", "is_grad_enabled",
    "is_inference_mode_enabled", "no_grad", "once_differentiable", "set_detect_anomaly", "set_grad_enabled",
]


class _VariableMeta(type):
    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """torch's deprecated ``Variable``: ``Variable(t, requires_grad=False)`` returns a new tensor
    sharing ``t``'s data, detached from its graph, with ``requires_grad`` set; every tensor is an
    instance of it. ``volatile`` only warns, as in torch."""

    def __new__(cls, data: Any, requires_grad: bool = False, volatile: bool = False) -> Any:  # type: ignore[misc]
        if volatile:
            import warnings

            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          stacklevel=2)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)

    # torch reaches its autograd engine here: ``Variable._execution_engine.queue_callback(fn)``
    _execution_engine = SimpleNamespace(queue_callback=queue_callback)
