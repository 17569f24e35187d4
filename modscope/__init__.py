"""modscope: hook tracing, diagrams and a live TUI for ``nn.Module``, on the bundled engine or PyTorch.

- ``modscope.trace(model)``       record module calls, hooks, optimizer steps (``capture/``, joined
                                  to the reports in ``tracing.py``)
- ``modscope.load_trace(path)``   read a recorded JSON Lines trace (``events/files.py``)
- ``modscope.diff(a, b)``         compare two traces module by module (``views/diff/``)
- ``modscope.watch(model)``       trace one model inside ``modscope run`` (``tracing.py``)
- ``modscope.log(loss=...)``      metrics for the TUI's sparklines inside ``modscope run``
- ``modscope.graph``              diagrams: module tree, autograd graph, dataflow
- ``modscope.events``             the event protocol every consumer reads; sinks and trace files

The package is three layers, and the folders show them:

- ``capture/``: everything that touches a framework, one backend per framework
  (``capture/engine``, ``capture/torch``); a framework is imported only when one of its models
  or tensors is traced;
- ``events/``: plain, versioned JSON records, sinks and trace files: the contract between them;
- ``views/``: the TUI, the diagrams and the reports, which read events and nothing else.

``tests/test_layers.py`` checks that no view or event module imports a framework or ``capture``.
"""

from __future__ import annotations

__version__ = "0.2.0"

from . import graph
from .capture.backends import UntraceableError
from .capture.session import log
from .events.files import TraceFileError
from .events.sinks import JsonlSink, MemorySink, SocketSink, TeeSink
from .tracing import Trace, trace, watch
from .views.diff import diff
from .views.trace import RecordedTrace, load_trace

__all__ = ["JsonlSink", "MemorySink", "RecordedTrace", "SocketSink", "TeeSink", "Trace", "TraceFileError",
           "UntraceableError", "diff", "graph", "load_trace", "log", "trace", "watch"]
