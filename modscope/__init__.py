"""modscope: hook tracing, diagrams and a live TUI for engine's nn.Module.

The engine never imports modscope; modscope attaches through the engine's public hooks only.

- ``modscope.trace(model)``       record module calls, hooks, optimizer steps (``tracer.py``)
- ``modscope.load_trace(path)``   read a recorded JSON Lines trace (``trace_file.py``)
- ``modscope.events``             the event protocol every consumer reads
- ``modscope.sinks``              memory, JSON Lines file and socket sinks
"""

__version__ = "0.1.0"

from .sinks import JsonlSink, MemorySink, SocketSink  # noqa: E402
from .trace_file import TraceFileError, load_trace  # noqa: E402
from .tracer import Trace, trace  # noqa: E402

__all__ = ["JsonlSink", "MemorySink", "SocketSink", "Trace", "TraceFileError", "load_trace", "trace"]
