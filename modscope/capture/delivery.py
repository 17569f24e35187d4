"""How a trace's events reach the in-memory log, the sinks and the observer.

A hook records a module event as one flat tuple (``events.records``); the dicts are built at the
step's end, in one batch with the step's other events, or at once when ``immediate`` (a
breakpoint needs each event as it happens). Building dicts in the hooks costs several times
more, because the training step between two hooks has pushed the tracer's code and data out of
the CPU caches. Sequence numbers, times and statistics are taken in the hook, so readers see no
difference but the moment of delivery. Other events (``session``, ``step``, ``error`` ...) are
delivered as they are emitted, behind the module records waiting before them.

``Delivery`` is the part of ``Trace`` that does this; it reads the trace's state (sequence,
step, sinks, observer) and never touches a framework.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from typing import Any

from ..events.records import as_event, flat_fields
from ..events.schema import make
from ..events.sinks import HEADER_KINDS, Sink, write_batch, write_records

PENDING_LIMIT = 512  # recorded module events delivered at the latest after this many (a step without an optimizer)


class Delivery:
    """Emitting, recording and delivering events (a base of ``Trace``)."""

    def _emit(self, kind: str, **fields: Any) -> None:
        if self._step_over and kind == "hook":  # a module hook: the next step has begun (see Trace._advance)
            self._begin_step()
        seq = self._seq
        self._seq = seq + 1
        event = make(kind, seq, time.monotonic_ns(), self._step, **fields)
        if self._pending:
            if kind in HEADER_KINDS:  # a new root model in global mode (see _deliver_pending)
                self._pending_header = True
            self._pending.append(event)  # behind the module events recorded before it
        else:
            self._push(event)

    def _record(self, kind: str, path: str, call: int, captured: tuple, dur: int | None, t: int) -> None:
        """A module event, recorded as a tuple: the dict is built at the step's end
        (``_deliver_pending``), in one batch with the step's other events, or at once when
        ``immediate``. Building dicts in the hooks costs several times more, because the
        training step between two hooks has pushed the tracer's code and data out of the CPU
        caches. Sequence numbers, times and statistics are taken now, so nothing changes for
        readers but the moment of delivery."""
        if self._step_over:  # the first module event after an optimizer step: the next step begins
            self._begin_step()
        seq = self._seq
        self._seq = seq + 1
        # One flat tuple: the event's fields, the number of values, their summaries' fields.
        # Every tuple that outlives the step counts towards the garbage collector's next
        # young-generation pass, which in a training step lands in the middle of a forward or a
        # backward (where the autograd graph makes the young generation large): a nested tuple
        # per value doubled those passes (measured: 39 -> 25 µs of collections per Net step).
        # Nothing in it is a container, so each pass then drops it from the collector's lists.
        fields = captured[0] if len(captured) == 1 and captured[0] is not None else flat_fields(captured, self.stats)
        self._pending.append((kind, seq, t, self._step, path, call, dur, len(captured)) + fields)
        if self.immediate or len(self._pending) >= PENDING_LIMIT:
            self._deliver_pending()

    def _deliver_pending(self) -> None:
        """Deliver the recorded events, in order. The in-memory log takes the tuples as they are
        (``EventLog`` builds the dicts when they are read, and evicting a tuple frees less than
        a dict), and so do the other sinks: each makes the dicts where it needs them (the file
        and viewer sinks of ``modscope run`` on their worker threads, out of the training
        loop's way). An observer that is listening needs the dicts now: then they are built
        once, the sinks take them, and the observer sees each event (it may pause the program
        at any of them)."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        if self._backend.resolve is not None:  # statistics left on a device (torch): one transfer
            pending = self._backend.resolve(pending)
        self._events_in_step += len(pending)
        headers, self._pending_header = self._pending_header, False
        self._memory.write_records(pending, headers=headers)  # dicts when read (see EventLog)
        # A listening observer needs the dicts now: built once, for it and the sinks.
        events = [as_event(item) for item in pending] if self._observer_listening() else None
        for sink in list(self._extra_sinks):
            try:
                if events is None:
                    write_records(sink, pending, as_event)
                else:
                    write_batch(sink, events)
            except Exception as exc:  # noqa: BLE001 - a broken sink must not stop training
                self._detach(sink, exc)
        # ``_batch_rest``: how many events of this delivery the observer sees after this one. A
        # batch is a step that already ran, so a pause asked for from the viewer waits for its
        # last event (see Controller): the whole step is then in view, and a single step runs the
        # next one.
        for i, event in enumerate(events or ()):
            self._batch_rest = len(events) - 1 - i
            self._observe(event)
        self._batch_rest = 0

    def _push(self, event: dict[str, Any]) -> None:
        """Deliver one event: memory, the other sinks, the observer."""
        self._events_in_step += 1
        self._memory.write(event)
        for sink in self._extra_sinks:
            try:
                sink.write(event)
            except Exception as exc:  # noqa: BLE001 - a broken sink must not stop training
                self._detach(sink, exc)
        if self._observer_listening():
            self._observe(event)

    def _observer_listening(self) -> bool:
        """An observer that may act on events: set, and not ``idle`` (checked per delivery)."""
        return self.observer is not None and not getattr(self.observer, "idle", False)

    def _observe(self, event: dict[str, Any]) -> None:
        if self._observing:
            return  # events the observer emits itself are not observed again
        self._observing = True
        start = time.monotonic_ns()
        try:
            self.observer(event)
        except (KeyboardInterrupt, SystemExit):
            raise  # the viewer asked the traced program to stop
        except Exception as exc:  # noqa: BLE001
            self._emit_error(exc, where="trace observer")
        finally:
            self._observing = False
            # The time the observer held the traced thread (paused at a breakpoint) is not the
            # model's: the hooks leave it out of the durations of the calls it fell into.
            self._observer_ns += time.monotonic_ns() - start

    def _detach(self, sink: Sink, exc: Exception) -> None:
        self._sinks.remove(sink)
        self._extra_sinks.remove(sink)
        self._emit_error(exc, where=f"sink {type(sink).__name__} (detached)")

    def _emit_error(self, exc: BaseException, where: str, module: str | None = None) -> None:
        self._errors += 1
        self._emit("error", etype=type(exc).__name__, message=str(exc), where=where, module=module,
                   traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))

    def _safely(self, fn: Callable[[], Any]) -> None:
        try:
            fn()
        except Exception as exc:  # noqa: BLE001
            self._emit_error(exc, where=getattr(fn, "__qualname__", "sink"))

