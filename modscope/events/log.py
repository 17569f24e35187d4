"""The trace's own in-memory events, with module events kept as recorded tuples until read.

A hook records a module event as a tuple (``Trace._record``): building the event dict costs
more than recording it, several times more inside a training step (see ``Trace._record``). This
log keeps the tuples and builds the dicts when the events are read, which for most traces is
once, after the run, out of the training loop's way; evicting a tuple from a bounded log also
frees less than a dict. (The other sinks get the same tuples and build the dicts where they need
them; see ``Trace._deliver_pending``.)
"""

from __future__ import annotations

from collections import deque
from typing import Any

from .records import as_event
from .sinks import _HEADER_SET, HEADER_KINDS, MemorySink, _kind_of, in_sequence


class EventLog(MemorySink):
    """A ``MemorySink`` that also keeps recorded tuples (``write_records``) and turns them into
    event dicts when read. Bounded and counted exactly like ``MemorySink``.

    Example::

        >>> log = EventLog(max_events=100)
        >>> log.write_records([("forward", 3, 0, 0, "fc", 0, 10, 0)])  # no values
        >>> log.events[0]["outputs"]
        []
    """

    def __init__(self, max_events: int | None = None) -> None:
        super().__init__(max_events)
        self._has_records = False

    def write_records(self, items: list[tuple | dict[str, Any]], *, headers: bool = True) -> None:
        """Keep ``items`` in order: tuples from ``Trace._record`` or event dicts.
        ``headers=False``: the caller knows no header event is among them (no scan)."""
        self._has_records = True
        if not headers or _HEADER_SET.isdisjoint(map(_kind_of, [item for item in items if type(item) is dict])):
            self._extend(items)
            return
        for item in items:  # a batch with a header in it (the start of a run, a new model)
            if type(item) is dict and item["kind"] in HEADER_KINDS:
                self.headers.append(item)
            else:
                self._extend((item,))

    def materialize(self) -> None:
        """Replace the kept tuples by their event dicts, once. Only from the writing thread:
        the body is swapped for a new one."""
        if self._has_records:
            self.body = deque(map(as_event, self.body), maxlen=self.max_events)
            self._has_records = False

    @property
    def events(self) -> list[dict[str, Any]]:
        """Everything kept, in sequence order. Safe from any thread: tuples are turned into dicts
        on a copy (``materialize`` makes that permanent)."""
        body = list(self.body)  # one C-level copy: consistent while another thread appends
        if self._has_records:
            body = [as_event(item) for item in body]
        return in_sequence(self.headers, body)
