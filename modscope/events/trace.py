"""``EventSource``: the read side every trace shares that needs nothing but events.

A trace, live or loaded from a file, offers its events in order (``events``, a list, or
``iter_events()``, one at a time), the firing order, and the files a trace can be written to
(JSON Lines, Chrome's trace format). The live recorder (``capture.recorder``) builds on this
class; the reports on top of it (summary, tree, timeline) are a view's and live in
``views.trace.EventTrace``. Kept here so that capture reads nothing from views.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

from .files import save_events, write_chrome_trace
from .schema import MODULE_EVENTS


class EventSource:
    """Events in order, the firing order, and the files they can be written to."""

    @property
    def events(self) -> list[dict[str, Any]]:
        raise NotImplementedError  # pragma: no cover - each kind of trace says where its events are

    def iter_events(self) -> Iterator[dict[str, Any]]:
        """The events in order, one at a time (a kind of trace that can, builds none ahead)."""
        return iter(self.events)

    def firing_order(self, kinds: Iterable[str] = MODULE_EVENTS) -> list[tuple[str, str]]:
        """``[(kind, module_path), ...]`` in the order the hooks fired. Read one event at a
        time; equal pairs are one tuple object (a million calls of a few thousand modules cost
        the list's 8 bytes each, not a tuple and a string each)."""
        wanted = set(kinds)
        pairs: dict[tuple[str, str], tuple[str, str]] = {}
        order = []
        for e in self.iter_events():
            if e["kind"] in wanted:
                pair = (e["kind"], e["path"])
                order.append(pairs.setdefault(pair, pair))
        return order

    def save(self, path: str | os.PathLike) -> None:
        """Write the events to a JSON Lines file (gzip when ``path`` ends in ``.gz``), streamed:
        encoded and written a batch at a time, one event dict alive at a time. A trace that
        evicted steps from memory says so in the file's ``end`` event (``dropped``,
        ``dropped_steps``, ``first_step``: see ``capture.recorder``)."""
        save_events(self._events_for_file(), path)

    def _events_for_file(self) -> Iterator[dict[str, Any]]:
        for event in self.iter_events():
            yield self._end_for_file(event) if event["kind"] == "end" else event

    def _end_for_file(self, end: dict[str, Any]) -> dict[str, Any]:
        """The ``end`` event as ``save`` writes it (a live trace adds what it evicted)."""
        return end

    def to_chrome_trace(self, path: str | os.PathLike) -> None:
        """Write a Trace Event Format file: open it in Perfetto or chrome://tracing."""
        write_chrome_trace(self.events, path)
