"""When the viewer's full garbage collections run: while the user is idle, not between a key
and its screen, and as often as CPython would run them.

A full (oldest-generation) collection scans every object the collector tracks. In the viewer,
live data keeps adding objects and CPython ran one every few seconds: 90-120 ms each while the
demo trained (the UI thread stalled; most of the slowest key presses). The policy:

* at start, everything alive (Textual, the app and its widgets, modscope's modules) is frozen
  (``gc.freeze``): the collector never scans it again; reference counting still frees it;
* automatic full collections are off (the oldest generation's threshold is set out of reach);
  the young generations are collected as usual (cheap: in proportion to the new objects);
* the app's ticker calls ``tick``. A full collection is *due* by CPython's own measure: once
  the objects that reached the oldest generation since the last one (counted as young
  collections, ``gc.get_count()[2]``) are a quarter of those it left alive. It runs when due and
  the user has been idle ``quiet_s`` seconds; while the user is active, only once
  ``busy_factor`` times as many are pending (garbage stays bounded by the live heap: a 10,000
  -line tree expanded and collapsed leaves 10,000 cyclic lines each time), or after
  ``max_gap_s`` anyway.

``stop`` gives the thresholds and the frozen objects back (a test process runs many apps); on
CPython 3.12 the interpreter's own few hundred frozen objects go back with them (``unfreeze`` takes
all or nothing), where a full collection scans them too: a few hundred objects, unmeasurable.
Only one policy is active per process: a second one started meanwhile does nothing.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

QUIET_S = 1.0  # no key or mouse event for this long: the user is reading, a collection is unseen
BUSY_FACTOR = 4  # while the user is active, a full collection waits for this many times its due
MAX_GAP_S = 60.0  # and at most this long
OUT_OF_REACH = 1 << 30  # an oldest-generation threshold that is never reached

_active: GcPolicy | None = None
# Objects frozen before any program code ran: CPython 3.12 starts with a few hundred of its own in
# the permanent generation (3.11 and 3.13 with none). More than these: the program froze its own.
_INTERPRETER_FROZEN = gc.get_freeze_count()


class GcPolicy:
    """See the module docstring. ``clock``, ``collect``, ``pending`` (young collections since
    the last full one) and ``survivors`` (objects tracked after one) are injectable for the tests."""

    def __init__(self, *, quiet_s: float = QUIET_S, busy_factor: float = BUSY_FACTOR, max_gap_s: float = MAX_GAP_S,
                 clock: Callable[[], float] = time.monotonic,
                 collect: Callable[[], object] = lambda: gc.collect(2),
                 pending: Callable[[], int] = lambda: gc.get_count()[2],
                 survivors: Callable[[], int] = lambda: len(gc.get_objects())) -> None:
        self.quiet_s, self.busy_factor, self.max_gap_s = quiet_s, busy_factor, max_gap_s
        self.clock, self.collect, self.pending, self.survivors = clock, collect, pending, survivors
        self.active = False
        self.collections = 0  # full collections run by ``tick`` (the tests count them)
        self.last_input = self.last_collection = clock()
        self.due = 10  # young collections that make a full one due (set by ``start``, after each)
        self._saved: tuple[int, int, int] | None = None
        self._froze = False

    def start(self) -> None:
        """Freeze what is alive and turn automatic full collections off (a no-op when another
        policy is active, or when the collector is off: then someone else decides)."""
        global _active
        if _active is not None or not gc.isenabled():
            return
        _active, self.active = self, True
        self._saved = gc.get_threshold()
        gc.collect(1)  # the young garbage first: what is frozen should be alive
        # A program that froze objects itself keeps its own freeze (unfreeze would undo it too).
        self._froze = gc.get_freeze_count() <= _INTERPRETER_FROZEN
        if self._froze:
            gc.freeze()
        gc.set_threshold(self._saved[0], self._saved[1], OUT_OF_REACH)
        self._set_due()
        self.last_input = self.last_collection = self.clock()

    def stop(self) -> None:
        """The thresholds as they were, the frozen objects back with the others."""
        global _active
        if not self.active:
            return
        self.active = False
        _active = None
        if self._saved is not None:
            gc.set_threshold(*self._saved)
        if self._froze:
            gc.unfreeze()

    def touch(self) -> None:
        """The user pressed a key or used the mouse."""
        self.last_input = self.clock()

    def tick(self) -> bool:
        """Run a full collection if it is time (see the module docstring); True if it ran."""
        if not self.active:
            return False
        now = self.clock()
        idle = now - self.last_input >= self.quiet_s
        wanted = self.due if idle else self.due * self.busy_factor
        if self.pending() < wanted and now - self.last_collection < self.max_gap_s:
            return False
        self.collect()
        self.collections += 1
        self._set_due()
        self.last_collection = self.clock()
        return True

    def _set_due(self) -> None:
        """CPython's rule (a full collection once the objects new to the oldest generation are a
        quarter of those it holds), counted in young collections of ``threshold0 * threshold1``
        allocations each; never sooner than CPython's own ``threshold2``."""
        t0, t1, t2 = self._saved or gc.get_threshold()
        self.due = max(t2, round(self.survivors() / 4 / max(t0 * t1, 1)))
