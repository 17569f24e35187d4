"""The key footer, rebuilt only when the keys it shows change.

Textual's ``Footer`` recomposes (a new widget per key: composed, styled, laid out and painted)
whenever its screen's bindings *may* have changed: every focus change, every screen resumed,
every maximise. In the viewer most of those leave the shown keys as they were (``z`` shows the
same keys maximised; closing the help brings back the keys that were there), and the rebuild was
a sizeable part of ``z``'s and ``?``'s time while training (issue 30). Here the shown keys are
compared first, and the footer is rebuilt only when they differ.

A footer whose screen is covered by a dialog is not rebuilt at all: it shows, dimmed behind the
dialog, the keys it showed when the dialog opened (as the views there show their values of that
moment, ``screens.Dialog``); when the dialog closes, the screen's bindings are refreshed
(Textual does it on resume) and the footer is compared again then.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer


class KeyFooter(Footer):
    """``Footer`` that recomposes only when what it would show differs (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shown: tuple | None = None  # the keys of the last compose (None: not composed with keys)
        self.rebuilds = 0  # times the keys were composed (the tests count them)

    def shown_keys(self) -> tuple | None:
        """What ``compose`` would show now: every shown binding's key, label, action, state and
        group, and the command palette's key; None before the bindings are ready."""
        if not self._bindings_ready:
            return None
        app = self.app
        keys = tuple((b.key, app.get_key_display(b), b.description, b.action, enabled, tooltip,
                      b.group.description if b.group is not None else None, b.group.compact if b.group else None)
                     for _, b, enabled, tooltip in self.screen.active_bindings.values() if b.show)
        return keys, self.show_command_palette and app.ENABLE_COMMAND_PALETTE

    def compose(self) -> Iterator[Widget]:
        self._shown = self.shown_keys()
        if self._shown is not None:
            self.rebuilds += 1
        yield from super().compose()

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen:
            return
        if screen is not self.app.screen:
            return  # covered by a dialog: compared again when its screen is resumed
        self.call_after_refresh(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        if self.is_attached and self.screen is self.app.screen and self.shown_keys() != self._shown:
            await self.recompose()
