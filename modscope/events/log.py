"""The trace's own in-memory events, with module events kept as recorded tuples until read.

A hook records a module event as a tuple (``Trace._record``): building the event dict costs
more than recording it, several times more inside a training step (see ``Trace._record``). This
log keeps the tuples and builds the dicts when the events are read, which for most traces is
once, after the run, out of the training loop's way; evicting a tuple from a bounded log also
frees less than a dict. (The other sinks get the same tuples and build the dicts where they need
them; see ``Trace._deliver_pending``.)

The log is bounded by steps as well as by events (``keep_steps``, ``max_events``): it keeps the
most recent training steps whole, evicting the oldest step entirely before anything of a newer
one, so what a bounded trace holds is always a run of complete steps (unless one step alone is
larger than ``max_events``: then its oldest events go). Everything evicted is counted.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Iterator
from typing import Any

from .records import as_event
from .sinks import _HEADER_SET, HEADER_KINDS, MemorySink, _kind_of, in_sequence


def _step_of(item: tuple | dict[str, Any]) -> int:
    """The step of a record (its fourth field) or of an event dict (0 if it has none)."""
    return item[3] if type(item) is tuple else item.get("step", 0)


def _seq_of_item(item: tuple | dict[str, Any]) -> int:
    return item[1] if type(item) is tuple else item["seq"]


class EventLog(MemorySink):
    """A ``MemorySink`` that also keeps recorded tuples (``write_records``) and turns them into
    event dicts when read.

    Bounds: ``keep_steps`` (None: no bound) keeps the events of the last ``keep_steps`` training
    steps (the step in progress among them); ``max_events`` (None: no bound) caps the events kept.
    Either way the oldest step goes first and whole, while more than one step is kept; a single
    step larger than ``max_events`` loses its oldest events (as ``MemorySink`` does). Header
    events (session, model, end) are never evicted. ``dropped`` counts the evicted events,
    ``dropped_steps`` the steps evicted entirely.

    Example::

        >>> log = EventLog(max_events=100)
        >>> log.write_records([("forward", 3, 0, 0, "fc", 0, 10, 0)])  # no values
        >>> log.events[0]["outputs"]
        []
    """

    def __init__(self, max_events: int | None = None, keep_steps: int | None = None) -> None:
        if max_events is not None and type(max_events) is not int:
            raise ValueError(f"max_events must be a positive number or None, got {max_events!r}")
        super().__init__(max_events)
        if keep_steps is not None and (type(keep_steps) is not int or keep_steps < 1):
            raise ValueError(f"keep_steps must be a positive number or None, got {keep_steps!r}")
        self.keep_steps = keep_steps
        self.body: deque[Any] = deque()  # bounded here, by whole steps (see _evict), not by maxlen
        self._steps: deque[list[int]] = deque()  # [step, events of it in body], oldest first
        self.dropped_steps = 0
        self._has_records = False

    def write(self, event: dict[str, Any]) -> None:
        if event["kind"] in HEADER_KINDS:
            self.headers.append(event)
        else:
            self._extend((event,))

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

    def _extend(self, items: Any) -> None:
        """Append ``items`` (none of them a header, in order), counting them per step, then evict
        what the bounds no longer allow."""
        if not items:
            return
        first, last = _step_of(items[0]), _step_of(items[-1])
        if first == last:  # the usual batch: one step's events (steps never go back)
            self._count(first, len(items))
        else:
            for step, group in itertools.groupby(items, _step_of):
                self._count(step, sum(1 for _ in group))
        self.body.extend(items)
        self._evict()

    def _count(self, step: int, n: int) -> None:
        steps = self._steps
        if steps and steps[-1][0] == step:
            steps[-1][1] += n
        else:
            steps.append([step, n])

    def _evict(self) -> None:
        steps = self._steps
        over = len(self.body) - self.max_events if self.max_events is not None else 0
        too_many_steps = self.keep_steps is not None and len(steps) > self.keep_steps
        while len(steps) > 1 and (too_many_steps or over > 0):
            _, n = steps.popleft()
            self._drop_front(n)
            self.dropped_steps += 1
            over -= n
            too_many_steps = self.keep_steps is not None and len(steps) > self.keep_steps
        if over > 0:  # one step alone is larger than max_events: its oldest events go
            self._drop_front(over)
            steps[0][1] -= over

    def _drop_front(self, n: int) -> None:
        popleft = self.body.popleft
        for _ in itertools.repeat(None, n):
            popleft()
        self.dropped += n

    @property
    def first_step(self) -> int | None:
        """The oldest step still (at least partly) kept; None while nothing but headers is."""
        return self._steps[0][0] if self._steps else None

    def materialize(self) -> None:
        """Replace the kept tuples by their event dicts, once. Only from the writing thread:
        the body is swapped for a new one."""
        if self._has_records:
            self.body = deque(map(as_event, self.body))
            self._has_records = False

    @property
    def events(self) -> list[dict[str, Any]]:
        """Everything kept, in sequence order. Safe from any thread: tuples are turned into dicts
        on a copy (``materialize`` makes that permanent)."""
        body = list(self.body)  # one C-level copy: consistent while another thread appends
        if self._has_records:
            body = [as_event(item) for item in body]
        return in_sequence(self.headers, body)

    def iter_events(self) -> Iterator[dict[str, Any]]:
        """Everything kept, in sequence order, one event dict at a time: a record becomes a dict
        only when the iteration reaches it, and nothing keeps it after (unlike ``events`` and
        ``materialize``, which hold every dict at once). Iterates a copy of the references taken
        now (8 bytes an event), so writing meanwhile, from any thread, is safe."""
        return map(as_event, self.iter_items())

    def iter_items(self) -> Iterator[tuple | dict[str, Any]]:
        """Everything kept, in sequence order, as kept: records (tuples) and event dicts (what
        ``save`` encodes without building dicts; see ``records.record_line``). A copy of the
        references, as ``iter_events``."""
        return heapq.merge(list(self.headers), list(self.body), key=_seq_of_item)
