"""What every trace offers once its events exist, live or loaded from a file.

``EventTrace`` is the read side of a trace: the events in order, the firing order, the rich
reports and the files a trace can be written to. The live ``capture.Trace`` adds recording on
top; ``load_trace`` gives a ``RecordedTrace`` over the events of a file (``events.files``
reads and validates them). Neither reaches into
the other's state.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..events.files import read_events
from ..events.schema import MODULE_EVENTS


class EventTrace:
    """Reports and exports over ``self.events`` (a list of event dicts, in order)."""

    @property
    def events(self) -> list[dict[str, Any]]:
        raise NotImplementedError  # pragma: no cover - each kind of trace says where its events are

    def firing_order(self, kinds: Iterable[str] = MODULE_EVENTS) -> list[tuple[str, str]]:
        """``[(kind, module_path), ...]`` in the order the hooks fired."""
        wanted = set(kinds)
        return [(e["kind"], e["path"]) for e in self.events if e["kind"] in wanted]

    def save(self, path: str | os.PathLike) -> None:
        """Write the events to a JSON Lines file (gzip when ``path`` ends in ``.gz``)."""
        from ..events.files import save_events
        save_events(self.events, path)

    def to_chrome_trace(self, path: str | os.PathLike) -> None:
        """Write a Trace Event Format file: open it in Perfetto or chrome://tracing."""
        from ..events.files import write_chrome_trace
        write_chrome_trace(self.events, path)

    def summary(self) -> Printable:
        """A table like torchinfo's: shapes, parameters, mult-adds, times (``views.report``).
        ``print(tr.summary())`` prints it; rich and notebooks render it as a rich Table."""
        from .report import summary_table
        return Printable(summary_table(self.events))

    def totals(self) -> dict[str, int]:
        """The summary's totals as numbers: ``{"params", "trainable", "mult_adds"}`` (shared
        parameters counted once; mult-adds of one forward pass)."""
        from .report import summary_totals
        return summary_totals(self.events)

    def tree(self) -> Printable:
        """The ``named_modules`` tree with the same figures (a rich Tree, printable)."""
        from .report import module_tree
        return Printable(module_tree(self.events))

    def timeline(self) -> Printable:
        """The hook firing order, indented by nesting (rich Text, printable)."""
        from .report import timeline
        return Printable(timeline(self.events))


class Printable:
    """A rich renderable that ``print`` and ``str`` show as text (the terminal's width, or 120
    columns when output is not a terminal, so piped output is not squeezed), and that rich and
    Jupyter render as the renderable itself (``renderable``)."""

    def __init__(self, renderable: Any) -> None:
        self.renderable = renderable

    def __rich__(self) -> Any:
        return self.renderable

    def __str__(self) -> str:
        from rich.console import Console

        console = Console(width=None if sys.stdout.isatty() else 120, record=True, file=io.StringIO())
        console.print(self.renderable)
        return console.export_text()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": str(self)}


class RecordedTrace(EventTrace):
    """The events of a trace file (``load_trace``): ``truncated`` says the recording was cut off
    (its last line cut short, or no ``end`` event: the recording process was killed before it
    closed the trace; everything complete before the cut is kept), ``path`` where it came from."""

    def __init__(self, events: list[dict[str, Any]], path: Path, truncated: bool) -> None:
        self._events = events
        self.path = path
        self.truncated = truncated

    @property
    def events(self) -> list[dict[str, Any]]:
        return self._events

    @property
    def dropped(self) -> int:
        """Events the recording process reported as lost (its ``end`` event), 0 if it did not end."""
        end = next((e for e in reversed(self._events) if e["kind"] == "end"), None)
        return end.get("dropped", 0) if end else 0


def load_trace(path: str | os.PathLike) -> RecordedTrace:
    """The events of a recorded file as a ``RecordedTrace``. Raises ``TraceFileError`` naming
    the file (and line) for anything that is not a complete modscope trace; never executes
    anything from the file (see ``events.files``)."""
    events, truncated = read_events(path)
    return RecordedTrace(events, Path(path), truncated)
