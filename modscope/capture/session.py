"""The process-wide trace of ``modscope run`` / ``modscope record`` (set by the child runner),
and ``log``. ``modscope.watch`` (``modscope/tracing.py``) narrows it."""

from __future__ import annotations

from typing import Any

active: Any = None  # the Recorder the child runner started, if this process runs under modscope


def log(**metrics: float) -> None:
    """Record metrics (``modscope.log(loss=loss.item())``) in the session of ``modscope run``;
    does nothing when the script runs on its own, so scripts can call it unconditionally."""
    if active is not None:
        active.log(**metrics)
