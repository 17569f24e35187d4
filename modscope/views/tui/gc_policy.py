"""When the viewer's full garbage collections run: while the user is idle, not between a key
and its screen.

A full (oldest-generation) collection scans every object the collector tracks. In the viewer,
live data keeps adding objects and CPython ran one every few seconds: 90-120 ms each while the
demo trained (the UI thread stalled; most of the slowest key presses). The policy:

* at start, everything alive (Textual, the app and its widgets, modscope's modules) is frozen
  (``gc.freeze``): the collector never scans it again; reference counting still frees it;
* automatic full collections are off (the oldest generation's threshold is set out of reach);
  the young generations are collected as usual (cheap: in proportion to the new objects);
* the app's ticker calls ``tick``: a full collection runs once the user has been idle
  ``quiet_s`` seconds (at most every ``min_gap_s``), and after ``max_gap_s`` anyway, so cyclic
  garbage is still collected, at a time of the viewer's choosing.

``stop`` gives the thresholds and the frozen objects back (a test process runs many apps).
Only one policy is active per process: a second one started meanwhile does nothing.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

QUIET_S = 1.0  # no key or mouse event for this long: the user is reading, a collection is unseen
MIN_GAP_S = 10.0  # full collections at most this often while idle
MAX_GAP_S = 60.0  # and at least this often: cyclic garbage waits at most this long
OUT_OF_REACH = 1 << 30  # an oldest-generation threshold that is never reached

_active: GcPolicy | None = None


class GcPolicy:
    """See the module docstring. ``clock`` and ``collect`` are injectable for the tests."""

    def __init__(self, *, quiet_s: float = QUIET_S, min_gap_s: float = MIN_GAP_S, max_gap_s: float = MAX_GAP_S,
                 clock: Callable[[], float] = time.monotonic,
                 collect: Callable[[], object] = lambda: gc.collect(2)) -> None:
        self.quiet_s, self.min_gap_s, self.max_gap_s = quiet_s, min_gap_s, max_gap_s
        self.clock, self.collect = clock, collect
        self.active = False
        self.collections = 0  # full collections run by ``tick`` (the tests count them)
        self.last_input = self.last_collection = clock()
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
        self._froze = gc.get_freeze_count() == 0  # a program that froze itself keeps its own freeze
        if self._froze:
            gc.freeze()
        gc.set_threshold(self._saved[0], self._saved[1], OUT_OF_REACH)
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
        since = now - self.last_collection
        idle = now - self.last_input >= self.quiet_s
        if not (since >= self.max_gap_s or (idle and since >= self.min_gap_s)):
            return False
        self.collect()
        self.collections += 1
        self.last_collection = self.clock()
        return True
