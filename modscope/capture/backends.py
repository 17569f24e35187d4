"""Which framework a model or tensor belongs to, and the backend that captures it.

A backend is the framework-specific half of capture: how to register the global module and
optimizer hooks, how to summarise a tensor, how to read parameter statistics and the autograd
graph. ``capture.engine`` and ``capture.torch`` each export one ``BACKEND``; the recorder and
the diagrams use nothing else of either framework. Torch is imported only when a torch object is
seen (``backend_for``) or a script already imported it (``loaded_backends``).

Example::

    >>> backend_for(engine.nn.Linear(2, 2)).name
    'engine'
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any, Protocol

from ..install_hints import TORCH_INSTALL


class Backend(Protocol):
    """What the recorder and the diagrams need of a framework (see ``capture.engine``)."""

    name: str  # "engine" or "torch"
    version: str
    Tensor: type
    Module: type
    # Module backward seen through the framework's full backward hooks (the engine: torch's own
    # wiring, with observer hooks marked transparent) or through tensor and node hooks the
    # module's forward hook sets (torch: its full backward hooks forbid in-place updates of
    # module outputs, which an observer must not do). See ``capture.backward``.
    full_backward_hooks: bool
    module_hooks: Any  # the framework's nn.modules.module (global hooks and their dicts)
    optimizer_hooks: Any  # the framework's optim.optimizer (global step hooks)
    RemovableHandle: type  # its ``next_id`` counts every hook handle ever made
    autograd: Any  # the framework's autograd module: ``backward`` is watched for the loss (``sampling``)

    def transparent_hook(self, fn: Any) -> Any: ...
    def is_grad_enabled(self) -> bool: ...
    def current_sequence_nr(self) -> int: ...
    def capture_all(self, value: Any, tid: bool = True, stats: bool = False) -> tuple: ...
    def forget_arrays(self) -> None: ...
    def forget_gradients(self) -> None: ...
    def stats_plan(self, tensors: list[Any], exact_stats: bool = False) -> Any: ...
    # ``(global gradient norm, NaN/Inf in a gradient)`` of the tensors' gradients: a light step's
    # figures (``capture.sampling``)
    def grad_norm(self, tensors: list[Any]) -> tuple[float | None, bool]: ...
    def graph_event_fields(self, output: Any, param_paths: dict[str, Any]) -> dict[str, Any]: ...
    def walk(self, roots: Any) -> list[Any]: ...
    def check_traceable(self, model: Any) -> None: ...
    # Statistics left on a device (torch): ``resolve(records)`` fetches them in one transfer at
    # delivery; ``None`` when every statistic is a number already (the engine).
    resolve: Any
    # Makes the observer that sees module backward where ``full_backward_hooks`` is False (torch); None otherwise.
    backward_observer: Any


class UntraceableError(TypeError):
    """An object modscope cannot trace; the message says what it is and what to do."""


_MODULES = {"engine": "modscope.capture.engine", "torch": "modscope.capture.torch"}


def load(name: str) -> Backend:
    """The backend called ``name`` (imports its framework)."""
    if name == "torch" and importlib.util.find_spec("torch") is None:
        raise UntraceableError(f"this needs PyTorch, which is not installed: {TORCH_INSTALL}")
    return importlib.import_module(_MODULES[name]).BACKEND


def framework_of(obj: Any) -> str | None:
    """``"engine"`` or ``"torch"`` for a module, tensor or optimizer of that framework, else None
    (looked up through the class's module name: nothing is imported)."""
    for cls in type(obj).__mro__:
        root = cls.__module__.partition(".")[0]
        if root in _MODULES:
            return root
    return None


def backend_for(obj: Any) -> Backend:
    """The backend of ``obj`` (a module or tensor of either framework); ``UntraceableError``
    naming the object otherwise."""
    name = framework_of(obj)
    if name is None:
        raise UntraceableError(f"modscope cannot trace a {type(obj).__module__}.{type(obj).__qualname__}: "
                               "expected an nn.Module (or tensor) of the bundled engine or of PyTorch")
    return load(name)


def global_backend() -> Backend:
    """What a trace without a model follows: the framework the program has imported (the engine
    when it has imported neither; when it has imported both, the engine: pass
    ``backend="torch"`` to the trace for torch)."""
    return load("engine" if "engine" in sys.modules or "torch" not in sys.modules else "torch")
