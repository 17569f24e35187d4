"""What every trace offers once its events exist, live or loaded from a file.

``EventTrace`` is the read side of a trace: on top of ``events.trace.EventSource`` (the events in
order, the firing order, the files a trace can be written to) the rich reports. ``modscope.Trace``
joins it to the live recorder (``capture.recorder.Recorder``, which reads nothing from views);
``load_trace`` gives a ``RecordedTrace`` over the events of a file (``events.files``
reads and validates them). Neither reaches into
the other's state.

Big traces are read one event at a time (``iter_events``): ``save``, ``firing_order`` and the
summaries never hold every event at once, and a loaded trace keeps none in memory until
``events`` (a list, for small traces) is asked for.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..events.files import TraceFile, TraceFileError
from ..events.schema import MODULE_EVENTS
from ..events.sinks import in_sequence
from ..events.trace import EventSource
from ..events.trace_paths import RankNotFoundError, rank_path_base, rank_paths, resolve_rank


class EventTrace(EventSource):
    """Reports over the events of a trace, in order (``events.trace.EventSource`` gives the
    events, the firing order and the files; this adds what a view draws of them)."""

    def _report_events(self) -> list[dict[str, Any]]:
        """What the per-module reports read (``views.report``: the model and graph events, and
        the module events of the last step with a forward), gathered in one pass that holds at
        most two steps' module events: every event but module events, and that step's module
        events, in order."""
        others: list[dict[str, Any]] = []
        best: list[dict[str, Any]] = []  # the module events of the last complete step with a forward
        current: list[dict[str, Any]] = []
        current_step, forward = None, False
        for e in self.iter_events():
            kind = e["kind"]
            if kind not in MODULE_EVENTS:
                others.append(e)
                continue
            if e["step"] != current_step:  # steps never go back: the previous one is over
                if forward:
                    best = current
                current, current_step, forward = [], e["step"], False
            current.append(e)
            forward = forward or kind == "forward"
        if forward:
            best = current
        return in_sequence(others, best)

    def summary(self, columns: Iterable[str] | str | None = None, width: int | None = None) -> Printable:
        """A table like torchinfo's, a row per module call: input and output shapes, parameters,
        mult-adds, times, bytes saved for backward; then an estimated memory block (parameters,
        gradients, optimizer state, saved for backward) (``views.summary``). ``print(tr.summary())``
        prints it; rich and notebooks render it.

        ``columns``: the columns to show (names from ``views.summary.COLUMNS``, e.g.
        ``("input", "output", "params")``; ``ValueError`` naming an unknown one); by default every
        column that fits ``width`` (the terminal's, 80 columns when output is not a terminal),
        the caption naming those left out. When older steps were evicted from the trace, the
        caption says how many."""
        from .summary import SummaryReport
        report = SummaryReport(self._report_events(), columns, width, note=self._dropped_note())
        return Printable(report, width=width, piped_width=80)

    def _dropped_note(self) -> str:
        """What the trace lacks, in a sentence ("" when nothing): for the summary's caption."""
        return dropped_note(getattr(self, "dropped", 0), getattr(self, "dropped_steps", 0))

    def totals(self) -> dict[str, int]:
        """The summary's totals as numbers: ``{"params", "trainable", "mult_adds"}`` (shared
        parameters counted once; mult-adds of one forward pass)."""
        from .report import summary_totals
        return summary_totals(self._report_events())

    def tree(self) -> Printable:
        """The ``named_modules`` tree with the same figures (a rich Tree, printable)."""
        from .report import module_tree
        return Printable(module_tree(self._report_events()))

    def timeline(self) -> Printable:
        """The hook firing order, indented by nesting (rich Text, printable)."""
        from .report import timeline
        return Printable(timeline(self.events))

    def to_pandas(self, table: str = "events") -> Any:
        """A table of the trace as a ``pandas.DataFrame``: ``"events"`` (one row per event),
        ``"modules"`` (per step and module: calls, times, output and gradient statistics) or
        ``"params"`` (per step and parameter: norms, update ratio, statistics); see
        ``views.frames``. Raises ``ImportError`` saying how to install pandas when it is missing."""
        from .frames import to_pandas
        return to_pandas(self.iter_events(), table)

    def _repr_html_(self) -> str:
        """Jupyter: the model, steps and events, a collapsible module tree, the summary table and
        plots over steps (``views.notebook``)."""
        from .notebook import trace_html
        return trace_html(self)


class Printable:
    """A rich renderable that ``print`` and ``str`` show as text (``width``, else the terminal's,
    else ``piped_width`` columns when output is not a terminal), and that rich and
    Jupyter render as the renderable itself (``renderable``)."""

    def __init__(self, renderable: Any, width: int | None = None, piped_width: int = 120) -> None:
        self.renderable = renderable
        self.width, self.piped_width = width, piped_width

    def __rich__(self) -> Any:
        return self.renderable

    def __str__(self) -> str:
        from rich.console import Console

        width = self.width or (None if sys.stdout.isatty() else self.piped_width)
        console = Console(width=width, record=True, file=io.StringIO())
        console.print(self.renderable)
        return console.export_text()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        from .notebook import printable_html
        return {"text/plain": str(self), "text/html": printable_html(self.renderable)}


class RecordedTrace(EventTrace):
    """The events of a trace file (``load_trace``): ``truncated`` says the recording was cut off
    (its last line cut short, or no ``end`` event: the recording process was killed before it
    closed the trace; everything complete before the cut is kept), ``path`` where it came from.

    Over a file (``events`` a ``TraceFile``) nothing is kept in memory: ``len``,
    ``dropped`` and ``truncated`` come from the validating pass of ``load_trace``, every
    iteration (``iter_events``, ``firing_order``, the reports, ``save``) reads the file again,
    one event at a time, and ``events`` reads it into a list once (for small traces)."""

    def __init__(self, events: list[dict[str, Any]] | TraceFile, path: Path, truncated: bool) -> None:
        self._file = events if isinstance(events, TraceFile) else None
        self._events = None if self._file is not None else events
        self.path = path
        self.truncated = truncated

    @property
    def events(self) -> list[dict[str, Any]]:
        if self._events is None:
            self._events = list(self._file)
        return self._events

    def iter_events(self) -> Iterator[dict[str, Any]]:
        return iter(self._events if self._events is not None else self._file)

    def firing_order(self, kinds: Iterable[str] = MODULE_EVENTS) -> list[tuple[str, str]]:
        """As ``EventTrace.firing_order``; over a file, from the kinds and paths ``load_trace``
        noted (the file is not read again)."""
        if self._file is None:
            return super().firing_order(kinds)
        return self._file.firing_order(kinds)

    def __len__(self) -> int:
        return len(self._events) if self._events is not None else self._file.count

    @property
    def ranks(self) -> dict[int, Path]:
        """``{rank: file}`` of every rank of this run recorded beside this trace's file (``{0:
        path}`` for a single process's trace; see ``events.trace_paths``)."""
        base = rank_path_base(self.path)
        return rank_paths(base) or {0: self.path}

    def rank_trace(self, rank: int) -> RecordedTrace:
        """Rank ``rank``'s trace of this run (``TraceFileError`` naming the ranks there are)."""
        return load_trace(f"{rank_path_base(self.path)}#{rank}")

    def to_pandas(self, table: str = "events", all_ranks: bool = True) -> Any:
        """As ``EventTrace.to_pandas``; for a run of several ranks, every rank's rows in one table
        with a ``rank`` column (rank by rank), as the notebook's plots show the run whichever
        rank's file was opened. ``all_ranks=False``: this file's rows only."""
        ranks = self.ranks
        if not all_ranks or len(ranks) < 2:
            return super().to_pandas(table)
        from .frames import concat_ranks
        return concat_ranks({rank: (self if path == self.path else load_trace(path)).to_pandas(table, False)
                             for rank, path in ranks.items()})

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.iter_events()

    def _end(self) -> dict[str, Any] | None:
        if self._events is None:
            return self._file.end_event
        return next((e for e in reversed(self._events) if e["kind"] == "end"), None)

    @property
    def dropped(self) -> int:
        """Events the recording reported as missing (its ``end`` event), 0 if it did not end."""
        end = self._end()
        return end.get("dropped", 0) if end else 0

    @property
    def dropped_steps(self) -> int:
        """Whole steps the recording reported as missing (a bounded trace saved after it
        evicted older steps; its ``end`` event), 0 if none or it did not end."""
        end = self._end()
        return end.get("dropped_steps", 0) if end else 0


def load_trace(path: str | os.PathLike) -> RecordedTrace:
    """The events of a recorded file as a ``RecordedTrace``. Raises ``TraceFileError`` naming
    the file (and line) for anything that is not a complete modscope trace; never executes
    anything from the file (see ``events.files``). Every event is validated here, in one
    pass that keeps none of them: the trace reads the file again, lazily, when iterated.

    A run of several ranks is one file per rank (``events.trace_paths``): ``path`` opens rank
    0's, ``"F#R"`` rank R's; ``ranks`` lists the files of every rank recorded beside it and
    ``rank_trace(R)`` loads one."""
    try:
        file = resolve_rank(path)
    except RankNotFoundError as e:
        raise TraceFileError(str(e)) from None
    source = TraceFile(file)
    return RecordedTrace(source, file, source.truncated)


def dropped_note(events: int, steps: int = 0) -> str:
    """The events (and whole older steps) a bounded trace evicted, in a sentence; "" for none."""
    if not events:
        return ""
    older = f"{events:,} events"
    if steps:
        older = f"{steps:,} older step{'s' if steps != 1 else ''} ({older})"
    return f"not in this trace: {older}, evicted to bound its memory"
