"""modscope: hook tracing, diagrams and a live TUI for engine's nn.Module.

The engine never imports modscope; modscope attaches through the engine's public hooks only.

- ``modscope.trace(model)``       record module calls, hooks, optimizer steps (``tracer.py``)
- ``modscope.load_trace(path)``   read a recorded JSON Lines trace (``trace_file.py``)
- ``modscope.watch(model)``       trace one model inside ``modscope run`` (``session.py``)
- ``modscope.log(loss=...)``      metrics for the TUI's sparklines inside ``modscope run``
- ``modscope.events``             the event protocol every consumer reads
- ``modscope.sinks``              memory, JSON Lines file and socket sinks
- ``modscope.tui``                the terminal UI (reads events only: never imports engine)

Names are imported on first use, so ``import modscope.tui`` does not load the engine.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "trace": "tracer", "Trace": "tracer", "load_trace": "trace_file", "TraceFileError": "trace_file",
    "watch": "session", "log": "session",
    "JsonlSink": "sinks", "MemorySink": "sinks", "SocketSink": "sinks", "TeeSink": "sinks",
}
__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'modscope' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
