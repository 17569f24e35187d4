"""The key footer, rebuilt only when the keys it shows change, and fitted to its width.

Textual's ``Footer`` recomposes (a new widget per key: composed, styled, laid out and painted)
whenever its screen's bindings *may* have changed: every focus change, every screen resumed,
every maximise. In the viewer most of those leave the shown keys as they were (``z`` shows the
same keys maximised; closing the help brings back the keys that were there), and the rebuild was
a sizeable part of ``z``'s and ``?``'s time while training (issue 30). Here the shown keys are
compared first, and the footer is rebuilt only when they differ.

Keys that do not fit the footer's width are left out from the end (the keys a user needs first
come first: ``MainScreen.FIRST``), and a last key says so: ``? more`` (``?`` lists every key).
Textual cut the last key at the edge mid-word (``b break``, ``e expo`` at 80 and 100 columns).
The widths are the keys' own, as drawn; the footer is fitted after each compose, resize and
change of its compact style. Nothing else changes in what is composed: with no bindings yet it
composes nothing, as Textual's does, and the ``more`` key comes only with the keys (an earlier
fitted footer that composed a widget of its own there showed no keys in a browser tab, where the
app has no focus: ``tests/views/test_web.py`` checks the footer in a real tab).

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
from textual.widgets._footer import FooterKey  # (Textual exports it from its private module only)

MORE = "more"  # the last key's label when keys were left out


class KeyFooter(Footer):
    """``Footer`` that recomposes only when what it would show differs, and shows the keys that
    fit (see the module docstring)."""

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
        keys = False
        for widget in super().compose():
            keys = True
            yield self._compact_from_the_start(widget)
        if keys:  # (never alone: see the module docstring)
            more = FooterKey("question_mark", "?", MORE, "app.help", tooltip="? lists every key", classes="-more")
            more.display = False
            yield self._compact_from_the_start(more.data_bind(compact=Footer.compact))

    def _compact_from_the_start(self, widget: Widget) -> Widget:
        """A new key (or a group's keys) with the footer's compact style already set: a
        ``FooterKey`` starts compact and takes the footer's style once bound, each change a
        restyle (two for each key of a wide footer at every rebuild: tab's focus changes the keys).
        (The command palette's key is not bound, and stays compact, as Textual makes it; a
        group's keys, which the viewer's bindings have none of, are left as Textual makes them.)"""
        if isinstance(widget, FooterKey):
            compact = True if widget.has_class("-command-palette") else self.compact
            widget.set_reactive(FooterKey.compact, compact)
            widget.set_class(compact, "-compact", update=False)
        return widget

    async def recompose(self) -> None:
        await super().recompose()
        self.fit()  # before the first paint of the new keys, when their styles are there
        self.call_after_refresh(self.fit)

    def on_resize(self) -> None:
        self.fit()

    def watch_compact(self) -> None:
        self.call_after_refresh(self.fit)  # (the keys' own compact style is set after this)

    def watch_show_command_palette(self) -> None:
        self.call_after_refresh(self.fit)

    def fit(self) -> None:
        """Show the keys, in order, that fit beside the command palette's key (when it is
        shown); when some do not, leave them out and show ``? more`` (see the module docstring)."""
        if not self.is_attached or self.size.width <= 0:
            return  # not laid out yet: fitted at its first resize
        keys, more, fixed = [], None, 0
        for child in self.children:
            if isinstance(child, FooterKey) and child.has_class("-more"):
                more = child
            elif isinstance(child, FooterKey) and child.has_class("-command-palette"):
                # (Textual leaves it out at the next compose only: a narrower terminal showed it)
                child.display = self.show_command_palette
                fixed += self._width(child) if child.display else 0
            elif isinstance(child, FooterKey):
                keys.append(child)
            else:  # a group of keys: always shown
                fixed += self._width(child)
        widths = [self._width(key) for key in keys]
        room, shown = self.size.width - fixed, len(keys)
        if sum(widths) > room and more is not None:
            room -= self._width(more)
            used = shown = 0
            while shown < len(keys) and used + widths[shown] <= room:
                used += widths[shown]
                shown += 1
        for i, key in enumerate(keys):
            key.display = i < shown
        if more is not None:
            more.display = shown < len(keys)

    @staticmethod
    def _width(widget: Widget) -> int:
        """Cells ``widget`` takes in the footer's row: its text as drawn, its margins."""
        if isinstance(widget, FooterKey):  # (its size, before the first layout, is 0)
            return widget.render().cell_len + widget.styles.gutter.width + widget.styles.margin.width
        return widget.outer_size.width + widget.styles.margin.width

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
