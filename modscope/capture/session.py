"""The process-wide trace of ``modscope run`` (set by the child runner), and ``watch``."""

from __future__ import annotations

from typing import Any

active: Any = None  # the Trace the child runner started, if this process runs under modscope


def watch(model: Any, **trace_kwargs: Any) -> Any:
    """Trace exactly ``model``.

    Under ``modscope run`` this narrows the running session (which otherwise traces every module
    that runs) to ``model``; elsewhere it starts an in-memory trace of ``model`` and returns it
    (stop it with ``.stop()``)."""
    if active is not None:
        return active.watch(model)
    from .recorder import trace
    return trace(model, **trace_kwargs).start()


def log(**metrics: float) -> None:
    """Record metrics (``modscope.log(loss=loss.item())``) in the session of ``modscope run``;
    does nothing when the script runs on its own, so scripts can call it unconditionally."""
    if active is not None:
        active.log(**metrics)
