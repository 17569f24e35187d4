"""Keys first: from a key press until its screen is painted, the viewer's background work waits.

The viewer's UI thread answers keys, and the same thread redraws live values (metrics, norms,
timings, the followed timeline) and runs the full garbage collections the policy schedules
(``gc_policy``); the source's thread folds the program's events under the same interpreter lock.
A key pressed while any of these runs waited for it: on the 2-core machine, while the demo
trained, a live redraw (tens of ms of the UI thread), a full collection (~100 ms) or a few
folding slices (each a switch interval of the lock) sat between many keys and their screens.

So a key opens a *window* (``KEYS.press``), closed when the screen has been refreshed after the
key was handled (``KEYS.painted``, from ``App.call_after_refresh``) or after ``WINDOW_S``
seconds at most (a key whose effect is not painted at once: the window cannot hold the rest up).
While it is open:

* live values wait for a later tick (``ModscopeApp._hold_live``): a key's own change still shows
  at once (keys force what they change);
* no full collection starts (``ModscopeApp.refresh_views``);
* the folding thread sleeps between slices (``sources.fold``): what the program sends waits in
  the socket, then is folded; the program never waits for it (its own queue is bounded and
  counts what it drops), and the window is short.

Which way round: the viewer yields, not the training. Lowering the training process's priority
(``os.nice`` in the child) would make training lose the CPU to every other process on a shared
machine, not only to the viewer, and a user cannot raise the viewer's own. The viewer's
background work is what can wait: it is the viewer's, it catches up in bounded slices, and its
backlog is bounded and counted (``sources.FOLD_BUDGET``). The one exception is the demo
(``launch.DEMO_NICE``): its training is there to be looked at and has no speed to keep, so it
runs at a lower priority; a user's program never does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

WINDOW_S = 0.15  # at most this long after a key (its screen is usually painted well before)


class KeyWindow:
    """See the module docstring. ``clock`` is injectable for the tests."""

    def __init__(self, window_s: float = WINDOW_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s, self.clock = window_s, clock
        self._until = 0.0
        self._closed = threading.Event()
        self._closed.set()

    def press(self) -> None:
        """A key arrived: open the window (for ``window_s`` at most)."""
        self._until = self.clock() + self.window_s
        self._closed.clear()

    def painted(self) -> None:
        """The screen was refreshed after the key was handled: close the window."""
        self._until = 0.0
        self._closed.set()

    @property
    def open(self) -> bool:
        if self._closed.is_set():
            return False
        if self.clock() >= self._until:
            self._closed.set()
            return False
        return True

    def wait(self) -> None:
        """On a background thread: return once the window is closed (at once when it is)."""
        while self.open:
            self._closed.wait(max(0.0, self._until - self.clock()))


KEYS = KeyWindow()  # the process's: one viewer app runs in a process
