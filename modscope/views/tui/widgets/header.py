"""The title line, redrawn without laying the screen out again.

Textual's ``Header`` shows the app's title in a ``HeaderTitle`` (a ``Static``) and updates it
with ``Static.update``, which asks for a layout of the whole screen by default. The viewer's
title says the status (``modscope · Net · pausing`` then ``paused``): each change laid out
every widget and repainted all of them, two full-screen layouts between the space key and
"paused" on screen (issue 30). The title's cell is one line as wide as the header whatever it
says (its text is cut with an ellipsis), so a repaint of that line is all a new title needs.
"""

from __future__ import annotations

from collections.abc import Iterator

from textual.visual import VisualType
from textual.widget import Widget
from textual.widgets import Header
from textual.widgets._header import HeaderClockSpace, HeaderIcon, HeaderTitle  # (not exported by Textual)


class TitleLine(HeaderTitle):
    """``HeaderTitle`` whose updates repaint its line only (see the module docstring)."""

    def update(self, content: VisualType = "", *, layout: bool = False) -> None:
        super().update(content, layout=layout)


class ViewerHeader(Header):
    """``Header`` with a ``TitleLine`` and no clock (``Header`` finds its title line by type)."""

    def compose(self) -> Iterator[Widget]:
        yield HeaderIcon().data_bind(Header.icon)
        yield TitleLine()
        yield HeaderClockSpace()
