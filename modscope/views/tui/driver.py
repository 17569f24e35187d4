"""The terminal driver of a TUI on a real terminal: Textual's Linux driver, except that what the
user types once the app is leaving stays in the terminal for the shell.

Textual's driver reads the terminal until the app's very end and then discards what is left
(``termios.tcflush(TCIFLUSH)`` in ``disable_input``, after a last read in its input thread), so
a command typed right after ``q``, while the app stops the training program and restores the
screen (a second or more), was lost. This driver stops reading as soon as the app is leaving
(``ModscopeApp`` stopping its program, or Textual's ``App.exit`` called) and leaves the terminal's
input queue alone: the bytes wait in the kernel's queue, and the shell (or whatever reads the
terminal next) gets them. Reports the terminal sends by itself (mouse, focus) are switched off
at that moment, so none land in the shell.

After a ``q`` the app quits (``ModscopeApp``'s binding) unless a text field has focus (then it
types there): unless one has, the input thread reads nothing more until the app says it leaves,
for up to ``QUIT_WAIT`` seconds (the app may be slow to take the key on a loaded machine); if it
does not leave, reading resumes (those keys come late, not lost).
"""

from __future__ import annotations

import os
import selectors
import signal
import termios
import threading
from codecs import getincrementaldecoder
from typing import Any

from textual import events
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver
from textual.widgets import Input, TextArea

QUIT_WAIT = 3.0  # seconds the input thread waits, after a q, to see whether the app leaves
QUIT_KEYS = frozenset({"q"})


def leaving(app: Any) -> bool:
    """Whether ``app`` has begun to leave: ``ModscopeApp`` stopping its training program after
    ``q`` (``_stopping``), or Textual's ``exit`` called (``_exit``)."""
    return bool(getattr(app, "_stopping", False) or getattr(app, "_exit", False))


class TypeaheadDriver(LinuxDriver):
    """``LinuxDriver`` that leaves what is typed after the app began to leave in the terminal."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.kept_input = threading.Event()  # set once reading stopped for good: nothing to flush

    def _quiet(self) -> None:
        """No more reports from the terminal: mouse and focus events off."""
        self._disable_mouse_support()
        self.write("\x1b[?1004l")
        self.flush()

    def _quits(self) -> bool:
        """Whether the app takes a ``q`` as quit now: no text field has focus (read from this
        thread: a guess the wait below bounds)."""
        try:
            return not isinstance(self._app.focused, (Input, TextArea))
        except Exception:  # noqa: BLE001  (no screen yet, or one being replaced)
            return True

    def _await_leaving(self) -> bool:
        """After a quit key: wait (reading nothing) up to ``QUIT_WAIT`` for the app to leave."""
        if not self._quits():
            return False
        self._quiet()  # a mouse moved while waiting would queue reports for the shell
        waited = 0.0
        while waited < QUIT_WAIT and not self.exit_event.is_set():
            if leaving(self._app):
                return True
            self.exit_event.wait(0.01)
            waited += 0.01
        if leaving(self._app) or self.exit_event.is_set():
            return True
        if self._mouse:
            self._enable_mouse_support()
        self.write("\x1b[?1004h")
        self.flush()
        return False

    def run_input_thread(self) -> None:
        """Textual's input loop (read, parse, post each event), but it stops reading once the
        app is leaving and never reads after that (Textual's reads once more as it ends)."""
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        try:
            while not self.exit_event.is_set():
                if leaving(self._app):
                    if not self.kept_input.is_set():
                        self._quiet()
                        self.kept_input.set()
                    self.exit_event.wait(0.05)
                    continue
                for _key, mask in selector.select(0.1):
                    if not mask & selectors.EVENT_READ:
                        continue
                    # a byte at a time: what follows a q stays in the terminal's queue (a key
                    # thread slow to wake on a loaded machine finds "q" and the next command together)
                    raw = os.read(self.fileno, 1)
                    if not raw:  # stdin is not a terminal and ended
                        break
                    data = decode(raw)  # "" inside a character of several bytes
                    for event in parser.feed(data):
                        self.process_message(event)
                        if isinstance(event, events.Key) and event.key in QUIT_KEYS and self._await_leaving():
                            self.kept_input.set()
                for event in parser.tick():
                    self.process_message(event)
        finally:
            selector.close()
            try:
                for _event in parser.feed(""):
                    pass
            except Exception:  # noqa: BLE001  (an escape sequence cut short at exit: nothing to post)
                pass

    def disable_input(self) -> None:
        """Textual's, without discarding the terminal's input queue when the app is leaving
        (what is there was typed for the shell); decided once the input thread has stopped, as
        the app may leave before that thread has seen it."""
        try:
            if not self.exit_event.is_set():
                signal.signal(signal.SIGWINCH, signal.SIG_DFL)
                self._disable_mouse_support()
                self.exit_event.set()
                if self._key_thread is not None:
                    self._key_thread.join()
                self.exit_event.clear()
                if not (self.kept_input.is_set() or leaving(self._app)):  # suspended, say: as Textual
                    try:
                        termios.tcflush(self.fileno, termios.TCIFLUSH)
                    except termios.error:
                        pass
        except Exception:  # noqa: BLE001  (as Textual's: leaving must not fail)
            pass


def typeahead_driver(app: Any) -> None:
    """Give ``app`` this driver when it would run Textual's Linux driver (a real terminal; not
    headless tests or Windows), and ``DiffWebDriver`` when it would run Textual's web driver (a
    browser tab, ``modscope web``: frames of the cells that changed)."""
    from textual.drivers.web_driver import WebDriver

    from .web_driver import DiffWebDriver

    driver = getattr(app, "driver_class", None)
    if driver is LinuxDriver:
        app.driver_class = TypeaheadDriver
    elif driver is WebDriver:
        app.driver_class = DiffWebDriver
