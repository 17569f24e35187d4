"""The hook firing order of one step as an indented timeline: forward_pre → children → forward,
backward_pre → backward, with the user's own hooks and errors in place. Filters by module
(subtree) and by kind; follows the latest step or stays on a chosen one.

Built on Textual's line API (virtual scrolling): showing a step keeps, per event that passes the
filters, the event and its depth, and measures its width (the horizontal scroll range) without
rendering it; ``render_line`` renders a line the first time it comes on screen, so a step of
thousands of events costs the lines in view, not all of them.
"""

from __future__ import annotations

import time
from typing import Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.events import Click, Resize
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

ARROWS = {"forward_pre": "▶", "forward": "◀", "backward_pre": "▷", "backward": "◁"}
STYLES = {"forward_pre": "green", "forward": "green", "backward_pre": "dodger_blue2", "backward": "dodger_blue2"}
KIND_GROUPS = {"forward": ("forward_pre", "forward"), "backward": ("backward_pre", "backward"), "hooks": ("hook",),
               "errors": ("error",)}
FOLLOW_REDRAW_S = 0.25  # while following a fast run, redraw at most this often
CURSOR = Style(reverse=True, bold=True)  # readable over every event colour
SPLIT = "≠ "  # marks the event where a compared step's firing order parts from this one's


def event_parts(e: dict[str, Any], depth: int) -> tuple[str, str, list[tuple[str, str]]]:
    """An event's line as (head, head style, [(text, style)]): the head's style covers the line."""
    kind = e["kind"]
    pad = "  " * depth
    if kind in ARROWS:
        parts = [(e["path"] or "(root)", "bold")]
        if e["call"]:
            parts.append((f" #{e['call']}", "dim"))
        if kind in ("forward", "backward"):
            parts.append((f"  {e['dur_ns'] / 1e3:.0f}µs", "dim"))
            shapes = [s["shape"] for s in e.get("outputs", e.get("grad_inputs", [])) if s is not None]
            if shapes:
                parts.append((f"  {'×'.join(map(str, shapes[0]))}", "dim cyan"))
        return f"{pad}{ARROWS[kind]} {kind:<12} ", STYLES[kind], parts
    if kind == "hook":
        parts = [(f"  {e['hook_kind']} hook on {e['target'] or '(root)'}", "dim")]
        if e["replaced"]:
            parts.append(("  replaced value", "bold magenta"))
        return f"{pad}  • {e['qualname']}", "magenta", parts
    return f"{pad}  ✖ {e['etype']}: {e['message'][:160]}", "bold red", []


def event_line(e: dict[str, Any], depth: int) -> Text:
    head, style, parts = event_parts(e, depth)
    text = Text(head, style=style)
    for part, part_style in parts:
        text.append(part, style=part_style)
    return text


def event_width(e: dict[str, Any], depth: int) -> int:
    """Cells ``event_line`` takes, without building it."""
    head, _, parts = event_parts(e, depth)
    return cell_len(head) + sum(cell_len(part) for part, _ in parts)


def within(path: str | None, prefix: str) -> bool:
    return prefix == "" or path == prefix or (path or "").startswith(prefix + ".")


class HookTimeline(ScrollView, can_focus=True):
    """One line per event; moving the cursor (keys or mouse) selects its module elsewhere."""

    DEFAULT_CSS = """
    HookTimeline { border: round $primary 60%; height: 1fr; }
    HookTimeline:focus { border: round $accent; }
    """
    BINDINGS = [
        Binding("up", "cursor(-1)", show=False), Binding("down", "cursor(1)", show=False),
        Binding("pageup", "page(-1)", show=False), Binding("pagedown", "page(1)", show=False),
        Binding("home", "jump(0)", show=False), Binding("end", "jump(-1)", show=False),
    ]

    class Selected(Message):
        def __init__(self, path: str) -> None:
            self.path = path
            super().__init__()

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.border_title = "Hook firing order"
        self.follow = True
        self.step: int | None = None
        self.module_filter = ""
        self.kinds: set[str] = {k for group in KIND_GROUPS.values() for k in group}
        self.cursor = 0
        self._rows: list[tuple[dict[str, Any], int]] = []  # (event, depth) per line shown
        self._strips: dict[int, Strip] = {}  # lines rendered so far (those that came on screen)
        self._paths: list[str | None] = []
        self.lines_rendered = 0  # lines rendered so far (the tests count them)
        self._shown: tuple | None = None
        self._drawn_at = 0.0
        self._deferred: tuple | None = None  # the newest content a throttled redraw left out
        self._deferred_timer: Any = None
        self.split_seq: int | None = None  # a comparison's split event (``d``): marked with SPLIT
        self.compare_note = ""  # a comparison's word on the order: a tag in the title, the detail in the subtitle

    @property
    def line_count(self) -> int:
        return len(self._rows)

    # --- content ------------------------------------------------------------------------------

    def render_step(self, step: int, events: list[dict[str, Any]], overflow: int, steps: list[int]) -> None:
        key = (step, len(events), self.module_filter, frozenset(self.kinds), self.follow, self.split_seq,
               self.compare_note)
        if key == self._shown:
            return
        now = time.monotonic()
        if self.follow and self._shown is not None and self._shown[2:] == key[2:] and \
                now - self._drawn_at < FOLLOW_REDRAW_S:
            # A fast run: the eye cannot follow more redraws than this anyway. The newest content
            # is drawn when the interval is over, also when nothing comes after it (training
            # paused at a breakpoint must show the step it paused in, not one drawn before).
            self._deferred = (step, events, overflow, steps)
            if self._deferred_timer is None:
                self._deferred_timer = self.set_timer(FOLLOW_REDRAW_S - (now - self._drawn_at), self._draw_deferred)
            return
        self._deferred = None
        self._shown, self._drawn_at = key, now
        rows, paths, depth, width = [], [], 0, 0
        for e in events:
            kind = e["kind"]
            if kind in ("forward", "backward"):
                depth = max(depth - 1, 0)
            target = e.get("path", e.get("target", e.get("module")))
            if kind in self.kinds and within(target, self.module_filter):
                rows.append((e, depth))
                paths.append(target if target != "*" else None)
                width = max(width, event_width(e, depth) + (len(SPLIT) if e["seq"] == self.split_seq else 0))
            if kind in ("forward_pre", "backward_pre"):
                depth += 1
        self._rows, self._paths, self._strips = rows, paths, {}
        self.virtual_size = Size(width, len(rows))
        self.cursor = len(rows) - 1 if self.follow else min(self.cursor, max(len(rows) - 1, 0))
        self._scroll_to_cursor()
        # and again once the new size is laid out: until then the scroll range is the old one,
        # and the cursor could stay out of view (how far depended on which came first)
        self.call_after_refresh(self._scroll_to_cursor)
        self.refresh()
        mode = "following" if self.follow else "paused"
        shown = f"{len(rows)}/{len(events)} events" + (f", {overflow} not kept" if overflow else "")
        span = f"steps {steps[0]}–{steps[-1]} kept" if steps else ""
        tag, _, detail = self.compare_note.partition(": ")
        # the tag before the mode: a narrow pane cuts the title's end
        self.border_title = f"Hook firing order · step {step}" + (f" · {tag}" if tag else "") + f" · {mode}"
        self.border_subtitle = " · ".join(x for x in (detail, shown, self._filter_text(), span) if x)

    def set_compare(self, split_seq: int | None, note: str) -> bool:
        """Mark the event whose ``seq`` is ``split_seq`` and show ``note`` (``tag: detail``: the
        tag in the title, the detail in the subtitle) for a comparison; ``None, ""`` clears it.
        True when that changed: the step is to be drawn again."""
        if (split_seq, note) == (self.split_seq, self.compare_note):
            return False
        self.split_seq, self.compare_note = split_seq, note
        return True

    def _draw_deferred(self) -> None:
        self._deferred_timer = None
        deferred, self._deferred = self._deferred, None
        if deferred is not None and self.follow:
            self.step = deferred[0]
            self.render_step(*deferred)

    def _filter_text(self) -> str:
        parts = []
        if self.module_filter:
            parts.append(f"module {self.module_filter}")
        hidden = [g for g, kinds in KIND_GROUPS.items() if not set(kinds) <= self.kinds]
        if hidden:
            parts.append("hiding " + ",".join(hidden))
        return " ".join(parts)

    def toggle_kind(self, group: str) -> None:
        kinds = set(KIND_GROUPS[group])
        self.kinds = self.kinds - kinds if kinds <= self.kinds else self.kinds | kinds

    # --- drawing ------------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        if index >= len(self._rows):
            return Strip.blank(width, self.rich_style)
        strip = self._strip(index).crop(scroll_x, scroll_x + width).extend_cell_length(width)
        if index == self.cursor:
            strip = Strip(Segment.apply_style(strip, CURSOR), strip.cell_length)
        return strip

    def _strip(self, index: int) -> Strip:
        """Line ``index`` rendered, the first time it is drawn."""
        strip = self._strips.get(index)
        if strip is None:
            event, depth = self._rows[index]
            text = event_line(event, depth)
            if self.split_seq is not None and event["seq"] == self.split_seq:
                text = Text(SPLIT, style="bold white on red") + text
            strip = self._strips[index] = Strip(list(text.render(self.app.console)), text.cell_len)
            self.lines_rendered += 1
        return strip

    # --- cursor -------------------------------------------------------------------------------

    def _move(self, index: int) -> None:
        if not self._rows:
            return
        old, self.cursor = self.cursor, max(0, min(index, len(self._rows) - 1))
        self._scroll_to_cursor()
        self.refresh_line(old - self.scroll_offset.y)
        self.refresh_line(self.cursor - self.scroll_offset.y)
        if self.has_focus and self._paths[self.cursor] is not None:
            self.post_message(self.Selected(self._paths[self.cursor]))

    def _scroll_to_cursor(self) -> None:
        self.scroll_to_region(Region(0, self.cursor, 1, 1), animate=False, immediate=True)

    def on_resize(self, event: Resize) -> None:
        # A step drawn before the pane had its size could not be scrolled to its cursor (the
        # last event, when following): whether it was depended on which came first, the step
        # or the layout. Scrolling again at each new size keeps the cursor in view either way.
        if self._rows:
            self._scroll_to_cursor()

    def action_cursor(self, delta: int) -> None:
        self._move(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self._move(self.cursor + direction * max(self.scrollable_content_region.height - 1, 1))

    def action_jump(self, where: int) -> None:
        self._move(0 if where == 0 else len(self._rows) - 1)

    def on_click(self, event: Click) -> None:
        self.focus()
        self._move(self.scroll_offset.y + event.y)
